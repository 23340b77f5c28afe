/* Tests of the RAID5/RAID6 parity module against the plain-C reference (ISA-L test style: fixed
 * seed, every member count 3..16, many lengths and buffer offsets, every 1/2-loss pattern). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <isa-l/erasure_code.h>

#include "raid/parity.h"

#define MAXB    (RK_PARITY_MAX_DATA + 2)
#define GUARD   512 /* canary bytes after every block: nothing may write past len */
#define CANARY  0x5a
#define MAX_LEN (64 * 1024)

/* Blocks of one stripe inside one page-aligned arena; block i starts at i*stride + off. */
struct stripe {
    uint8_t *arena;
    size_t stride;
    void *blk[MAXB];
    void *orig[MAXB]; /* pristine copies for comparison */
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    /* xorshift64*: deterministic across runs (fixed seed). */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static void fill_rand(void *buf, size_t len)
{
    uint8_t *b = buf;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = rng();
        memcpy(b + i, &v, 8);
    }
    for (; i < len; i++)
        b[i] = (uint8_t)(rng() >> 56);
}

static void stripe_init(struct stripe *s, int nb, size_t len, size_t off)
{
    s->stride = (len + GUARD + off + 4095) & ~(size_t)4095;
    assert_int_equal(posix_memalign((void **)&s->arena, 4096, s->stride * (size_t)nb * 2), 0);
    memset(s->arena, CANARY, s->stride * (size_t)nb * 2);
    for (int i = 0; i < nb; i++) {
        s->blk[i] = s->arena + (size_t)i * s->stride + off;
        s->orig[i] = s->arena + (size_t)(nb + i) * s->stride;
    }
}

static void stripe_free(struct stripe *s)
{
    free(s->arena);
    s->arena = NULL;
}

static void check_canary(const struct stripe *s, int nb, size_t len)
{
    for (int i = 0; i < nb; i++) {
        const uint8_t *g = (const uint8_t *)s->blk[i] + len;
        for (int j = 0; j < GUARD; j++)
            assert_int_equal(g[j], CANARY);
    }
}

static const size_t lengths[] = {512,      1024, 1536,  4096,  7 * 512,   33 * 512,
                                 65 * 512, 8192, 32768, 65536, 127 * 512, 65536 - 512};
static const size_t offsets[] = {0, 16, 512, 8, 64};

/* ---- field and matrix ---- */

static void test_gf_reference(void **state)
{
    unsigned char a[(RK_PARITY_MAX_DATA + 2) * RK_PARITY_MAX_DATA];
    (void)state;
    for (int x = 0; x < 256; x++)
        for (int y = 0; y < 256; y++)
            assert_int_equal(rk_parity_ref_gf_mul((uint8_t)x, (uint8_t)y),
                             gf_mul((unsigned char)x, (unsigned char)y));
    /* 0x11d: 2^8 = 0x1d, and g = 2 generates all 255 non-zero elements. */
    assert_int_equal(rk_parity_ref_gf_mul(0x80, 2), 0x1d);
    uint8_t v = 1;
    for (int i = 1; i < 255; i++) {
        v = rk_parity_ref_gf_mul(v, 2);
        assert_int_not_equal(v, 1);
    }
    assert_int_equal(rk_parity_ref_gf_mul(v, 2), 1);
    /* ISA-L's RS matrix rows k, k+1 are md's P and Q rows. */
    for (int k = 1; k <= RK_PARITY_MAX_DATA; k++) {
        gf_gen_rs_matrix(a, k + 2, k);
        uint8_t g = 1;
        for (int j = 0; j < k; j++) {
            assert_int_equal(a[k * k + j], 1);
            assert_int_equal(a[(k + 1) * k + j], g);
            g = rk_parity_ref_gf_mul(g, 2);
        }
    }
}

/* ---- generation ---- */

static void check_gen(int ndata, int nparity, size_t len, size_t off, int mis_parity_only)
{
    struct stripe s;
    int nb = ndata + nparity;
    stripe_init(&s, nb, len, off);
    void *p = s.blk[ndata], *q = nparity == 2 ? s.blk[ndata + 1] : NULL;
    if (mis_parity_only) {
        /* data aligned, only the parity outputs misaligned */
        for (int i = 0; i < ndata; i++)
            s.blk[i] = s.arena + (size_t)i * s.stride;
    }
    for (int i = 0; i < ndata; i++)
        fill_rand(s.blk[i], len);
    if (nparity == 1)
        assert_int_equal(rk_parity_xor(ndata, len, s.blk, p), 0);
    else
        assert_int_equal(rk_parity_pq(ndata, len, s.blk, p, q), 0);
    rk_parity_ref_pq(ndata, len, s.blk, s.orig[0], s.orig[1]);
    assert_memory_equal(p, s.orig[0], len);
    if (q)
        assert_memory_equal(q, s.orig[1], len);
    check_canary(&s, nb, len);
    stripe_free(&s);
}

