/*
 * Partial parity log blocks (docs/FORMAT.md "Partial parity log"): little-endian, 4 KiB, the
 * crc32c of bytes [0, 4092) in the last 4 bytes. Every field read from disk is bounded here.
 *
 * Head:   0 magic "RKPPLHD1"  8 id u64  16 retired u64  24 flags u32 (1: key present)
 *         32 log key (16 bytes, RK_PPL_HASHED entries of this member are keyed with it)
 * Entry:  0 magic "RKPPLEN1"  8 id u64  16 seq u64  24 row u64  32 lo u32  36 len u32
 *        40 flags u32  44 nranges u32  48 payload_crc u32  52 nrows u32 (RK_PPL_FULL only)
 *        56 ranges: nranges x 16 bytes (+0 chunk k u32, +4 a u32, +8 b u32, +12 reserved u32)
 *        576 digests (RK_PPL_HASHED only): rk_ppl_digest_count x 8 bytes
 * Both: 4092 crc32c u32; every other byte zero.
 */
#include "raid/raid5_ppl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "core/util.h"

#define PPL_OFF_ID     8
#define PPL_OFF_SEQ    16 /* head: retired */
#define PPL_OFF_ROW    24
#define PPL_OFF_LO     32
#define PPL_OFF_LEN    36
#define PPL_OFF_FLAGS  40
#define PPL_OFF_NR     44
#define PPL_OFF_PCRC   48
#define PPL_OFF_NROWS  52
#define PPL_OFF_RANGES 56
#define PPL_RANGE_SIZE 16
#define PPL_OFF_CRC    (RK_PPL_BLOCK - 4)
#define PPL_OFF_HFLAGS 24 /* head */
#define PPL_OFF_KEY    32
#define PPL_HEAD_KEY   1u

_Static_assert(PPL_OFF_RANGES + RK_MAX_MEMBERS * PPL_RANGE_SIZE <= PPL_OFF_CRC, "ranges fit");

uint64_t rk_ppl_payload_bytes(const struct rk_ppl_entry *e)
{
    return (uint64_t)__builtin_popcount(e->flags & (RK_PPL_HAS_P | RK_PPL_HAS_Q)) * e->len;
}

uint64_t rk_ppl_entry_bytes(const struct rk_ppl_entry *e)
{
    uint64_t pay = rk_ppl_payload_bytes(e);
    return RK_PPL_BLOCK + (pay + RK_PPL_BLOCK - 1) / RK_PPL_BLOCK * RK_PPL_BLOCK;
}

_Static_assert(PPL_OFF_RANGES + RK_MAX_MEMBERS * PPL_RANGE_SIZE <= RK_PPL_DIG_OFF, "digests");
_Static_assert(PPL_OFF_KEY + RK_PPL_KEY_BYTES <= PPL_OFF_CRC, "key fits");

/* First and end column of the whole cells inside [a, b). */
static void ppl_cells(uint32_t a, uint32_t b, uint32_t *c0, uint32_t *c1)
{
    *c0 = (a + RK_PPL_CELL - 1) / RK_PPL_CELL * RK_PPL_CELL;
    *c1 = b / RK_PPL_CELL * RK_PPL_CELL;
    if (*c1 < *c0)
        *c1 = *c0;
}

uint32_t rk_ppl_digest_count(const struct rk_ppl_entry *e)
{
    uint32_t n = 0, c0, c1;
    for (uint32_t i = 0; i < e->nranges && i < RK_MAX_MEMBERS; i++) {
        ppl_cells(e->r[i].a, e->r[i].b, &c0, &c1);
        n += (c1 - c0) / RK_PPL_CELL;
    }
    return n;
}

int rk_ppl_digest_index(const struct rk_ppl_entry *e, uint32_t k, uint32_t c)
{
    uint32_t n = 0, c0, c1;
    if (!(e->flags & RK_PPL_HASHED) || (e->flags & RK_PPL_FULL) || c % RK_PPL_CELL)
        return -1;
    for (uint32_t i = 0; i < e->nranges && i < RK_MAX_MEMBERS; i++) {
        ppl_cells(e->r[i].a, e->r[i].b, &c0, &c1);
        if (e->r[i].k == k)
            return c >= c0 && c < c1 ? (int)(n + (c - c0) / RK_PPL_CELL) : -1;
        n += (c1 - c0) / RK_PPL_CELL;
    }
    return -1;
}

void rk_ppl_hash(const uint8_t *key, const void *cell, uint8_t *out)
{
    _Static_assert(RK_PPL_DIG_BYTES == crypto_shorthash_BYTES, "digest size");
    _Static_assert(RK_PPL_KEY_BYTES == crypto_shorthash_KEYBYTES, "key size");
    crypto_shorthash(out, cell, RK_PPL_CELL, key);
}

static void ppl_seal(uint8_t *out)
{
    rk_put_le32(out + PPL_OFF_CRC, rk_crc32c(out, PPL_OFF_CRC));
}

