/* RAID5/RAID6 parity: P/Q generation, read-modify-write updates and 1-2 block recovery on top of
 * ISA-L (xor_gen, pq_gen, gf_vect_mad, ec_encode_data), with cached decode tables per pattern.
 *
 * Why a portable path exists: ISA-L's SIMD kernels require aligned buffers and lengths (the
 * AVX-512 ones 64 bytes) and crash on unaligned pointers instead of failing, and the _base twins
 * read through unsigned long pointers (undefined behaviour when unaligned). So anything not
 * RK_PARITY_ALIGN-aligned goes through word loops with memcpy loads that give the same bytes.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include "raid/parity.h"

#define PARITY_MAX_ROWS 2 /* at most two blocks rebuilt per stripe (raid6) */
#define PARITY_TBL_MAX  (32 * RK_PARITY_MAX_DATA * PARITY_MAX_ROWS)

/* One cached failure pattern. ndata == 0 marks an empty slot. */
struct parity_cache_entry {
    int ndata;                    /* data blocks per stripe */
    int nparity;                  /* 1 or 2 */
    int miss[PARITY_MAX_ROWS];    /* missing block indices, ascending; -1 when unused */
    uint8_t tbls[PARITY_TBL_MAX]; /* ec_init_tables output: 32 * ndata * nmissing bytes */
};

struct rk_parity_ctx {
    /* Guards entries[] and next. Readers copy an entry's tables out under the read lock and run
     * the (long) encode without it, so an insert never waits for a rebuild in progress. */
    pthread_rwlock_t lock;
    int nentries;                               /* capacity of entries[] (fixed at create) */
    int next;                                   /* round-robin replacement cursor */
    struct parity_cache_entry *entries;         /* nentries slots, allocated at create */
    uint64_t hits, misses, xor_fast, recompute; /* updated with __atomic builtins */
};

/* ---- alignment dispatch ---- */

static bool parity_aligned(const void *ptr)
{
    return ((uintptr_t)ptr & (RK_PARITY_ALIGN - 1)) == 0;
}

/* True when len and every pointer allow the ISA-L SIMD kernels. */
static bool parity_fast_ok(size_t len, int n, void *const *bufs)
{
    if (len % RK_PARITY_ALIGN != 0)
        return false;
    for (int i = 0; i < n; i++)
        if (!parity_aligned(bufs[i]))
            return false;
    return true;
}

/* ---- portable word-at-a-time kernels (unaligned safe) ---- */

static inline uint64_t parity_load(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline void parity_store(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, sizeof(v));
}

/* Multiply each of the 8 bytes of w by g = 2 in GF(2^8)/0x11d. */
static inline uint64_t parity_mul2_word(uint64_t w)
{
    uint64_t hi = w & 0x8080808080808080ull;
    return ((w << 1) & 0xfefefefefefefefeull) ^ ((hi >> 7) * 0x1d);
}

static inline uint8_t parity_mul2_byte(uint8_t b)
{
    return (uint8_t)((b << 1) ^ ((b & 0x80) ? 0x1d : 0));
}

static void parity_xor_portable(int nsrc, size_t len, void *const *src, void *dst)
{
    uint8_t *d = dst;
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        uint64_t acc = parity_load((const uint8_t *)src[0] + i);
        for (int j = 1; j < nsrc; j++)
            acc ^= parity_load((const uint8_t *)src[j] + i);
        parity_store(d + i, acc);
    }
    for (; i < len; i++) {
        uint8_t acc = ((const uint8_t *)src[0])[i];
        for (int j = 1; j < nsrc; j++)
            acc ^= ((const uint8_t *)src[j])[i];
        d[i] = acc;
    }
}

