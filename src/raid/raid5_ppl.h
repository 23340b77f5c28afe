/*
 * The partial parity log of raid5/raid6 (docs/FORMAT.md "Partial parity log"): the on-disk
 * blocks (raid5_ppl_fmt.c, pure codec, no I/O) and the log itself (raid5_ppl.c: a ring per
 * member, the write step between parity computation and commit, and the replay after an
 * unclean shutdown).
 *
 * Region of every member: [ppl_offset, ppl_offset + ppl_size) (struct rk_raid_geom). Its first
 * 4 KiB block is the head (the durable retirement point); the rest is a ring of entries, each
 * a 4 KiB header block followed by its payload (the partial parities), 4 KiB aligned.
 */
#ifndef RK_RAID5_PPL_H
#define RK_RAID5_PPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidkit/raid.h"

#define RK_PPL_BLOCK       4096u
#define RK_PPL_HEAD_MAGIC  "RKPPLHD1" /* 8 bytes, no NUL on disk */
#define RK_PPL_ENTRY_MAGIC "RKPPLEN1"
/* Payload flags: which partial parity the entry holds (in this order in the payload). */
#define RK_PPL_HAS_P 1u
#define RK_PPL_HAS_Q 2u
/* A whole-stripe write (or zeroing) of rows [row, row + nrows): every data chunk modified over
 * the whole chunk, no payload; alone in flags (lo 0, len chunk, no ranges). It supersedes every
 * older entry of those rows (docs/FORMAT.md "Partial parity log"). */
#define RK_PPL_FULL 4u
/* A partial entry that also holds, in its header block from RK_PPL_DIG_OFF, one keyed digest
 * (RK_PPL_DIG_BYTES, SipHash-2-4 keyed with the array's log key, rk_ppl_hash) of the NEW data of
 * every whole 4 KiB cell its ranges cover (rk_ppl_digest_count; docs/FORMAT.md "Partial parity
 * log"). Entries without it (older writers, RAIDKIT_PPL_HASH=0) are read as before. */
#define RK_PPL_HASHED    8u
#define RK_PPL_CELL      4096u /* digest unit: a 4 KiB column cell of a data chunk */
#define RK_PPL_DIG_BYTES 8u
#define RK_PPL_DIG_OFF   576u /* after the largest range table (56 + 32 x 16 bytes) */
#define RK_PPL_MAX_DIG   ((RK_PPL_BLOCK - 4u - RK_PPL_DIG_OFF) / RK_PPL_DIG_BYTES) /* 439 */
#define RK_PPL_KEY_BYTES 16u

/* Decode results besides 0: not a log block at all (no magic: skipped silently), or a log
 * block that cannot be trusted (the message says why; the caller logs it and ignores it). */
#define RK_PPL_ENONE  -ENODATA
#define RK_PPL_EBAD   -EBADMSG /* checksum mismatch */
#define RK_PPL_EFIELD -EINVAL  /* a field out of bounds */
#define RK_PPL_ESTALE -ESTALE  /* another generation (an earlier array on the member) */

/* The head block: entries with seq < retired are void. */
struct rk_ppl_head {
    uint64_t id;      /* generation (rk_raid_geom.ppl_id) */
    uint64_t retired; /* every entry of this member with seq < retired is void */
    bool haskey;      /* key holds the log key of the entries of this member (RK_PPL_HASHED) */
    uint8_t key[RK_PPL_KEY_BYTES];
};

/* One modified range of a data chunk: columns [a, b) of data chunk k (bytes inside the chunk). */
struct rk_ppl_range {
    uint32_t k, a, b;
};

/*
 * One entry: stripe row, the column window [lo, lo + len) it covers, the modified ranges, and
 * the partial parity over the window: for every column c, PP[c] = XOR of the data chunks not
 * modified at c, and (RK_PPL_HAS_Q) PQ[c] = sum of g^k D_k[c] over the same chunks. Payload:
 * PP then PQ, len bytes each. An RK_PPL_FULL entry covers rows [row, row + nrows) whole and
 * has no ranges and no payload.
 */
