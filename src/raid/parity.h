/* RAID5/RAID6 parity kernels and recovery: P (XOR) and Q (Linux md RAID6 code over GF(2^8)),
 * read-modify-write updates, and rebuild of 1 or 2 lost blocks with cached ISA-L decode tables.
 *
 * The code is exactly Linux md's RAID6 (H. Peter Anvin, "The mathematics of RAID-6"), as
 * ISA-L pq_gen computes it:
 *
 *     P = D_0 ^ D_1 ^ ... ^ D_{n-1}
 *     Q = g^0·D_0 ^ g^1·D_1 ^ ... ^ g^{n-1}·D_{n-1}      GF(2^8), polynomial 0x11d, g = 2
 *
 * As an erasure code its (n+2) x n generator matrix is the identity (data rows), a row of ones
 * (P) and the row g^i (Q) — the same matrix ISA-L gf_gen_rs_matrix(a, n + 2, n) builds.
 *
 * Common rules for every function below:
 *  - lengths are in bytes; len may be any value in 0..INT_MAX (0 is a no-op). The fast ISA-L
 *    kernels run when every buffer is RK_PARITY_ALIGN-aligned and len is a multiple of
 *    RK_PARITY_ALIGN (so any multiple of the 512-byte sector with page/64-byte aligned buffers);
 *    otherwise a portable word-at-a-time path gives the same bytes, only slower.
 *  - buffers are owned by the caller; nothing is retained after the call returns. Output buffers
 *    must not overlap inputs unless stated.
 *  - errors are negative errno: -EINVAL for bad arguments; nothing is written on -EINVAL.
 *  - no function allocates memory except rk_parity_ctx_create (data path is allocation-free).
 */
#ifndef RK_RAID_PARITY_H
#define RK_RAID_PARITY_H

#include <stddef.h>
#include <stdint.h>

#include "raidkit/device.h"

/* Largest number of data blocks per stripe (raid5 over RK_MAX_MEMBERS members). */
#define RK_PARITY_MAX_DATA (RK_MAX_MEMBERS - 1)
/* Alignment (bytes) of buffers and length for the ISA-L kernels. 64, not 32: the AVX-512
 * variants ISA-L may dispatch to use aligned 64-byte loads/stores. */
#define RK_PARITY_ALIGN 64
/* Default number of cached decode-table entries (failure patterns) for rk_parity_ctx_create. */
#define RK_PARITY_CACHE_DEFAULT 64

/*
 * P = XOR of data[0..ndata-1] (RAID5 parity, and RAID6 P).
 * ndata: 1..RK_PARITY_MAX_DATA (1 copies data[0]); len: bytes per block; data: ndata pointers;
 * p: output, must not alias a data block. Uses ISA-L xor_gen when aligned (see above).
 * Returns 0 or -EINVAL.
 */
int rk_parity_xor(int ndata, size_t len, void **data, void *p);

/*
 * P and Q of data[0..ndata-1] (RAID6). data[i] has Q coefficient g^i, so the index is the
 * block's position in the stripe's data order (md's "raid disk" order of data blocks).
 * ndata: 1..RK_PARITY_MAX_DATA (for 1, P = Q = data[0]); p, q: outputs, distinct, not
 * aliasing data. Uses ISA-L pq_gen when aligned. Returns 0 or -EINVAL.
 */
int rk_parity_pq(int ndata, size_t len, void **data, void *p, void *q);

/* dst ^= src over len bytes (any alignment; dst and src may not partially overlap).
 * Building block for reconstruct-write and read-modify-write. Returns 0 or -EINVAL. */
int rk_parity_xor_into(size_t len, void *dst, const void *src);

/* dst ^= g^idx · src over GF(2^8) (idx: 0..254, the data block's index in the stripe), via
 * ISA-L gf_vect_mad (unaligned loads are fine; len < 64 uses gf_vect_mad_base).
 * Returns 0 or -EINVAL. */
int rk_parity_mul_into(int idx, size_t len, void *dst, const void *src);

/*
 * Read-modify-write update after data block idx changes from dold to dnew:
 *     P' = P ^ Dold ^ Dnew                       (always)
 *     Q' = Q ^ g^idx·Dold ^ g^idx·Dnew            (nparity == 2; = Q ^ g^idx·(Dold ^ Dnew))
 * nparity: 1 (raid5, q ignored, may be NULL) or 2 (raid6); idx: 0..ndata-1 of the stripe;
 * p, q updated in place; dold, dnew unchanged. Returns 0 or -EINVAL.
 */
int rk_parity_rmw(int nparity, int idx, size_t len, void *p, void *q, const void *dold,
                  const void *dnew);

/* Decode-table cache for rk_parity_recover: one entry per failure pattern (ndata, nparity,
 * missing set), filled on first use and reused; bounded (round-robin replacement), all memory
 * allocated by rk_parity_ctx_create. Thread-safe: lookups share a read lock. */
