/* What a dirty start reads from the partial parity log before it trusts a degraded array
 * (src/raid/raid5_ppl_replay.c r5_ppl_start; docs/FORMAT.md "Update protocol", "Replay").
 *
 * RK_LOG_CHECK, the read-only open's check: accepted (0) only when no entry is live on a
 * readable member, every readable member's log region was read and no block of it was
 * untrusted; it writes nothing. Every write in flight at a crash has a live entry on each
 * readable parity member of its stripe (a stripe with no parity member left needs no
 * reconstruction), so the accepted cases are those where no stripe can be torn.
 *
 * RK_LOG_REPLAY, the writable open: a member whose log region cannot be read holds entries that
 * may be live; with a member missing the replay is refused before anything is written, as it is
 * for a corrupt head (test_ppl_stale.c), unless forced. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "raid/parity.h"
#include "raid/raid5_ppl.h"
#include "raidkit/device.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define CHUNK  RK_TEST_PPL_CHUNK
#define DOFF   RK_TEST_PPL_DOFF
#define DSIZE  RK_TEST_PPL_DSIZE
#define LOFF   RK_TEST_PPL_LOFF
#define LSIZE  RK_TEST_PPL_LSIZE
#define MSIZE  (DOFF + DSIZE)
#define LOG_ID 83u
#define BLK    4096u

/* Members' images, to prove a check wrote nothing. */
struct snap {
    uint32_t n;
    uint8_t *img[RK_MAX_MEMBERS];
};

static void snap_take(struct snap *s, struct rk_dev **mem, uint32_t n)
{
    s->n = n;
    for (uint32_t i = 0; i < n; i++) {
        s->img[i] = rk_buf_alloc(MSIZE);
        assert_non_null(s->img[i]);
        assert_int_equal(rk_dev_read(mem[i], s->img[i], MSIZE, 0), 0);
    }
}

static void snap_same(const struct snap *s, struct rk_dev **mem)
{
    uint8_t *now = rk_buf_alloc(MSIZE);
    assert_non_null(now);
    for (uint32_t i = 0; i < s->n; i++) {
        assert_int_equal(rk_dev_read(mem[i], now, MSIZE, 0), 0);
        assert_memory_equal(now, s->img[i], MSIZE);
    }
    free(now);
}

static void snap_free(struct snap *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        free(s->img[i]);
}

/* Open level over mem[0..n-1] without the slots in absent, start its log with mode and close
 * it again: rk_raid_log_start's result. */
static int start(int level, uint32_t n, struct rk_dev **mem, uint32_t absent, int mode)
{
    struct rk_dev *raid;
    int r = rk_test_ppl_open(level, n, mem, absent, LOG_ID, mode, &raid);
    rk_dev_close(raid);
    return r;
}

/* The whole array written with pattern seed and flushed (every entry retired); returns the
 * shadow of its content (free it). */
static uint8_t *fill(int level, uint32_t n, struct rk_dev **mem, uint64_t seed)
{
    struct rk_dev *raid;
    assert_int_equal(rk_test_ppl_open(level, n, mem, 0, LOG_ID, 0, &raid), 0);
    uint8_t *shadow = rk_test_pattern_shadow(raid, seed);
    assert_int_equal(rk_dev_flush(raid), 0);
    rk_dev_close(raid);
    return shadow;
}

/* One 4 KiB write at array offset off (flags), then the array is dropped without a flush (a
 * crash: nothing retires what a FLUSH would have). Every member is there (a dirty restart). */
static void write_crash(int level, uint32_t n, struct rk_dev **mem, uint8_t *shadow, uint64_t off,
                        uint32_t flags, uint64_t seed)
{
    struct rk_dev *raid;
    assert_int_equal(rk_test_ppl_open(level, n, mem, 0, LOG_ID, RK_LOG_REPLAY, &raid), 0);
    rk_test_fill64(shadow + off, BLK, seed);
    assert_int_equal(rk_dev_write(raid, shadow + off, BLK, off, flags), 0);
    rk_dev_close(raid);
}