static void test_gen_vs_ref(void **state)
{
    (void)state;
    for (int members = 3; members <= 16; members++) {
        for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) {
            for (size_t oi = 0; oi < sizeof(offsets) / sizeof(offsets[0]); oi++) {
                check_gen(members - 1, 1, lengths[li], offsets[oi], 0);
                check_gen(members - 2, 2, lengths[li], offsets[oi], 0);
            }
            check_gen(members - 1, 1, lengths[li], 16, 1);
            check_gen(members - 2, 2, lengths[li], 16, 1);
        }
    }
    /* Largest stripe and lengths that are not sector multiples (portable path). */
    check_gen(RK_PARITY_MAX_DATA, 1, 4096, 0, 0);
    check_gen(RK_PARITY_MAX_DATA, 2, 4096, 0, 0);
    static const size_t odd[] = {1, 7, 8, 31, 100, 4097, 65535};
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        check_gen(5, 1, odd[i], 0, 0);
        check_gen(5, 2, odd[i], 3, 0);
    }
}

static void test_gen_args(void **state)
{
    uint8_t a[512], b[512], p[512], q[512];
    void *d[2] = {a, b};
    (void)state;
    assert_int_equal(rk_parity_xor(0, 512, d, p), -EINVAL);
    assert_int_equal(rk_parity_xor(RK_PARITY_MAX_DATA + 1, 512, d, p), -EINVAL);
    assert_int_equal(rk_parity_xor(2, 512, d, NULL), -EINVAL);
    assert_int_equal(rk_parity_pq(2, 512, d, p, p), -EINVAL);
    assert_int_equal(rk_parity_pq(2, (size_t)1 << 40, d, p, q), -EINVAL);
    assert_int_equal(rk_parity_xor(2, 0, d, p), 0);
    /* ndata = 1 (raid6 over 3 members): P = Q = D0. */
    fill_rand(a, sizeof(a));
    assert_int_equal(rk_parity_pq(1, sizeof(a), d, p, q), 0);
    assert_memory_equal(p, a, sizeof(a));
    assert_memory_equal(q, a, sizeof(a));
}

/* ---- recovery ---- */

/* Build a consistent stripe, save it, lose `miss`, recover with ctx (and the reference), compare.
 */
static void check_recover(struct rk_parity_ctx *ctx, int ndata, int nparity, size_t len, size_t off,
                          const int *miss, int nmiss, int with_ref)
{
    struct stripe s;
    int nb = ndata + nparity;
    stripe_init(&s, nb, len, off);
    for (int i = 0; i < ndata; i++)
        fill_rand(s.blk[i], len);
    if (nparity == 1)
        assert_int_equal(rk_parity_xor(ndata, len, s.blk, s.blk[ndata]), 0);
    else
        assert_int_equal(rk_parity_pq(ndata, len, s.blk, s.blk[ndata], s.blk[ndata + 1]), 0);
    for (int i = 0; i < nb; i++)
        memcpy(s.orig[i], s.blk[i], len);
    for (int m = 0; m < nmiss; m++)
        memset(s.blk[miss[m]], 0xa5, len);
    assert_int_equal(rk_parity_recover(ctx, ndata, nparity, len, s.blk, miss, nmiss), 0);
    for (int i = 0; i < nb; i++)
        assert_memory_equal(s.blk[i], s.orig[i], len);
    if (with_ref) {
        for (int m = 0; m < nmiss; m++)
            memset(s.blk[miss[m]], 0x3c, len);
        assert_int_equal(rk_parity_ref_recover(ndata, nparity, len, s.blk, miss, nmiss), 0);
        for (int i = 0; i < nb; i++)
            assert_memory_equal(s.blk[i], s.orig[i], len);
    }
    check_canary(&s, nb, len);
    stripe_free(&s);
}