/* Q by Horner's rule from the highest index down, as md and ISA-L pq_gen_base do. */
static void parity_pq_portable(int ndata, size_t len, void *const *src, void *p, void *q)
{
    uint8_t *pp = p, *qq = q;
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        uint64_t pw = parity_load((const uint8_t *)src[ndata - 1] + i), qw = pw;
        for (int j = ndata - 2; j >= 0; j--) {
            uint64_t s = parity_load((const uint8_t *)src[j] + i);
            pw ^= s;
            qw = parity_mul2_word(qw) ^ s;
        }
        parity_store(pp + i, pw);
        parity_store(qq + i, qw);
    }
    for (; i < len; i++) {
        uint8_t pb = ((const uint8_t *)src[ndata - 1])[i], qb = pb;
        for (int j = ndata - 2; j >= 0; j--) {
            uint8_t s = ((const uint8_t *)src[j])[i];
            pb ^= s;
            qb = parity_mul2_byte(qb) ^ s;
        }
        pp[i] = pb;
        qq[i] = qb;
    }
}

/* dst = XOR of nsrc sources (nsrc >= 1; dst not among them). */
static void parity_xor_gen(int nsrc, size_t len, void *const *src, void *dst)
{
    void *arr[RK_PARITY_MAX_DATA + 2];

    if (nsrc == 1) {
        memcpy(dst, src[0], len);
        return;
    }
    memcpy(arr, src, (size_t)nsrc * sizeof(void *));
    arr[nsrc] = dst;
    if (parity_fast_ok(len, nsrc + 1, arr) && xor_gen(nsrc + 1, (int)len, arr) == 0)
        return;
    parity_xor_portable(nsrc, len, src, dst);
}

/* g^i and its 32-byte gf_vect_mul_init table for every i < 255, built once: the RMW path runs
 * per small write and should not rebuild them each time. */
static uint8_t parity_gexp[255];
static uint8_t parity_glog[256]; /* log_g(v) for v = 1..255 (parity_glog[0] unused) */
static unsigned char parity_gtbl[255][32];
static pthread_once_t parity_once = PTHREAD_ONCE_INIT;

static void parity_init_tables(void)
{
    uint8_t v = 1;
    for (int i = 0; i < 255; i++) {
        parity_gexp[i] = v;
        parity_glog[v] = (uint8_t)i;
        gf_vect_mul_init(v, parity_gtbl[i]);
        v = parity_mul2_byte(v);
    }
}

/* ---- generation ---- */

static bool parity_len_ok(size_t len)
{
    return len <= INT_MAX;
}

int rk_parity_xor(int ndata, size_t len, void **data, void *p)
{
    if (ndata < 1 || ndata > RK_PARITY_MAX_DATA || !data || !p || !parity_len_ok(len))
        return -EINVAL;
    for (int i = 0; i < ndata; i++)
        if (!data[i])
            return -EINVAL;
    if (len == 0)
        return 0;
    parity_xor_gen(ndata, len, data, p);
    return 0;
}

int rk_parity_pq(int ndata, size_t len, void **data, void *p, void *q)
{
    void *arr[RK_PARITY_MAX_DATA + 2];

    if (ndata < 1 || ndata > RK_PARITY_MAX_DATA || !data || !p || !q || p == q ||
        !parity_len_ok(len))
        return -EINVAL;
    for (int i = 0; i < ndata; i++)
        if (!data[i])
            return -EINVAL;
    if (len == 0)
        return 0;
    if (ndata == 1) {
        /* pq_gen needs two sources; with one, P = Q = D_0 (g^0 = 1). */
        memcpy(p, data[0], len);
        memcpy(q, data[0], len);
        return 0;
    }
    memcpy(arr, data, (size_t)ndata * sizeof(void *));
    arr[ndata] = p;
    arr[ndata + 1] = q;
    if (parity_fast_ok(len, ndata + 2, arr) && pq_gen(ndata + 2, (int)len, arr) == 0)
        return 0;
    parity_pq_portable(ndata, len, data, p, q);
    return 0;
}

/* ---- read-modify-write helpers ---- */

/* 32 bytes per step through GCC's generic vectors (memcpy loads: any alignment). The "default"
 * clone is two SSE2 operations per step, the "avx2" clone one; the CPU picks at load time. */
typedef uint8_t parity_v32 __attribute__((vector_size(32)));