struct rk_parity_ctx;

/* Counters of a ctx (monotonic since create). */
struct rk_parity_stats {
    uint64_t hits;      /* recoveries that found their decode tables cached */
    uint64_t misses;    /* recoveries that had to build tables (invert the matrix) */
    uint64_t xor_fast;  /* recoveries done by plain XOR (one data block or P lost) */
    uint64_t recompute; /* recoveries of P and Q together (recomputed from intact data) */
};

/* Create a ctx caching up to nentries patterns (<= 0: RK_PARITY_CACHE_DEFAULT). Returns 0 and
 * *out (free with rk_parity_ctx_destroy), or -ENOMEM / -EINVAL. */
int rk_parity_ctx_create(int nentries, struct rk_parity_ctx **out);
/* Free a ctx (NULL is fine). No recovery may be running on it. */
void rk_parity_ctx_destroy(struct rk_parity_ctx *ctx);
/* Snapshot of the counters (ctx non-NULL). */
void rk_parity_ctx_stats(struct rk_parity_ctx *ctx, struct rk_parity_stats *st);

/*
 * Rebuild the missing blocks of one stripe in place.
 * ctx: decode-table cache, or NULL (tables are built on the stack every call; still no malloc).
 * ndata: 1..RK_PARITY_MAX_DATA; nparity: 1 (raid5) or 2 (raid6);
 * blocks: ndata + nparity pointers, data blocks in stripe order, then P, then Q (nparity 2),
 *         each len bytes; the surviving blocks are read, the missing ones written.
 * missing: indices into blocks (0..ndata+nparity-1), distinct, any order; nmissing 0..nparity.
 * Patterns: raid5 any one block; raid6 any one or two (data+data, data+P, data+Q, P+Q).
 * A lost data block or P with everything else present is XOR of the others; all other patterns
 * go through ISA-L ec_encode_data with decode rows from the inverted generator matrix.
 * Returns 0, or -EINVAL (bad arguments, too many missing), -EIO (matrix not invertible — cannot
 * happen for this code with ndata <= 255, kept as a guard).
 */
int rk_parity_recover(struct rk_parity_ctx *ctx, int ndata, int nparity, size_t len, void **blocks,
                      const int *missing, int nmissing);

/* rk_parity_locate results besides a block index. */
#define RK_PARITY_LOC_CLEAN   (-1) /* both syndromes are zero: the stripe is consistent */
#define RK_PARITY_LOC_UNKNOWN (-2) /* no single block explains the syndromes */

/*
 * Locate the one bad block of a raid6 stripe from its syndromes, as in H. Peter Anvin, "The
 * mathematics of RAID-6" (single-disk corruption): with P, Q the stored parity and P', Q' the
 * parity recomputed from the stored data,
 *     ps = P ^ P'        qs = Q ^ Q'        (len bytes each, e.g. one column window)
 * If only data block z is wrong, by error e (nonzero somewhere), then ps = e and qs = g^z·e at
 * every byte, so z = log_g(qs) - log_g(ps) mod 255 wherever ps != 0; only P wrong: ps != 0 and
 * qs = 0 everywhere; only Q wrong: ps = 0 and qs != 0 everywhere. Every byte with a nonzero
 * syndrome must blame the same block.
 * ndata: 1..RK_PARITY_MAX_DATA; ps, qs: the syndromes (any alignment, read only).
 * *bad gets RK_PARITY_LOC_CLEAN, a data index 0..ndata-1 (the correct block is D_z ^ ps), ndata
 * (P is bad: recompute it), ndata + 1 (Q is bad) or RK_PARITY_LOC_UNKNOWN (more than one block
 * differs, or the ratio names no data block: the stripe cannot be repaired by locating).
 * A single wrong block is always found; two wrong blocks are reported UNKNOWN unless their
 * errors happen to mimic one block on every byte (as with any two-parity code).
 * Returns 0, or -EINVAL (bad ndata, NULL pointer, len > INT_MAX; *bad untouched).
 */
int rk_parity_locate(int ndata, size_t len, const void *ps, const void *qs, int *bad);

/* ---- Plain-C reference (parity_ref.c): byte-at-a-time, no ISA-L. Tests and bench only. ---- */

/* a·b in GF(2^8) with polynomial 0x11d (shift-and-xor). */
uint8_t rk_parity_ref_gf_mul(uint8_t a, uint8_t b);
/* P (and Q when q != NULL) of ndata blocks. */
void rk_parity_ref_pq(int ndata, size_t len, void *const *data, void *p, void *q);
/* Rebuild missing blocks (same layout and rules as rk_parity_recover) by md's raid6 recovery
 * formulas solved directly per byte. Returns 0 or -EINVAL. */
int rk_parity_ref_recover(int ndata, int nparity, size_t len, void **blocks, const int *missing,
                          int nmissing);

#endif /* RK_RAID_PARITY_H */