static void test_recover_all_patterns(void **state)
{
    struct rk_parity_ctx *ctx = NULL;
    (void)state;
    assert_int_equal(rk_parity_ctx_create(0, &ctx), 0);
    for (int members = 3; members <= 16; members++) {
        /* raid5: every single loss, several lengths/offsets. */
        int nd = members - 1;
        for (int x = 0; x < members; x++) {
            int miss[1] = {x};
            check_recover(ctx, nd, 1, 4096, 0, miss, 1, 1);
            check_recover(ctx, nd, 1, 33 * 512, 16, miss, 1, 0);
        }
        /* raid6: every single and every pair, aligned and misaligned, one odd length. */
        nd = members - 2;
        for (int x = 0; x < members; x++) {
            int miss1[1] = {x};
            check_recover(ctx, nd, 2, 4096, 0, miss1, 1, 1);
            check_recover(ctx, nd, 2, 3 * 512, 512, miss1, 1, 0);
            for (int y = x + 1; y < members; y++) {
                int miss[2] = {y, x}; /* unsorted on purpose */
                check_recover(ctx, nd, 2, 4096, 0, miss, 2, 1);
                check_recover(ctx, nd, 2, 5 * 512, 16, miss, 2, 0);
            }
        }
    }
    /* Every length for a few representative patterns: data+data, data+P, data+Q, P+Q. */
    for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) {
        static const int pats[][2] = {{0, 5}, {2, 6}, {3, 7}, {6, 7}, {0, 1}};
        for (size_t pi = 0; pi < 5; pi++)
            for (size_t oi = 0; oi < 3; oi++)
                check_recover(ctx, 6, 2, lengths[li], offsets[oi], pats[pi], 2, li < 4);
        int m1[1] = {4};
        check_recover(ctx, 5, 1, lengths[li], offsets[li % 3], m1, 1, 0);
    }
    /* Largest raid6 stripe, first and last data blocks. */
    int big[2] = {0, RK_PARITY_MAX_DATA - 3};
    check_recover(ctx, RK_PARITY_MAX_DATA - 1, 2, 4096, 0, big, 2, 1);
    rk_parity_ctx_destroy(ctx);
}

static void test_recover_args(void **state)
{
    uint8_t b[4][512];
    void *blk[4] = {b[0], b[1], b[2], b[3]};
    int two[2] = {0, 0}, bad[1] = {4}, one[1] = {0};
    (void)state;
    assert_int_equal(rk_parity_recover(NULL, 2, 3, 512, blk, one, 1), -EINVAL);
    assert_int_equal(rk_parity_recover(NULL, 3, 1, 512, blk, two, 2), -EINVAL); /* too many */
    assert_int_equal(rk_parity_recover(NULL, 2, 2, 512, blk, two, 2), -EINVAL); /* duplicate */
    assert_int_equal(rk_parity_recover(NULL, 2, 2, 512, blk, bad, 1), -EINVAL); /* range */
    assert_int_equal(rk_parity_recover(NULL, 0, 2, 512, blk, one, 1), -EINVAL);
    assert_int_equal(rk_parity_recover(NULL, 2, 2, 512, blk, NULL, 0), 0);
}

/* ---- read-modify-write ---- */

static void test_rmw(void **state)
{
    (void)state;
    static const size_t lens[] = {512, 4096, 3 * 512, 65536, 100, 1};
    for (int members = 3; members <= 16; members++) {
        for (int nparity = 1; nparity <= 2; nparity++) {
            int ndata = members - nparity;
            for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
                size_t len = lens[li], off = li % 2 ? 16 : 0;
                struct stripe s;
                uint8_t *dnew = malloc(len);
                assert_non_null(dnew);
                stripe_init(&s, ndata + nparity, len, off);
                for (int i = 0; i < ndata; i++)
                    fill_rand(s.blk[i], len);
                void *p = s.blk[ndata], *q = nparity == 2 ? s.blk[ndata + 1] : NULL;
                rk_parity_ref_pq(ndata, len, s.blk, p, q);
                int idx = (int)(rng() % (uint64_t)ndata);
                fill_rand(dnew, len);
                assert_int_equal(rk_parity_rmw(nparity, idx, len, p, q, s.blk[idx], dnew), 0);
                memcpy(s.blk[idx], dnew, len);
                rk_parity_ref_pq(ndata, len, s.blk, s.orig[0], s.orig[1]);
                assert_memory_equal(p, s.orig[0], len);
                if (q)
                    assert_memory_equal(q, s.orig[1], len);
                check_canary(&s, ndata + nparity, len);
                stripe_free(&s);
                free(dnew);
            }
        }
    }
    /* mul_into against the reference for every coefficient index. */
    uint8_t src[300], dst[300], ref[300];
    for (int idx = 0; idx < 255; idx += 7) {
        uint8_t c = 1;
        for (int i = 0; i < idx; i++)
            c = rk_parity_ref_gf_mul(c, 2);
        for (size_t len = 1; len <= sizeof(src); len += 61) {
            fill_rand(src, len);
            fill_rand(dst, len);
            for (size_t i = 0; i < len; i++)
                ref[i] = dst[i] ^ rk_parity_ref_gf_mul(c, src[i]);
            assert_int_equal(rk_parity_mul_into(idx, len, dst, src), 0);
            assert_memory_equal(dst, ref, len);
        }
    }
    assert_int_equal(rk_parity_mul_into(255, 16, dst, src), -EINVAL);
    assert_int_equal(rk_parity_rmw(3, 0, 16, dst, dst, src, src), -EINVAL);
    assert_int_equal(rk_parity_rmw(2, 0, 16, dst, NULL, src, src), -EINVAL);
}