__attribute__((target_clones("avx2", "default"))) static void parity_xor_run(size_t len, uint8_t *d,
                                                                             const uint8_t *s)
{
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        parity_v32 a, b;
        memcpy(&a, d + i, sizeof(a));
        memcpy(&b, s + i, sizeof(b));
        a ^= b;
        memcpy(d + i, &a, sizeof(a));
    }
    for (; i + 8 <= len; i += 8)
        parity_store(d + i, parity_load(d + i) ^ parity_load(s + i));
    for (; i < len; i++)
        d[i] ^= s[i];
}

int rk_parity_xor_into(size_t len, void *dst, const void *src)
{
    if (!dst || !src || !parity_len_ok(len))
        return -EINVAL;
    parity_xor_run(len, dst, src);
    return 0;
}

int rk_parity_mul_into(int idx, size_t len, void *dst, const void *src)
{
    if (idx < 0 || idx > 254 || !dst || !src || !parity_len_ok(len))
        return -EINVAL;
    if (len == 0)
        return 0;
    /* gf_vect_mad with vec = 1, vec_i = 0 reads the 32-byte table gf_vect_mul_init builds. */
    pthread_once(&parity_once, parity_init_tables);
    if (len >= 64)
        gf_vect_mad((int)len, 1, 0, parity_gtbl[idx], (unsigned char *)src, dst);
    else
        gf_vect_mad_base((int)len, 1, 0, parity_gtbl[idx], (unsigned char *)src, dst);
    return 0;
}

int rk_parity_rmw(int nparity, int idx, size_t len, void *p, void *q, const void *dold,
                  const void *dnew)
{
    if ((nparity != 1 && nparity != 2) || idx < 0 || idx >= RK_PARITY_MAX_DATA || !p || !dold ||
        !dnew || (nparity == 2 && !q) || !parity_len_ok(len))
        return -EINVAL;
    /* Two passes per parity instead of a delta buffer: no scratch memory on the data path. */
    rk_parity_xor_into(len, p, dold);
    rk_parity_xor_into(len, p, dnew);
    if (nparity == 2) {
        rk_parity_mul_into(idx, len, q, dold);
        rk_parity_mul_into(idx, len, q, dnew);
    }
    return 0;
}

/* ---- decode-table cache ---- */

int rk_parity_ctx_create(int nentries, struct rk_parity_ctx **out)
{
    struct rk_parity_ctx *ctx = NULL;
    int rc = -ENOMEM;

    if (!out)
        return -EINVAL;
    *out = NULL;
    if (nentries <= 0)
        nentries = RK_PARITY_CACHE_DEFAULT;
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        goto out;
    ctx->entries = calloc((size_t)nentries, sizeof(*ctx->entries));
    if (!ctx->entries)
        goto out;
    if (pthread_rwlock_init(&ctx->lock, NULL) != 0)
        goto out;
    ctx->nentries = nentries;
    *out = ctx;
    ctx = NULL;
    rc = 0;
out:
    if (ctx) {
        free(ctx->entries);
        free(ctx);
    }
    return rc;
}

void rk_parity_ctx_destroy(struct rk_parity_ctx *ctx)
{
    if (!ctx)
        return;
    pthread_rwlock_destroy(&ctx->lock);
    free(ctx->entries);
    free(ctx);
}

void rk_parity_ctx_stats(struct rk_parity_ctx *ctx, struct rk_parity_stats *st)
{
    st->hits = __atomic_load_n(&ctx->hits, __ATOMIC_RELAXED);
    st->misses = __atomic_load_n(&ctx->misses, __ATOMIC_RELAXED);
    st->xor_fast = __atomic_load_n(&ctx->xor_fast, __ATOMIC_RELAXED);
    st->recompute = __atomic_load_n(&ctx->recompute, __ATOMIC_RELAXED);
}

static void parity_count(uint64_t *ctr)
{
    __atomic_fetch_add(ctr, 1, __ATOMIC_RELAXED);
}

static bool parity_entry_match(const struct parity_cache_entry *e, int ndata, int nparity,
                               const int *miss)
{
    return e->ndata == ndata && e->nparity == nparity && e->miss[0] == miss[0] &&
           e->miss[1] == miss[1];
}

