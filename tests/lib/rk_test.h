/* Fixtures shared by the cmocka unit tests (tests/unit/test_*.c): size units, deterministic fill
 * patterns, raid geometry and in-memory members, shadow buffers, and a member wrapper that fails
 * on demand. Header-only (static inline): every C file in tests/lib is its own helper program, so
 * shared test code cannot live in a .c file there. Every helper fails the running test through
 * cmocka's assertions instead of returning an error. */
#ifndef RK_TEST_H
#define RK_TEST_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raidkit/device.h"
#include "raidkit/raid.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

/* ---- fill patterns (the same seed always gives the same bytes) ---- */

/* One step of xorshift64 (13, 7, 17) on *s (never 0); returns the new state. */
static inline uint64_t rk_test_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Fill n bytes at p with bits 11..18 of one xorshift64 step per byte, from state seed (not 0). */
static inline void rk_test_fill_xorshift(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(rk_test_xorshift(&seed) >> 11);
}

/* Fill len bytes at p with one whole xorshift64 step per 8 bytes (host byte order, the last
 * piece cut short), from state seed (not 0): the fast fill for large buffers. */
static inline void rk_test_fill64(void *p, uint64_t len, uint64_t seed)
{
    uint8_t *b = p;
    for (uint64_t i = 0; i < len; i += 8) {
        uint64_t v = rk_test_xorshift(&seed);
        memcpy(b + i, &v, len - i < 8 ? len - i : 8);
    }
}

/* Fill len bytes at p with one rand_r(seed) per byte; advances the caller's *seed, so the test's
 * later random choices depend on how much it filled. */
static inline void rk_test_fill_rand_r(unsigned char *p, uint64_t len, unsigned *seed)
{
    for (uint64_t i = 0; i < len; i++)
        p[i] = (unsigned char)rand_r(seed);
}

/* ---- arrays over in-memory members ---- */

/* Set level, member count n, chunk and data_offset (bytes) of *g, and every member's data_size
 * to data_size bytes. The other fields of *g are left as they are. */
static inline void rk_test_geom(struct rk_raid_geom *g, int level, uint32_t n, uint32_t chunk,
                                uint64_t data_offset, uint64_t data_size)
{
    g->level = level;
    g->members = n;
    g->chunk = chunk;
    g->data_offset = data_offset;
    for (uint32_t i = 0; i < n; i++)
        g->data_size[i] = data_size;
}

/* Open n zero-filled rk_mem devices of size bytes and block size bs into m[0..n-1] (owned by the
 * caller: rk_test_close_members). */
static inline void rk_test_mem_members(struct rk_dev **m, uint32_t n, uint64_t size, uint32_t bs)
{
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(rk_mem_open(size, bs, &m[i]), 0);
}

/* Close m[0..n-1] (NULL entries are skipped by rk_dev_close). */
static inline void rk_test_close_members(struct rk_dev **m, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        rk_dev_close(m[i]);
}

/* The raid5/raid6 arrays of the partial parity log tests (tests/unit/test_ppl*.c): 16 KiB
 * chunks, 1 MiB of data per member at 1 MiB, the log region [512 KiB, 1 MiB). */
#define RK_TEST_PPL_CHUNK (16u * 1024u)
#define RK_TEST_PPL_DOFF  (1024u * 1024u)
#define RK_TEST_PPL_DSIZE (1024u * 1024u)
#define RK_TEST_PPL_LOFF  (512u * 1024u)
#define RK_TEST_PPL_LSIZE (512u * 1024u)

/* Open level over mem[0..n-1] but the slots in absent (bit i: slot i missing) into *raid, with
 * the log of generation id, and start its log with mode (RK_LOG_*): rk_raid_log_start's result
 * (the device is open either way: rk_dev_close it). */
static inline int rk_test_ppl_open(int level, uint32_t n, struct rk_dev **mem, uint32_t absent,
                                   uint64_t id, int mode, struct rk_dev **raid)
{
    struct rk_raid_geom g = {
        .ppl_offset = RK_TEST_PPL_LOFF, .ppl_size = RK_TEST_PPL_LSIZE, .ppl_id = id};
    struct rk_dev *m[RK_MAX_MEMBERS] = {0};
    rk_test_geom(&g, level, n, RK_TEST_PPL_CHUNK, RK_TEST_PPL_DOFF, RK_TEST_PPL_DSIZE);
    for (uint32_t i = 0; i < n; i++)
        m[i] = (absent & (1u << i)) ? NULL : mem[i];
    assert_int_equal(rk_raid_open(&g, m, NULL, raid), 0);
    return rk_raid_log_start(*raid, mode);
}