/* ---- cache ---- */

static void test_cache(void **state)
{
    struct rk_parity_ctx *ctx = NULL;
    struct rk_parity_stats st;
    (void)state;
    assert_int_equal(rk_parity_ctx_create(4, &ctx), 0);

    int dd[2] = {1, 3}, dq[2] = {2, 7}, dp[2] = {0, 6}, pq[2] = {6, 7}, qo[1] = {7}, d1[1] = {2};
    check_recover(ctx, 6, 2, 4096, 0, dd, 2, 0);
    rk_parity_ctx_stats(ctx, &st);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.hits, 0);
    check_recover(ctx, 6, 2, 8192, 16, dd, 2, 0); /* same pattern, other length: hit */
    int dd_rev[2] = {3, 1};
    check_recover(ctx, 6, 2, 512, 0, dd_rev, 2, 0); /* order of missing[] does not matter */
    rk_parity_ctx_stats(ctx, &st);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.hits, 2);
    check_recover(ctx, 5, 2, 4096, 0, dd, 2, 0); /* other ndata: own entry */
    check_recover(ctx, 6, 2, 4096, 0, dq, 2, 0);
    check_recover(ctx, 6, 2, 4096, 0, dp, 2, 0);
    rk_parity_ctx_stats(ctx, &st);
    assert_int_equal(st.misses, 4);
    check_recover(ctx, 6, 2, 4096, 0, dq, 2, 0);
    check_recover(ctx, 6, 2, 4096, 0, dd, 2, 0);
    rk_parity_ctx_stats(ctx, &st);
    assert_int_equal(st.hits, 4);
    /* Fast paths do not touch the cache. */
    check_recover(ctx, 6, 2, 4096, 0, d1, 1, 0);
    check_recover(ctx, 6, 2, 4096, 0, pq, 2, 0);
    rk_parity_ctx_stats(ctx, &st);
    assert_int_equal(st.xor_fast, 1);
    assert_int_equal(st.recompute, 1);
    assert_int_equal(st.misses, 4);
    /* Fifth pattern evicts the oldest (round-robin); results stay correct throughout. */
    check_recover(ctx, 6, 2, 4096, 0, qo, 1, 0);
    rk_parity_ctx_stats(ctx, &st);
    assert_int_equal(st.misses, 5);
    check_recover(ctx, 6, 2, 4096, 0, dd, 2, 0); /* was evicted: miss again */
    rk_parity_ctx_stats(ctx, &st);
    assert_int_equal(st.misses, 6);
    /* Churn through many patterns with a tiny cache; every rebuild must stay exact. */
    for (int round = 0; round < 3; round++)
        for (int x = 0; x < 10; x++)
            for (int y = x + 1; y < 10; y++) {
                int m[2] = {x, y};
                check_recover(ctx, 8, 2, 1024, 0, m, 2, 0);
            }
    rk_parity_ctx_stats(ctx, &st);
    assert_true(st.hits >= 4);
    rk_parity_ctx_destroy(ctx);
}

/* Two threads share a ctx with a small cache and rebuild different patterns concurrently. */
struct thr_arg {
    struct rk_parity_ctx *ctx;
    int ndata;
    int failures;
};

