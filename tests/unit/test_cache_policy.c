/* Unit tests of the cache policy (src/cache/policy.c): sequential detection with interleaved
 * streams and cutoff 0, n-hit admission, scan resistance of a simulated cache, eviction only of
 * evictable blocks, -ENOSPC, bad parameters and the memory bound. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cache/policy.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)

static struct rk_cache_policy *mk(uint64_t blocks, uint64_t cutoff, uint32_t hits, uint32_t streams)
{
    struct rk_cache_policy_params p;
    rk_cache_policy_defaults(&p, blocks, 64 * KiB);
    p.seq_cutoff = cutoff;
    p.admit_hits = hits;
    p.streams = streams;
    struct rk_cache_policy *pol = rk_cache_policy_new(&p);
    assert_non_null(pol);
    return pol;
}

static void test_defaults_and_names(void **state)
{
    struct rk_cache_policy_params p;
    rk_cache_policy_defaults(&p, 100, 64 * KiB);
    assert_true(p.cache_blocks == 100 && p.block_size == 64 * KiB);
    assert_true(p.seq_cutoff == 4 * MiB && p.admit_hits == 2 && p.streams == 64);
    assert_string_equal(rk_cache_reason_name(RK_CACHE_ADMIT), "admit");
    assert_string_equal(rk_cache_reason_name(RK_CACHE_BYPASS_SEQUENTIAL), "sequential");
    assert_string_equal(rk_cache_reason_name(RK_CACHE_BYPASS_COLD), "cold");
    assert_string_equal(rk_cache_reason_name(RK_CACHE_BYPASS_UNALIGNED), "unaligned");
    assert_string_equal(rk_cache_reason_name(RK_CACHE_REASONS), "?");
    assert_string_equal(rk_cache_reason_name((enum rk_cache_reason) - 1), "?");
}

static void test_bad_params(void **state)
{
    struct rk_cache_policy_params good, p;
    rk_cache_policy_defaults(&good, 16, 4096);
    struct rk_cache_policy *pol = rk_cache_policy_new(&good);
    assert_non_null(pol);
    rk_cache_policy_free(pol);
    rk_cache_policy_free(NULL);

    errno = 0;
    assert_null(rk_cache_policy_new(NULL));
    assert_int_equal(errno, EINVAL);
    for (int c = 0; c < 9; c++) {
        p = good;
        switch (c) {
        case 0:
            p.cache_blocks = 0;
            break;
        case 1:
            p.block_size = 2048;
            break;
        case 2:
            p.block_size = 4096 + 512;
            break;
        case 3:
            p.block_size = 0;
            break;
        case 4:
            p.admit_hits = 0;
            break;
        case 5:
            p.admit_hits = 256;
            break;
        case 6:
            p.streams = 0;
            break;
        case 7:
            p.streams = 4097;
            break;
        case 8:
            p.cache_blocks = UINT64_MAX;
            break;
        }
        errno = 0;
        assert_null(rk_cache_policy_new(&p));
        assert_int_equal(errno, EINVAL);
    }
}

static void test_sequential_single(void **state)
{
    struct rk_cache_policy *pol = mk(64, 1 * MiB, 2, 64);
    /* 256 requests of 4 KiB = exactly the cutoff: not longer, so cached. */
    for (int i = 0; i < 256; i++)
        assert_false(rk_cache_policy_sequential(pol, 10 * MiB + i * 4 * KiB, 4 * KiB));
    assert_true(rk_cache_policy_sequential(pol, 11 * MiB, 4 * KiB));
    assert_true(rk_cache_policy_sequential(pol, 11 * MiB + 4 * KiB, 64 * KiB));
    /* A request elsewhere starts a new stream; one longer than the cutoff bypasses at once. */
    assert_false(rk_cache_policy_sequential(pol, 0, 4 * KiB));
    assert_true(rk_cache_policy_sequential(pol, 100 * MiB, 1 * MiB + 4 * KiB));
    assert_false(rk_cache_policy_sequential(pol, 0, 0)); /* empty request: nothing */
    /* A restart at the beginning of the run is not a continuation. */
    assert_false(rk_cache_policy_sequential(pol, 10 * MiB, 4 * KiB));
    rk_cache_policy_free(pol);
}