/* n fresh members of level, filled (seed) and flushed, then a 4 KiB write into D0 of stripe 0
 * (seed + 1) left in flight by a crash; returns the shadow of the array (free it). */
static uint8_t *crashed(int level, uint32_t n, struct rk_dev **mem, uint64_t seed)
{
    rk_test_mem_members(mem, n, MSIZE, 4096);
    uint8_t *shadow = fill(level, n, mem, seed);
    write_crash(level, n, mem, shadow, 0, 0, seed + 1);
    return shadow;
}

/*
 * raid5 over 3 (stripe 0: D0 slot 0, D1 slot 1, P slot 2). A write into D0 left in flight: its
 * entry is live on slot 2. Without slot 1 the check refuses (D1 would be rebuilt from a parity
 * the write may have torn), writing nothing; without slot 2 (the only parity member, its entry
 * with it) nothing needs rebuilding and the check accepts. After a FLUSH, or when the write was
 * FUA, nothing is live: accepted without slot 1 too.
 */
static void test_check_raid5(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS];
    struct snap s;
    uint8_t *shadow = crashed(RK_LEVEL_RAID5, 3, mem, 11);
    snap_take(&s, mem, 3);
    assert_int_equal(start(RK_LEVEL_RAID5, 3, mem, 1u << 1, RK_LOG_CHECK), -EUCLEAN);
    assert_int_equal(start(RK_LEVEL_RAID5, 3, mem, 1u << 2, RK_LOG_CHECK), 0);
    snap_same(&s, mem);
    snap_free(&s);

    /* A FLUSH retires it (the dirty restart replays it first, then the log restarts empty). */
    struct rk_dev *raid;
    assert_int_equal(rk_test_ppl_open(RK_LEVEL_RAID5, 3, mem, 0, LOG_ID, RK_LOG_REPLAY, &raid), 0);
    rk_test_fill64(shadow, BLK, 13);
    assert_int_equal(rk_dev_write(raid, shadow, BLK, 0, 0), 0);
    assert_int_equal(rk_dev_flush(raid), 0);
    rk_dev_close(raid);
    assert_int_equal(start(RK_LEVEL_RAID5, 3, mem, 1u << 1, RK_LOG_CHECK), 0);

    /* A FUA write retires at its completion. */
    write_crash(RK_LEVEL_RAID5, 3, mem, shadow, 0, RK_WRITE_FUA, 14);
    assert_int_equal(start(RK_LEVEL_RAID5, 3, mem, 1u << 1, RK_LOG_CHECK), 0);
    assert_int_equal(rk_test_ppl_open(RK_LEVEL_RAID5, 3, mem, 1u << 1, LOG_ID, RK_LOG_CHECK, &raid),
                     0);
    uint8_t *got = rk_buf_alloc(2 * CHUNK);
    assert_int_equal(rk_dev_read(raid, got, 2 * CHUNK, 0), 0);
    assert_memory_equal(got, shadow, 2 * CHUNK); /* D1 rebuilt from a parity that matches */
    rk_dev_close(raid);
    free(got);
    free(shadow);
    rk_test_close_members(mem, 3);
}

/*
 * raid6 over 4 (stripe 0: Q slot 0, D0 slot 1, D1 slot 2, P slot 3). A write into D0 left in
 * flight has its entry on slot 3 (PP) and slot 0 (PQ): without P's member and D1, Q's entry
 * is still read and the check refuses; without both parity members nothing needs rebuilding.
 */
static void test_check_raid6(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS];
    struct snap s;
    uint8_t *shadow = crashed(RK_LEVEL_RAID6, 4, mem, 21);
    snap_take(&s, mem, 4);
    assert_int_equal(start(RK_LEVEL_RAID6, 4, mem, 1u << 3 | 1u << 2, RK_LOG_CHECK), -EUCLEAN);
    assert_int_equal(start(RK_LEVEL_RAID6, 4, mem, 1u << 0 | 1u << 2, RK_LOG_CHECK), -EUCLEAN);
    assert_int_equal(start(RK_LEVEL_RAID6, 4, mem, 1u << 2, RK_LOG_CHECK), -EUCLEAN);
    assert_int_equal(start(RK_LEVEL_RAID6, 4, mem, 1u << 0 | 1u << 3, RK_LOG_CHECK), 0);
    snap_same(&s, mem);
    snap_free(&s);
    free(shadow);
    rk_test_close_members(mem, 4);
}