static void *thr_main(void *p)
{
    struct thr_arg *a = p;
    enum { LEN = 4096 };
    uint8_t *buf = aligned_alloc(4096, (size_t)(a->ndata + 2) * LEN * 2);
    void *blk[MAXB];
    if (!buf) {
        a->failures++;
        return NULL;
    }
    for (int i = 0; i < a->ndata + 2; i++)
        blk[i] = buf + (size_t)i * LEN;
    uint8_t *orig = buf + (size_t)(a->ndata + 2) * LEN;
    for (int i = 0; i < a->ndata * LEN; i++)
        buf[i] = (uint8_t)(i * 31 + a->ndata);
    rk_parity_pq(a->ndata, LEN, blk, blk[a->ndata], blk[a->ndata + 1]);
    memcpy(orig, buf, (size_t)(a->ndata + 2) * LEN);
    for (int it = 0; it < 200; it++) {
        int m[2] = {it % a->ndata, a->ndata - 1 - (it / 3) % (a->ndata - 1)};
        if (m[0] == m[1])
            m[1] = a->ndata + 1;
        memset(blk[m[0]], 0, LEN);
        memset(blk[m[1]], 0, LEN);
        if (rk_parity_recover(a->ctx, a->ndata, 2, LEN, blk, m, 2) != 0 ||
            memcmp(buf, orig, (size_t)(a->ndata + 2) * LEN) != 0)
            a->failures++;
    }
    free(buf);
    return NULL;
}