/* Copy the cached tables for the pattern into tbls; false when not cached. */
static bool parity_cache_get(struct rk_parity_ctx *ctx, int ndata, int nparity, const int *miss,
                             size_t tlen, uint8_t *tbls)
{
    bool found = false;

    pthread_rwlock_rdlock(&ctx->lock);
    for (int i = 0; i < ctx->nentries; i++) {
        if (parity_entry_match(&ctx->entries[i], ndata, nparity, miss)) {
            memcpy(tbls, ctx->entries[i].tbls, tlen);
            found = true;
            break;
        }
    }
    pthread_rwlock_unlock(&ctx->lock);
    return found;
}

static void parity_cache_put(struct rk_parity_ctx *ctx, int ndata, int nparity, const int *miss,
                             size_t tlen, const uint8_t *tbls)
{
    struct parity_cache_entry *e;

    pthread_rwlock_wrlock(&ctx->lock);
    for (int i = 0; i < ctx->nentries; i++)
        if (parity_entry_match(&ctx->entries[i], ndata, nparity, miss))
            goto out; /* another thread inserted it meanwhile */
    e = &ctx->entries[ctx->next];
    ctx->next = (ctx->next + 1) % ctx->nentries;
    e->ndata = ndata;
    e->nparity = nparity;
    e->miss[0] = miss[0];
    e->miss[1] = miss[1];
    memcpy(e->tbls, tbls, tlen);
out:
    pthread_rwlock_unlock(&ctx->lock);
}

/* Generator matrix row r (0..ndata+1) at column j: identity, then P = 1, then Q = g^j. */
static uint8_t parity_gen_coef(int ndata, int r, int j, const uint8_t *gpow)
{
    if (r < ndata)
        return r == j;
    return r == ndata ? 1 : gpow[j];
}

/*
 * Decode tables for the pattern: survivors are the first ndata present blocks (surv[]); with
 * data = Inv(B)·survivors (B = generator rows of the survivors), missing block r is
 * Gen[r]·Inv(B)·survivors, so its decode row is Gen[r]·Inv(B).
 */
static int parity_build_tables(int ndata, const int *surv, const int *miss, int nmiss,
                               uint8_t *tbls)
{
    uint8_t b[RK_PARITY_MAX_DATA * RK_PARITY_MAX_DATA];
    uint8_t inv[RK_PARITY_MAX_DATA * RK_PARITY_MAX_DATA];
    uint8_t rows[PARITY_MAX_ROWS * RK_PARITY_MAX_DATA];
    const uint8_t *gpow = parity_gexp;
    int k = ndata;

    pthread_once(&parity_once, parity_init_tables);
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++)
            b[i * k + j] = parity_gen_coef(k, surv[i], j, gpow);
    if (gf_invert_matrix(b, inv, k) != 0)
        return -EIO;
    for (int m = 0; m < nmiss; m++) {
        for (int j = 0; j < k; j++) {
            uint8_t acc = 0;
            for (int t = 0; t < k; t++)
                acc ^= gf_mul(parity_gen_coef(k, miss[m], t, gpow), inv[t * k + j]);
            rows[m * k + j] = acc;
        }
    }
    ec_init_tables(k, nmiss, rows, tbls);
    return 0;
}