struct rk_ppl_entry {
    uint64_t id, seq, row;
    uint32_t lo, len;
    uint32_t flags;       /* RK_PPL_HAS_P | RK_PPL_HAS_Q, at least one; or RK_PPL_FULL alone */
    uint32_t nranges;     /* 0 for RK_PPL_FULL */
    uint32_t nrows;       /* RK_PPL_FULL: rows covered from row (>= 1); else 0 */
    uint32_t payload_crc; /* crc32c of the payload bytes (set by rk_ppl_entry_encode) */
    struct rk_ppl_range r[RK_MAX_MEMBERS];
    /* RK_PPL_HASHED: rk_ppl_digest_count(e) digests of RK_PPL_DIG_BYTES, in range order and
     * column order inside a range. Encode reads them from here; decode points it into the
     * decoded block (valid while that buffer is). NULL otherwise. */
    const uint8_t *dig;
};

/* What an entry of this array may hold (decode bounds). */
struct rk_ppl_limits {
    uint64_t id;    /* generation of the array */
    uint32_t chunk; /* bytes */
    uint32_t nd;    /* data chunks per stripe */
    uint32_t np;    /* parity blocks per stripe (1 or 2) */
    uint64_t rows;  /* stripes */
    uint64_t room;  /* bytes from this header to the end of the ring */
};

/* Payload bytes of e (partial parities), and the entry's ring bytes (header + payload, 4 KiB
 * aligned). */
uint64_t rk_ppl_payload_bytes(const struct rk_ppl_entry *e);
uint64_t rk_ppl_entry_bytes(const struct rk_ppl_entry *e);

/* Whole RK_PPL_CELL cells of the data chunks that e's ranges cover: the number of digests an
 * RK_PPL_HASHED entry holds (may exceed RK_PPL_MAX_DIG: such an entry is written unhashed). */
uint32_t rk_ppl_digest_count(const struct rk_ppl_entry *e);
/* Index of the digest of data chunk k's cell [c, c + RK_PPL_CELL) in e (c: column in the chunk,
 * bytes), or -1 when e's range of chunk k does not cover that whole cell (or e has no range of
 * chunk k, or is not RK_PPL_HASHED). */
int rk_ppl_digest_index(const struct rk_ppl_entry *e, uint32_t k, uint32_t c);
/* Keyed digest of one RK_PPL_CELL-byte cell: SipHash-2-4 (libsodium crypto_shorthash, a keyed
 * PRF: not affine like a CRC) with key (RK_PPL_KEY_BYTES), RK_PPL_DIG_BYTES into out. Chosen
 * over keyed BLAKE2b, 2.5 times slower per cell (bench/RESULTS.md "PPL digests"). */
void rk_ppl_hash(const uint8_t *key, const void *cell, uint8_t *out);

/* Encode head h into out (RK_PPL_BLOCK bytes, crc filled in). */
void rk_ppl_head_encode(const struct rk_ppl_head *h, uint8_t *out);
/* Decode a head block of generation id. Returns 0 and *h, or RK_PPL_ENONE / RK_PPL_EBAD /
 * RK_PPL_ESTALE with one line in err. */
int rk_ppl_head_decode(const uint8_t *buf, uint64_t id, struct rk_ppl_head *h, char *err,
                       size_t errlen);

/* Encode e's header into out (RK_PPL_BLOCK bytes) and set e->payload_crc from payload
 * (rk_ppl_payload_bytes(e) bytes). Does not validate. */
void rk_ppl_entry_encode(struct rk_ppl_entry *e, uint8_t *out, const void *payload);
/* Decode and bound an entry header. Returns 0 and *e, or RK_PPL_ENONE / RK_PPL_EBAD /
 * RK_PPL_EFIELD / RK_PPL_ESTALE with one line in err. The payload is checked separately. */
int rk_ppl_entry_decode(const uint8_t *buf, const struct rk_ppl_limits *lim, struct rk_ppl_entry *e,
                        char *err, size_t errlen);
/* Check the payload (rk_ppl_payload_bytes(e) bytes) against e->payload_crc: 0 or RK_PPL_EBAD
 * with err. */
int rk_ppl_payload_check(const struct rk_ppl_entry *e, const void *payload, char *err,
                         size_t errlen);

/*
 * Test hook (the power-cut torture, bench/torture/): the replay calls fn for every column run it
 * decides, in replay order: stripe row, columns [lo, hi) of its chunks, and whether the run is
 * now consistent (ok) or was left as it is (not provable). A later call over the same columns
 * replaces an earlier one (per column the latest live entry decides). Columns it never reports
 * had no live entry: the replay took them as consistent. Process-wide, NULL (the default): no
 * reports; set it before the array opens.
 */
typedef void (*rk_ppl_report_fn)(void *ctx, uint64_t row, uint32_t lo, uint32_t hi, bool ok);
void rk_ppl_set_report(rk_ppl_report_fn fn, void *ctx);

#endif