static void test_sequential_interleaved(void **state)
{
    enum { NS = 8 };
    struct rk_cache_policy *pol = mk(64, 256 * KiB, 2, 16);
    uint64_t next[NS];
    for (int s = 0; s < NS; s++)
        next[s] = (uint64_t)s * 1024 * MiB;
    uint64_t rnd = 12345;
    /* 8 streams of 8 KiB requests, round robin, with random 4 KiB requests between them: the
     * table (16) holds the 8 streams plus the recent random ones, LRU keeps the streams. */
    for (int round = 0; round < 40; round++) {
        for (int s = 0; s < NS; s++) {
            bool seq = rk_cache_policy_sequential(pol, next[s], 8 * KiB);
            next[s] += 8 * KiB;
            /* Stream length after this request: (round + 1) * 8 KiB; cutoff = 32 requests. */
            assert_int_equal(seq, round + 1 > 32);
            rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t off = (16 + (rnd >> 40) % 1000000) * 1024 * MiB;
            assert_false(rk_cache_policy_sequential(pol, off, 4 * KiB));
        }
    }
    rk_cache_policy_free(pol);

    /* More interleaved streams than the table holds: LRU replacement forgets each stream before
     * it comes back, so none is detected (the documented limit of `streams`). */
    pol = mk(64, 16 * KiB, 2, 4);
    for (int s = 0; s < NS; s++)
        next[s] = (uint64_t)s * 1024 * MiB;
    for (int round = 0; round < 20; round++)
        for (int s = 0; s < NS; s++) {
            assert_false(rk_cache_policy_sequential(pol, next[s], 8 * KiB));
            next[s] += 8 * KiB;
        }
    rk_cache_policy_free(pol);
}

static void test_cutoff_zero(void **state)
{
    struct rk_cache_policy *pol = mk(64, 0, 2, 64);
    for (int i = 0; i < 10000; i++)
        assert_false(rk_cache_policy_sequential(pol, (uint64_t)i * MiB, MiB));
    assert_false(rk_cache_policy_sequential(pol, 0, UINT64_MAX));
    assert_false(rk_cache_policy_sequential(pol, UINT64_MAX - 4096, 8192)); /* saturates */
    rk_cache_policy_free(pol);
}

static void test_admission(void **state)
{
    struct rk_cache_policy *pol = mk(64, 0, 1, 64);
    for (uint64_t b = 0; b < 1000; b++)
        assert_true(rk_cache_policy_admit_read(pol, b));
    rk_cache_policy_free(pol);

    pol = mk(64, 0, 3, 64);
    assert_false(rk_cache_policy_admit_read(pol, 7));
    assert_false(rk_cache_policy_admit_read(pol, 9));
    assert_false(rk_cache_policy_admit_read(pol, 7));
    assert_true(rk_cache_policy_admit_read(pol, 7));
    /* Admitted: forgotten, so it starts again from zero. */
    assert_false(rk_cache_policy_admit_read(pol, 7));
    assert_false(rk_cache_policy_admit_read(pol, 9));
    assert_true(rk_cache_policy_admit_read(pol, 9));
    rk_cache_policy_free(pol);
}

/* A cache simulated over the policy: bblock -> cblock map, free slots, hit counting. */
struct sim {
    struct rk_cache_policy *pol;
    uint64_t cblocks;
    int64_t *map;   /* bblock -> cblock or -1 */
    uint64_t *back; /* cblock -> bblock */
    uint64_t used, hits, misses;
};

static bool always(void *ctx, uint64_t cb)
{
    return true;
}

static void sim_init(struct sim *s, uint64_t cblocks, uint64_t bblocks, uint32_t hits)
{
    s->pol = mk(cblocks, 4 * MiB, hits, 64);
    s->cblocks = cblocks;
    s->map = malloc(bblocks * sizeof(*s->map));
    s->back = malloc(cblocks * sizeof(*s->back));
    assert_non_null(s->map);
    assert_non_null(s->back);
    for (uint64_t i = 0; i < bblocks; i++)
        s->map[i] = -1;
    s->used = s->hits = s->misses = 0;
}

static void sim_free(struct sim *s)
{
    rk_cache_policy_free(s->pol);
    free(s->map);
    free(s->back);
}

static void sim_read(struct sim *s, uint64_t b)
{
    if (s->map[b] >= 0) {
        s->hits++;
        rk_cache_policy_touch(s->pol, (uint64_t)s->map[b]);
        return;
    }
    s->misses++;
    if (!rk_cache_policy_admit_read(s->pol, b))
        return;
    uint64_t cb;
    if (s->used < s->cblocks) {
        cb = s->used++;
    } else {
        assert_int_equal(rk_cache_policy_evict(s->pol, always, NULL, &cb), 0);
        s->map[s->back[cb]] = -1;
    }
    s->map[b] = (int64_t)cb;
    s->back[cb] = b;
    rk_cache_policy_insert(s->pol, cb);
}