/* Slot 2's log with no live entry but a block that is not trusted: a corrupt entry (bad
 * checksum: it could have been a live one) or a corrupt head (no retirement point). */
static void test_check_untrusted(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS];
    rk_test_mem_members(mem, 3, MSIZE, 4096);
    free(fill(RK_LEVEL_RAID5, 3, mem, 31));
    assert_int_equal(start(RK_LEVEL_RAID5, 3, mem, 1u << 1, RK_LOG_CHECK), 0);

    uint8_t *blk = rk_buf_alloc(2 * BLK), *head = rk_buf_alloc(BLK);
    assert_int_equal(rk_dev_read(mem[2], head, BLK, LOFF), 0);
    struct rk_ppl_entry e = {.id = LOG_ID, .seq = 1u << 30, .row = 0, .lo = 0, .len = BLK};
    e.flags = RK_PPL_HAS_P;
    e.nranges = 1;
    e.r[0] = (struct rk_ppl_range){0, 0, BLK};
    memset(blk, 0x5a, 2 * BLK);
    rk_ppl_entry_encode(&e, blk, blk + BLK);
    blk[100] ^= 1; /* its checksum no longer matches */
    assert_int_equal(rk_dev_write(mem[2], blk, 2 * BLK, LOFF + 64 * BLK, 0), 0);
    assert_int_equal(start(RK_LEVEL_RAID5, 3, mem, 1u << 1, RK_LOG_CHECK), -EBADMSG);
    blk[100] ^= 1;
    memset(blk, 0, 2 * BLK);
    assert_int_equal(rk_dev_write(mem[2], blk, 2 * BLK, LOFF + 64 * BLK, 0), 0);
    assert_int_equal(start(RK_LEVEL_RAID5, 3, mem, 1u << 1, RK_LOG_CHECK), 0);

    head[200] ^= 1;
    assert_int_equal(rk_dev_write(mem[2], head, BLK, LOFF, 0), 0);
    assert_int_equal(start(RK_LEVEL_RAID5, 3, mem, 1u << 1, RK_LOG_CHECK), -EBADMSG);
    free(blk);
    free(head);
    rk_test_close_members(mem, 3);
}

/* raid5 over 3 after crashed(): slot 2's parity of stripe 0 [0, 4K) put back to what the data
 * before the write gives (the write's parity write did not reach slot 2); oldp gets it. */
static void torn_parity(struct rk_dev **mem, const uint8_t *shadow, uint8_t *oldp)
{
    uint8_t *d0 = rk_buf_alloc(BLK);
    assert_int_equal(rk_dev_read(mem[0], d0, BLK, DOFF), 0);
    assert_memory_equal(d0, shadow, BLK); /* the write's data reached D0 */
    assert_int_equal(rk_dev_read(mem[2], oldp, BLK, DOFF), 0);
    rk_parity_xor_into(BLK, oldp, d0);  /* P ^ D0 new = D1 */
    rk_test_fill_xorshift(d0, BLK, 41); /* D0 as the fill wrote it (its first 4 KiB) */
    rk_parity_xor_into(BLK, oldp, d0);
    assert_int_equal(rk_dev_write(mem[2], oldp, BLK, DOFF, 0), 0);
    free(d0);
}

/*
 * raid5 over 3, a write into D0 left in flight whose parity write did not reach slot 2 (its old
 * parity put back): the case the log exists for. Slot 2's log region cannot be read (a read
 * error in its head). Without slot 1 the check refuses; so must the replay, before it writes
 * anything: without slot 2's entry it would keep the torn parity and rebuild D1 from it. With
 * --force it starts (and D1 is what the torn parity gives); with the log readable the replay
 * proves the stripe and D1 reads back.
 */