/* Magic, checksum and generation of a block; 0 or an RK_PPL_E* code with err. */
static int ppl_open_block(const uint8_t *buf, const char *magic, uint64_t id, const char *what,
                          char *err, size_t errlen)
{
    if (memcmp(buf, magic, 8) != 0)
        return RK_PPL_ENONE;
    uint32_t stored = rk_get_le32(buf + PPL_OFF_CRC), computed = rk_crc32c(buf, PPL_OFF_CRC);
    if (stored != computed) {
        rk_set_err(err, errlen,
                   "%s checksum mismatch (stored %08" PRIx32 ", computed %08" PRIx32 ")", what,
                   stored, computed);
        return RK_PPL_EBAD;
    }
    uint64_t got = rk_get_le64(buf + PPL_OFF_ID);
    if (got != id) {
        rk_set_err(err, errlen, "%s of generation %016" PRIx64 ", not this array's %016" PRIx64,
                   what, got, id);
        return RK_PPL_ESTALE;
    }
    return 0;
}

void rk_ppl_head_encode(const struct rk_ppl_head *h, uint8_t *out)
{
    memset(out, 0, RK_PPL_BLOCK);
    memcpy(out, RK_PPL_HEAD_MAGIC, 8);
    rk_put_le64(out + PPL_OFF_ID, h->id);
    rk_put_le64(out + PPL_OFF_SEQ, h->retired);
    if (h->haskey) {
        rk_put_le32(out + PPL_OFF_HFLAGS, PPL_HEAD_KEY);
        memcpy(out + PPL_OFF_KEY, h->key, RK_PPL_KEY_BYTES);
    }
    ppl_seal(out);
}

int rk_ppl_head_decode(const uint8_t *buf, uint64_t id, struct rk_ppl_head *h, char *err,
                       size_t errlen)
{
    int r = ppl_open_block(buf, RK_PPL_HEAD_MAGIC, id, "log head", err, errlen);
    if (r)
        return r;
    h->id = id;
    h->retired = rk_get_le64(buf + PPL_OFF_SEQ);
    h->haskey = rk_get_le32(buf + PPL_OFF_HFLAGS) & PPL_HEAD_KEY;
    memcpy(h->key, buf + PPL_OFF_KEY, RK_PPL_KEY_BYTES);
    return 0;
}

void rk_ppl_entry_encode(struct rk_ppl_entry *e, uint8_t *out, const void *payload)
{
    e->payload_crc = rk_crc32c(payload, (size_t)rk_ppl_payload_bytes(e));
    memset(out, 0, RK_PPL_BLOCK);
    memcpy(out, RK_PPL_ENTRY_MAGIC, 8);
    rk_put_le64(out + PPL_OFF_ID, e->id);
    rk_put_le64(out + PPL_OFF_SEQ, e->seq);
    rk_put_le64(out + PPL_OFF_ROW, e->row);
    rk_put_le32(out + PPL_OFF_LO, e->lo);
    rk_put_le32(out + PPL_OFF_LEN, e->len);
    rk_put_le32(out + PPL_OFF_FLAGS, e->flags);
    rk_put_le32(out + PPL_OFF_NR, e->nranges);
    rk_put_le32(out + PPL_OFF_PCRC, e->payload_crc);
    rk_put_le32(out + PPL_OFF_NROWS, e->nrows);
    for (uint32_t i = 0; i < e->nranges && i < RK_MAX_MEMBERS; i++) {
        uint8_t *x = out + PPL_OFF_RANGES + i * PPL_RANGE_SIZE;
        rk_put_le32(x, e->r[i].k);
        rk_put_le32(x + 4, e->r[i].a);
        rk_put_le32(x + 8, e->r[i].b);
    }
    uint32_t nd = rk_ppl_digest_count(e);
    if ((e->flags & RK_PPL_HASHED) && e->dig && nd <= RK_PPL_MAX_DIG)
        memcpy(out + RK_PPL_DIG_OFF, e->dig, (size_t)nd * RK_PPL_DIG_BYTES);
    ppl_seal(out);
}

/* Bounds of the ranges of a decoded entry (window, chunk numbers, one range per chunk). */
static int ppl_check_ranges(const struct rk_ppl_entry *e, const struct rk_ppl_limits *lim,
                            char *err, size_t errlen)
{
    uint32_t seen = 0;
    for (uint32_t i = 0; i < e->nranges; i++) {
        const struct rk_ppl_range *x = &e->r[i];
        if (x->k >= lim->nd || (seen & (1u << x->k)) || x->a < e->lo || x->a >= x->b ||
            x->b > e->lo + e->len) {
            rk_set_err(err, errlen,
                       "log entry %" PRIu64 ": range %" PRIu32 " (chunk %" PRIu32 ", [%" PRIu32
                       ", %" PRIu32 ")) outside window [%" PRIu32 ", +%" PRIu32 ") or repeated",
                       e->seq, i, x->k, x->a, x->b, e->lo, e->len);
            return RK_PPL_EFIELD;
        }
        seen |= 1u << x->k;
    }
    return 0;
}