int rk_parity_recover(struct rk_parity_ctx *ctx, int ndata, int nparity, size_t len, void **blocks,
                      const int *missing, int nmissing)
{
    int miss[PARITY_MAX_ROWS] = {-1, -1};
    int surv[RK_PARITY_MAX_DATA + 2];
    void *src[RK_PARITY_MAX_DATA + 2];
    unsigned char *out[PARITY_MAX_ROWS];
    uint8_t tbls[PARITY_TBL_MAX];
    int nblocks = ndata + nparity, ns = 0, rc;
    size_t tlen;

    if (ndata < 1 || ndata > RK_PARITY_MAX_DATA || (nparity != 1 && nparity != 2) || !blocks ||
        nmissing < 0 || nmissing > nparity || (nmissing > 0 && !missing) || !parity_len_ok(len))
        return -EINVAL;
    for (int i = 0; i < nblocks; i++)
        if (!blocks[i])
            return -EINVAL;
    for (int i = 0; i < nmissing; i++)
        if (missing[i] < 0 || missing[i] >= nblocks)
            return -EINVAL;
    if (nmissing == 2) {
        if (missing[0] == missing[1])
            return -EINVAL;
        miss[0] = missing[0] < missing[1] ? missing[0] : missing[1];
        miss[1] = missing[0] < missing[1] ? missing[1] : missing[0];
    } else if (nmissing == 1) {
        miss[0] = missing[0];
    }
    if (nmissing == 0 || len == 0)
        return 0;

    /* One data block or P lost: it is the XOR of the other data blocks and P. */
    if (nmissing == 1 && miss[0] <= ndata) {
        for (int i = 0; i <= ndata; i++)
            if (i != miss[0])
                src[ns++] = blocks[i];
        parity_xor_gen(ns, len, src, blocks[miss[0]]);
        if (ctx)
            parity_count(&ctx->xor_fast);
        return 0;
    }
    /* P and Q lost: the data is intact, recompute both. */
    if (nmissing == 2 && miss[0] == ndata) {
        if (ctx)
            parity_count(&ctx->recompute);
        return rk_parity_pq(ndata, len, blocks, blocks[ndata], blocks[ndata + 1]);
    }

    for (int i = 0; i < nblocks && ns < ndata; i++) {
        if (i == miss[0] || i == miss[1])
            continue;
        surv[ns] = i;
        src[ns++] = blocks[i];
    }
    for (int m = 0; m < nmissing; m++)
        out[m] = blocks[miss[m]];
    tlen = (size_t)32 * ndata * nmissing;
    if (ctx && parity_cache_get(ctx, ndata, nparity, miss, tlen, tbls)) {
        parity_count(&ctx->hits);
    } else {
        rc = parity_build_tables(ndata, surv, miss, nmissing, tbls);
        if (rc < 0)
            return rc;
        if (ctx) {
            parity_count(&ctx->misses);
            parity_cache_put(ctx, ndata, nparity, miss, tlen, tbls);
        }
    }
    /* ec_encode_data uses unaligned loads and handles any len (short ones via its _base). */
    ec_encode_data((int)len, ndata, nmissing, tbls, (unsigned char **)src, out);
    return 0;
}

/* ---- locating a single bad block (raid6 scrub) ---- */

/* The block that byte pair (a, b) = (P syndrome, Q syndrome) blames, or RK_PARITY_LOC_UNKNOWN:
 * data block z when b = g^z·a, P when only a is set, Q when only b is. */
static int parity_locate_byte(int ndata, uint8_t a, uint8_t b)
{
    if (!b)
        return ndata;
    if (!a)
        return ndata + 1;
    int z = ((int)parity_glog[b] - (int)parity_glog[a] + 255) % 255;
    return z < ndata ? z : RK_PARITY_LOC_UNKNOWN;
}

int rk_parity_locate(int ndata, size_t len, const void *ps, const void *qs, int *bad)
{
    if (ndata < 1 || ndata > RK_PARITY_MAX_DATA || !parity_len_ok(len) || !ps || !qs || !bad)
        return -EINVAL;
    pthread_once(&parity_once, parity_init_tables);
    const uint8_t *a = ps, *b = qs;
    int found = RK_PARITY_LOC_CLEAN;
    for (size_t i = 0; i < len; i++) {
        /* Skip clean words fast: a scrub mismatch is usually a few sectors of a chunk. */
        if (i % 8 == 0 && len - i >= 8 && !(parity_load(a + i) | parity_load(b + i))) {
            i += 7;
            continue;
        }
        if (!a[i] && !b[i])
            continue;
        int w = parity_locate_byte(ndata, a[i], b[i]);
        if (w == RK_PARITY_LOC_UNKNOWN || (found != RK_PARITY_LOC_CLEAN && found != w)) {
            *bad = RK_PARITY_LOC_UNKNOWN;
            return 0;
        }
        found = w;
    }
    *bad = found;
    return 0;
}