static void test_replay_unreadable_log(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS], *m[RK_MAX_MEMBERS], *f = NULL;
    struct snap s;
    uint8_t *oldp = rk_buf_alloc(BLK), *shadow = crashed(RK_LEVEL_RAID5, 3, mem, 41);
    torn_parity(mem, shadow, oldp);

    assert_int_equal(rk_fault_open(mem[2], false, &f), 0);
    assert_int_equal(rk_fault_add_range(f, RK_FAULT_READ, LOFF, BLK), 0);
    m[0] = mem[0];
    m[1] = mem[1];
    m[2] = f;
    snap_take(&s, mem, 3);
    assert_int_equal(start(RK_LEVEL_RAID5, 3, m, 1u << 1, RK_LOG_CHECK), -EBADMSG);
    assert_int_equal(start(RK_LEVEL_RAID5, 3, m, 1u << 1, RK_LOG_REPLAY), -EUCLEAN);
    snap_same(&s, mem);
    /* Every member there: the stripes it logged are resynced from the data (not here). */
    struct rk_dev *raid;
    assert_int_equal(rk_test_ppl_open(RK_LEVEL_RAID5, 3, m, 1u << 1, LOG_ID,
                                      RK_LOG_REPLAY | RK_LOG_FORCE, &raid),
                     0);
    rk_dev_close(raid);
    rk_dev_close(f);
    snap_free(&s);

    /* The same crash with slot 2's log readable: replayed, D1 reads back. */
    free(shadow);
    rk_test_close_members(mem, 3);
    shadow = crashed(RK_LEVEL_RAID5, 3, mem, 41);
    torn_parity(mem, shadow, oldp);
    assert_int_equal(
        rk_test_ppl_open(RK_LEVEL_RAID5, 3, mem, 1u << 1, LOG_ID, RK_LOG_REPLAY, &raid), 0);
    uint8_t *got = rk_buf_alloc(2 * CHUNK);
    assert_int_equal(rk_dev_read(raid, got, 2 * CHUNK, 0), 0);
    assert_memory_equal(got + CHUNK, shadow + CHUNK, CHUNK);
    rk_dev_close(raid);
    free(got);
    free(oldp);
    free(shadow);
    rk_test_close_members(mem, 3);
}

/*
 * A read-only start of a complete dirty array serves, but the check's verdict stays: a write
 * into D0 of stripe 0 left in flight (its entry live on slot 2), then slot 1 fails. Stripe 0's
 * D1 would be rebuilt from a parity the write may have torn: -EIO, not garbage. The other
 * stripes' chunks on slot 1 rebuild from their parity, which no live entry names, and read
 * back as written.
 */
static void test_check_suspect_reads(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    uint8_t *shadow = crashed(RK_LEVEL_RAID5, 3, mem, 41);
    assert_int_equal(rk_test_ppl_open(RK_LEVEL_RAID5, 3, mem, 0, LOG_ID, RK_LOG_CHECK, &raid),
                     -EUCLEAN);
    uint64_t rows = 4, len = rows * 2 * CHUNK;
    uint8_t *got = rk_buf_alloc(len);
    assert_int_equal(rk_dev_read(raid, got, len, 0), 0); /* every member there */
    assert_memory_equal(got, shadow, len);
    assert_int_equal(rk_raid_fail_slot(raid, 1), 0);
    assert_int_equal(rk_dev_read(raid, got, 2 * CHUNK, 0), -EIO); /* stripe 0 needs parity */
    assert_int_equal(rk_dev_read(raid, got, CHUNK, 0), 0);        /* D0 is on slot 0 */
    assert_memory_equal(got, shadow, CHUNK);
    assert_int_equal(rk_dev_read(raid, got, len - 2 * CHUNK, 2 * CHUNK), 0);
    assert_memory_equal(got, shadow + 2 * CHUNK, len - 2 * CHUNK);
    rk_dev_close(raid);
    free(got);
    free(shadow);
    rk_test_close_members(mem, 3);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_raid5),           cmocka_unit_test(test_check_raid6),
        cmocka_unit_test(test_check_untrusted),       cmocka_unit_test(test_check_suspect_reads),
        cmocka_unit_test(test_replay_unreadable_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