/* A zeroed shadow of size bytes (fresh mem members read back as zeros); free() it. */
static inline uint8_t *rk_test_zero_shadow(uint64_t size)
{
    uint8_t *s = calloc(1, size);
    assert_non_null(s);
    return s;
}

/* Write a rk_test_fill_xorshift(seed) pattern over all of dev and return it as the shadow
 * (dev->size bytes, free() it). */
static inline uint8_t *rk_test_pattern_shadow(struct rk_dev *dev, uint64_t seed)
{
    uint8_t *s = malloc(dev->size);
    assert_non_null(s);
    rk_test_fill_xorshift(s, dev->size, seed);
    assert_int_equal(rk_dev_write(dev, s, dev->size, 0, 0), 0);
    return s;
}

/* ---- member wrappers ---- */

/* A device with ops and priv (both owned by the caller's close op) that stands for inner: same
 * size and block size, opt_io_size left at rk_dev_alloc's default. name is copied. */
static inline struct rk_dev *rk_test_wrap(const struct rk_dev_ops *ops, void *priv,
                                          const struct rk_dev *inner, const char *name)
{
    struct rk_dev *dev = rk_dev_alloc(ops, priv, name);
    assert_non_null(dev);
    dev->size = inner->size;
    dev->block_size = inner->block_size;
    return dev;
}

/* A failing member: forwards to a mem device (inner, owned), with switchable errors. Tests build
 * their own rk_dev_ops from the rk_test_bad_* functions below (priv = struct rk_test_bad). */
struct rk_test_bad {
    struct rk_dev *inner;
    _Atomic int fail_writes; /* every write/zeroes/discard fails with EIO */
    _Atomic int fail_flush;
    /* Reads touching [bad_lo, bad_hi) fail, like unreadable sectors; a write over the range
     * heals it (the disk remaps the sectors). */
    _Atomic uint64_t bad_lo, bad_hi;
    _Atomic int reads, writes, fua_writes, discards; /* calls seen */
};

static inline int rk_test_bad_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct rk_test_bad *b = dev->priv;
    b->reads++;
    if (off < b->bad_hi && off + len > b->bad_lo)
        return -EIO;
    return rk_dev_read(b->inner, buf, len, off);
}

/* A write covering the whole unreadable range heals it. */
static inline void rk_test_bad_heal(struct rk_test_bad *b, uint64_t len, uint64_t off)
{
    if (off <= b->bad_lo && off + len >= b->bad_hi)
        b->bad_lo = b->bad_hi = 0;
}

static inline int rk_test_bad_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                                    uint32_t flags)
{
    struct rk_test_bad *b = dev->priv;
    b->writes++;
    b->fua_writes += (flags & RK_WRITE_FUA) != 0;
    if (b->fail_writes)
        return -EIO;
    rk_test_bad_heal(b, len, off);
    return rk_dev_write(b->inner, buf, len, off, flags);
}

static inline int rk_test_bad_flush(struct rk_dev *dev)
{
    struct rk_test_bad *b = dev->priv;
    return b->fail_flush ? -EIO : rk_dev_flush(b->inner);
}

static inline int rk_test_bad_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct rk_test_bad *b = dev->priv;
    b->discards++;
    return b->fail_writes ? -EIO : rk_dev_discard(b->inner, len, off);
}

static inline int rk_test_bad_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off,
                                           uint32_t flags)
{
    struct rk_test_bad *b = dev->priv;
    b->writes++;
    if (b->fail_writes)
        return -EIO;
    rk_test_bad_heal(b, len, off);
    return rk_dev_write_zeroes(b->inner, len, off, flags);
}

static inline void rk_test_bad_close(struct rk_dev *dev)
{
    struct rk_test_bad *b = dev->priv;
    rk_dev_close(b->inner);
    free(b);
}

/* A failing member of size bytes (block size 512) over a fresh mem device, with the caller's
 * ops (built from the functions above); rk_dev_close frees it through ops->close. */
static inline struct rk_dev *rk_test_bad_open(const struct rk_dev_ops *ops, uint64_t size)
{
    struct rk_test_bad *b = calloc(1, sizeof(*b));
    assert_non_null(b);
    assert_int_equal(rk_mem_open(size, 512, &b->inner), 0);
    return rk_test_wrap(ops, b, b->inner, "bad");
}

/* The ops of a failing member with every operation (tests that need a member without discard
 * or write-zeroes build their own table). */
__attribute__((unused)) static const struct rk_dev_ops rk_test_bad_ops = {
    .kind = "bad",
    .read = rk_test_bad_read,
    .write = rk_test_bad_write,
    .flush = rk_test_bad_flush,
    .discard = rk_test_bad_discard,
    .write_zeroes = rk_test_bad_write_zeroes,
    .close = rk_test_bad_close,
};

#endif