/* Bounds of a whole-stripe entry: flags RK_PPL_FULL alone, the whole chunk, no ranges, rows
 * [row, row + nrows) inside the array, one header block. */
static int ppl_check_full(const struct rk_ppl_entry *e, const struct rk_ppl_limits *lim, char *err,
                          size_t errlen)
{
    if (e->flags != RK_PPL_FULL || e->lo || e->len != lim->chunk || e->nranges || !e->nrows ||
        e->row >= lim->rows || e->nrows > lim->rows - e->row || RK_PPL_BLOCK > lim->room) {
        rk_set_err(err, errlen,
                   "log entry %" PRIu64 ": whole-stripe entry of rows [%" PRIu64 ", +%" PRIu32
                   "), window [%" PRIu32 ", +%" PRIu32 "), flags %" PRIu32 ", %" PRIu32
                   " ranges out of bounds",
                   e->seq, e->row, e->nrows, e->lo, e->len, e->flags, e->nranges);
        return RK_PPL_EFIELD;
    }
    return 0;
}

int rk_ppl_entry_decode(const uint8_t *buf, const struct rk_ppl_limits *lim, struct rk_ppl_entry *e,
                        char *err, size_t errlen)
{
    int r = ppl_open_block(buf, RK_PPL_ENTRY_MAGIC, lim->id, "log entry", err, errlen);
    if (r)
        return r;
    memset(e, 0, sizeof(*e));
    e->id = lim->id;
    e->seq = rk_get_le64(buf + PPL_OFF_SEQ);
    e->row = rk_get_le64(buf + PPL_OFF_ROW);
    e->lo = rk_get_le32(buf + PPL_OFF_LO);
    e->len = rk_get_le32(buf + PPL_OFF_LEN);
    e->flags = rk_get_le32(buf + PPL_OFF_FLAGS);
    e->nranges = rk_get_le32(buf + PPL_OFF_NR);
    e->payload_crc = rk_get_le32(buf + PPL_OFF_PCRC);
    e->nrows = rk_get_le32(buf + PPL_OFF_NROWS);
    if (e->flags & RK_PPL_FULL)
        return ppl_check_full(e, lim, err, errlen);
    uint32_t allowed = lim->np == 2 ? RK_PPL_HAS_P | RK_PPL_HAS_Q : RK_PPL_HAS_P;
    uint32_t hashed = e->flags & RK_PPL_HASHED;
    e->flags &= ~RK_PPL_HASHED;
    if (e->row >= lim->rows || e->len == 0 || e->len % 512 || e->lo % 512 || e->lo >= lim->chunk ||
        e->len > lim->chunk - e->lo || !e->flags || (e->flags & ~allowed) || e->nranges == 0 ||
        e->nranges > lim->nd || e->nrows || rk_ppl_entry_bytes(e) > lim->room) {
        rk_set_err(err, errlen,
                   "log entry %" PRIu64 ": stripe %" PRIu64 ", window [%" PRIu32 ", +%" PRIu32
                   "), flags %" PRIu32 ", %" PRIu32 " ranges or %" PRIu32 " rows out of bounds",
                   e->seq, e->row, e->lo, e->len, e->flags, e->nranges, e->nrows);
        return RK_PPL_EFIELD;
    }
    for (uint32_t i = 0; i < e->nranges; i++) {
        const uint8_t *x = buf + PPL_OFF_RANGES + i * PPL_RANGE_SIZE;
        e->r[i].k = rk_get_le32(x);
        e->r[i].a = rk_get_le32(x + 4);
        e->r[i].b = rk_get_le32(x + 8);
    }
    r = ppl_check_ranges(e, lim, err, errlen);
    if (r || !hashed)
        return r;
    e->flags |= RK_PPL_HASHED;
    if (rk_ppl_digest_count(e) > RK_PPL_MAX_DIG) {
        rk_set_err(err, errlen, "log entry %" PRIu64 ": %" PRIu32 " digests do not fit", e->seq,
                   rk_ppl_digest_count(e));
        return RK_PPL_EFIELD;
    }
    e->dig = buf + RK_PPL_DIG_OFF;
    return 0;
}

int rk_ppl_payload_check(const struct rk_ppl_entry *e, const void *payload, char *err,
                         size_t errlen)
{
    uint32_t got = rk_crc32c(payload, (size_t)rk_ppl_payload_bytes(e));
    if (got != e->payload_crc) {
        rk_set_err(err, errlen,
                   "log entry %" PRIu64 ": partial parity checksum mismatch (stored %08" PRIx32
                   ", computed %08" PRIx32 ")",
                   e->seq, e->payload_crc, got);
        return RK_PPL_EBAD;
    }
    return 0;
}