static void test_cache_threads(void **state)
{
    struct rk_parity_ctx *ctx = NULL;
    pthread_t t[2];
    struct thr_arg a[2];
    (void)state;
    assert_int_equal(rk_parity_ctx_create(3, &ctx), 0);
    for (int i = 0; i < 2; i++) {
        a[i] = (struct thr_arg){.ctx = ctx, .ndata = 6 + i * 3, .failures = 0};
        assert_int_equal(pthread_create(&t[i], NULL, thr_main, &a[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].failures, 0);
    }
    rk_parity_ctx_destroy(ctx);
}

/* Syndromes of a stripe whose blocks (data, P, Q: nd + 2 of len bytes) may have been corrupted
 * after the parity was computed: ps = P ^ P(data), qs = Q ^ Q(data). */
static void locate_syndromes(int nd, size_t len, uint8_t **blk, uint8_t *ps, uint8_t *qs)
{
    void *d[RK_PARITY_MAX_DATA];
    for (int i = 0; i < nd; i++)
        d[i] = blk[i];
    assert_int_equal(rk_parity_pq(nd, len, d, ps, qs), 0);
    assert_int_equal(rk_parity_xor_into(len, ps, blk[nd]), 0);
    assert_int_equal(rk_parity_xor_into(len, qs, blk[nd + 1]), 0);
}

/* One length of test_xor_into: every dst offset 0..7, src offsets 0..7 by ostep. */
static void xor_into_case(uint8_t *d, uint8_t *s, uint8_t *ref, size_t len, size_t ostep)
{
    for (size_t od = 0; od < 8; od++)
        for (size_t os = 0; os < 8; os += ostep) {
            for (size_t i = 0; i < len + 8; i++) {
                d[i] = (uint8_t)rng();
                s[i] = (uint8_t)rng();
            }
            memset(d + od + len, CANARY, GUARD);
            for (size_t i = 0; i < len; i++)
                ref[i] = d[od + i] ^ s[os + i];
            assert_int_equal(rk_parity_xor_into(len, d + od, s + os), 0);
            for (size_t i = 0; i < len; i++)
                assert_int_equal(d[od + i], ref[i]);
            for (size_t i = 0; i < GUARD; i++)
                assert_int_equal(d[od + len + i], CANARY);
        }
    assert_int_equal(rk_parity_xor_into(len, s, s), 0); /* dst == src: zeroes it */
    for (size_t i = 0; i < len; i++)
        assert_int_equal(s[i], 0);
}

/* rk_parity_xor_into against a byte loop: every length 0..300 and some long ones, every pair of
 * buffer offsets (the 32-byte vector steps, the 8-byte words, the byte tail), dst == src, and
 * nothing written past len. */
static void test_xor_into(void **state)
{
    (void)state;
    static const size_t longs[] = {4096, 4096 + 1, MAX_LEN - 3, MAX_LEN};
    uint8_t *d = malloc(MAX_LEN + 8 + GUARD), *s = malloc(MAX_LEN + 8), *ref = malloc(MAX_LEN);
    assert_non_null(d);
    assert_non_null(s);
    assert_non_null(ref);
    for (size_t len = 0; len <= 300; len++)
        xor_into_case(d, s, ref, len, 1);
    for (size_t i = 0; i < sizeof(longs) / sizeof(longs[0]); i++)
        xor_into_case(d, s, ref, longs[i], 3);
    assert_int_equal(rk_parity_xor_into(16, NULL, s), -EINVAL);
    assert_int_equal(rk_parity_xor_into(16, d, NULL), -EINVAL);
    free(d);
    free(s);
    free(ref);
}

/* rk_parity_locate names the one corrupted block (any data block, P, Q) of stripes of every
 * width, finds nothing in a clean stripe, and refuses to name one when two data blocks differ. */
static void test_locate(void **state)
{
    (void)state;
    static const int widths[] = {1, 2, 3, 8, RK_PARITY_MAX_DATA};
    const size_t len = 4096;
    uint8_t *blk[RK_PARITY_MAX_DATA + 2], *ps = NULL, *qs = NULL;
    for (int i = 0; i < RK_PARITY_MAX_DATA + 2; i++)
        assert_int_equal(posix_memalign((void **)&blk[i], 64, len), 0);
    assert_int_equal(posix_memalign((void **)&ps, 64, len), 0);
    assert_int_equal(posix_memalign((void **)&qs, 64, len), 0);
    for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
        int nd = widths[w], bad = 99;
        void *d[RK_PARITY_MAX_DATA];
        for (int i = 0; i < nd; i++) {
            fill_rand(blk[i], len);
            d[i] = blk[i];
        }
        assert_int_equal(rk_parity_pq(nd, len, d, blk[nd], blk[nd + 1]), 0);
        locate_syndromes(nd, len, blk, ps, qs);
        assert_int_equal(rk_parity_locate(nd, len, ps, qs, &bad), 0);
        assert_int_equal(bad, RK_PARITY_LOC_CLEAN);
        for (int t = 0; t < nd + 2; t++) {
            uint8_t save[512];
            size_t at = (size_t)(rng() % (len - sizeof(save)));
            memcpy(save, blk[t] + at, sizeof(save));
            for (size_t k = 0; k < sizeof(save); k++)
                blk[t][at + k] ^= (uint8_t)(1 + rng() % 255);
            locate_syndromes(nd, len, blk, ps, qs);
            assert_int_equal(rk_parity_locate(nd, len, ps, qs, &bad), 0);
            assert_int_equal(bad, t);
            if (t < nd) { /* the stated correction restores the block */
                assert_int_equal(rk_parity_xor_into(len, blk[t], ps), 0);
                assert_memory_equal(blk[t] + at, save, sizeof(save));
            } else {
                memcpy(blk[t] + at, save, sizeof(save));
            }
        }
        if (nd >= 2) {
            blk[0][100] ^= 0x01;
            blk[nd - 1][100] ^= 0x80;
            blk[nd - 1][3000] ^= 0x42;
            locate_syndromes(nd, len, blk, ps, qs);
            assert_int_equal(rk_parity_locate(nd, len, ps, qs, &bad), 0);
            assert_int_equal(bad, RK_PARITY_LOC_UNKNOWN);
        }
    }
    int bad = 7;
    assert_int_equal(rk_parity_locate(0, len, ps, qs, &bad), -EINVAL);
    assert_int_equal(rk_parity_locate(RK_PARITY_MAX_DATA + 1, len, ps, qs, &bad), -EINVAL);
    assert_int_equal(rk_parity_locate(2, len, NULL, qs, &bad), -EINVAL);
    assert_int_equal(rk_parity_locate(2, len, ps, qs, NULL), -EINVAL);
    assert_int_equal(bad, 7);
    for (int i = 0; i < RK_PARITY_MAX_DATA + 2; i++)
        free(blk[i]);
    free(ps);
    free(qs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gf_reference), cmocka_unit_test(test_gen_vs_ref),
        cmocka_unit_test(test_gen_args),     cmocka_unit_test(test_recover_all_patterns),
        cmocka_unit_test(test_recover_args), cmocka_unit_test(test_rmw),
        cmocka_unit_test(test_cache),        cmocka_unit_test(test_cache_threads),
        cmocka_unit_test(test_locate),       cmocka_unit_test(test_xor_into),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