static void test_scan_resistance(void **state)
{
    enum { C = 1024, HOT = 768, SCAN = 10 * C };
    struct sim s;
    sim_init(&s, C, HOT + SCAN, 2);
    for (int pass = 0; pass < 4; pass++)
        for (uint64_t b = 0; b < HOT; b++)
            sim_read(&s, b);
    for (uint64_t b = 0; b < HOT; b++)
        assert_true(s.map[b] >= 0);
    /* One pass over 10x the cache, interleaved with hot reads (one per 4 scan reads). */
    uint64_t h = 0;
    for (uint64_t i = 0; i < SCAN; i++) {
        sim_read(&s, HOT + i);
        if (i % 4 == 0)
            sim_read(&s, h++ % HOT);
    }
    for (uint64_t b = 0; b < HOT; b++)
        assert_true(s.map[b] >= 0);
    s.hits = s.misses = 0;
    for (uint64_t b = 0; b < HOT; b++)
        sim_read(&s, b);
    assert_true(s.hits == HOT);
    sim_free(&s);

    /* Without the filter (admit_hits 1) the same scan does flush it: the test has teeth. */
    sim_init(&s, C, HOT + SCAN, 1);
    for (int pass = 0; pass < 4; pass++)
        for (uint64_t b = 0; b < HOT; b++)
            sim_read(&s, b);
    for (uint64_t i = 0; i < SCAN; i++)
        sim_read(&s, HOT + i);
    uint64_t left = 0;
    for (uint64_t b = 0; b < HOT; b++)
        left += s.map[b] >= 0;
    assert_true(left < HOT / 2);
    sim_free(&s);
}

static void test_gclock_keeps_frequent(void **state)
{
    struct rk_cache_policy *pol = mk(8, 0, 1, 1);
    for (uint64_t i = 0; i < 8; i++)
        rk_cache_policy_insert(pol, i);
    for (int k = 0; k < 3; k++)
        rk_cache_policy_touch(pol, 5);
    rk_cache_policy_touch(pol, 2);
    /* Evict-and-reinsert 6 times: the once-inserted blocks go first, 5 and 2 stay. */
    for (int k = 0; k < 6; k++) {
        uint64_t cb = 99;
        assert_int_equal(rk_cache_policy_evict(pol, always, NULL, &cb), 0);
        assert_true(cb != 5 && cb != 2 && cb < 8);
        rk_cache_policy_insert(pol, cb);
    }
    rk_cache_policy_free(pol);
}

struct evict_ctx {
    bool held[64];
    unsigned calls;
};

static bool only_mult3(void *ctx, uint64_t cb)
{
    struct evict_ctx *e = ctx;
    e->calls++;
    assert_true(cb < 64);
    return cb % 3 == 0;
}

static bool never(void *ctx, uint64_t cb)
{
    return false;
}

static void test_evict_only_evictable(void **state)
{
    struct rk_cache_policy *pol = mk(64, 0, 1, 1);
    struct evict_ctx e = {0};
    uint64_t cb = 77;
    assert_int_equal(rk_cache_policy_evict(pol, always, NULL, &cb), -ENOSPC); /* empty */
    assert_true(cb == 77);
    for (uint64_t i = 0; i < 64; i++) {
        rk_cache_policy_insert(pol, i);
        rk_cache_policy_touch(pol, i);
        e.held[i] = true;
    }
    rk_cache_policy_insert(pol, 3);   /* again: no-op */
    rk_cache_policy_touch(pol, 1000); /* out of range: no-op */
    rk_cache_policy_remove(pol, 1000);
    rk_cache_policy_remove(pol, 6); /* removed: never returned */
    e.held[6] = false;
    unsigned got = 0;
    for (;;) {
        int r = rk_cache_policy_evict(pol, only_mult3, &e, &cb);
        if (r == -ENOSPC)
            break;
        assert_int_equal(r, 0);
        assert_true(cb % 3 == 0 && e.held[cb]);
        e.held[cb] = false;
        got++;
    }
    assert_int_equal(got, 21); /* 0, 3, ..., 63 = 22 multiples of 3, minus the removed 6 */
    /* Only dirty blocks left: -ENOSPC after one rotation of can_evict calls, not a spin. */
    e.calls = 0;
    assert_int_equal(rk_cache_policy_evict(pol, only_mult3, &e, &cb), -ENOSPC);
    assert_true(e.calls <= 64);
    assert_int_equal(rk_cache_policy_evict(pol, never, NULL, &cb), -ENOSPC);
    rk_cache_policy_free(pol);
}

static void test_memory_bound(void **state)
{
    /* 64 GiB of cache at 64 KiB: 1 Mi blocks; the per-TiB figure scales linearly. */
    uint64_t blocks = 1u << 20;
    struct rk_cache_policy *pol = mk(blocks, 4 * MiB, 2, 64);
    size_t m = rk_cache_policy_memory(pol);
    assert_true(m >= blocks * 5);
    assert_true(m <= blocks * 5 + 64 * 1024);
    uint64_t per_tib = (uint64_t)m * 16; /* 16 Mi blocks per TiB */
    print_message("policy memory: %zu bytes for %llu blocks = %llu MiB per TiB at 64 KiB\n", m,
                  (unsigned long long)blocks, (unsigned long long)(per_tib >> 20));
    assert_true(per_tib <= 128 * MiB);
    rk_cache_policy_free(pol);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_names),   cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_sequential_single),    cmocka_unit_test(test_sequential_interleaved),
        cmocka_unit_test(test_cutoff_zero),          cmocka_unit_test(test_admission),
        cmocka_unit_test(test_scan_resistance),      cmocka_unit_test(test_gclock_keeps_frequent),
        cmocka_unit_test(test_evict_only_evictable), cmocka_unit_test(test_memory_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
