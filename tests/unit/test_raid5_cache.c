/* Tests of the raid5/raid6 stripe data cache over in-memory members (the second half of
 * test_raid5.c): adjacent writes gathered into full stripes read nothing, a sequential stream of
 * unaligned writes, concurrent writers of one stripe, and cached stripes dropped when the stripe
 * changes outside the cached path (a degraded write and a rebuild, write-zeroes, discard). */
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

#include "rk_test_r5.h"

/* ---- stripe data cache (adjacent writes gathered into full stripes) ---- */

/* Two adjacent writes that together cover exactly one stripe: the second reads nothing. */
static void test_cache_adjacent(void **state)
{
    static const int levels[] = {RK_LEVEL_RAID5, RK_LEVEL_RAID6};
    unsigned seed = 501;
    uint64_t ch = 64 * KiB;
    for (int li = 0; li < 2; li++) {
        struct arr a;
        uint32_t np = li ? 2 : 1, nd = 6 - np;
        uint64_t sb = nd * ch;
        arr_create(&a, levels[li], 6, (uint32_t)ch, 8);
        arr_write(&a, 0, a.size, &seed); /* old content everywhere */
        /* chunk aligned split: 2 chunks, then the other nd-2 */
        struct counts c = write_cost(&a, sb, 2 * ch, &seed);
        assert_true(c.reads > 0);
        c = write_cost(&a, sb + 2 * ch, sb - 2 * ch, &seed);
        assert_int_equal(c.reads, 0);
        assert_int_equal(c.writes, nd - 2 + np);
        /* unaligned split inside chunk 1, the second half first this time */
        c = write_cost(&a, 2 * sb + 100 * KiB, sb - 100 * KiB, &seed);
        assert_true(c.reads > 0);
        c = write_cost(&a, 2 * sb, 100 * KiB, &seed);
        assert_int_equal(c.reads, 0);
        assert_int_equal(c.writes, 2 + np);
        /* a cached stripe also takes small rewrites without reads */
        c = write_cost(&a, 2 * sb + 3 * ch + 4 * KiB, 8 * KiB, &seed);
        assert_int_equal(c.reads, 0);
        arr_check(&a);
        assert_int_equal(arr_check_members(&a, true), 0);
        arr_free(&a);
    }
}

/* Reads of one write whose stripe was never cached: t data chunks of a fresh stripe. */
static uint64_t fresh_cost(uint32_t nd, uint32_t np, uint32_t t)
{
    if (!t)
        return 0;
    return t + np < nd - t ? t + np : nd - t;
}

/* A sequential stream of unaligned 1M writes: each request's head completes the stripe the
 * previous one started and reads nothing; only the tail (first write into a stripe) reads. */
static void test_cache_stream(void **state)
{
    static const struct {
        int level;
        uint32_t n;
    } cases[] = {{RK_LEVEL_RAID5, 6}, {RK_LEVEL_RAID5, 4}, {RK_LEVEL_RAID6, 5}};
    unsigned seed = 502;
    uint64_t ch = 64 * KiB;
    for (int ci = 0; ci < 3; ci++) {
        struct arr a;
        uint32_t np = cases[ci].level == RK_LEVEL_RAID6 ? 2 : 1, nd = cases[ci].n - np;
        uint64_t sb = nd * ch, nreq = 12;
        arr_create(&a, cases[ci].level, cases[ci].n, (uint32_t)ch, nreq * MiB / sb + 2);
        arr_write(&a, 0, a.size, &seed);
        uint64_t total = 0, uncached = 0;
        for (uint64_t i = 0; i < nreq; i++) {
            uint64_t off = i * MiB, end = off + MiB;
            struct counts c = write_cost(&a, off, MiB, &seed);
            uint64_t want = fresh_cost(nd, np, (uint32_t)(end % sb / ch));
            uint64_t head = off % sb ? fresh_cost(nd, np, (uint32_t)(nd - off % sb / ch)) : 0;
            if (i == 0)
                want += head;
            assert_int_equal(c.reads, want);
            total += c.reads;
            uncached += want + (i ? head : 0);
        }
        assert_true(total < uncached);
        arr_check(&a);
        assert_int_equal(arr_check_members(&a, true), 0);
        arr_free(&a);
    }
}

/* Concurrent writers to the same stripes: each owns the chunks c % nthreads == id and writes
 * whole chunks or pieces of them; parity of every stripe is verified at the end. */
static void *cache_writer(void *arg)
{
    struct hammer *h = arg;
    struct arr *a = h->a;
    uint64_t ch = a->g.chunk, nch = a->size / ch;
    unsigned char *buf = malloc(ch);
    void *res = NULL;
    for (int i = 0; i < 600 && !res; i++) {
        uint64_t c =
            (uint64_t)rand_r(&h->seed) % (nch / (uint64_t)h->nthreads) * (uint64_t)h->nthreads +
            (uint64_t)h->id;
        uint64_t lo = 0, len = ch;
        if (rand_r(&h->seed) % 3 == 0) {
            lo = (uint64_t)rand_r(&h->seed) % (ch / 512) * 512;
            len = (1 + (uint64_t)rand_r(&h->seed) % ((ch - lo) / 512)) * 512;
        }
        rk_test_fill_rand_r(buf, len, &h->seed);
        if (rk_dev_write(a->raid, buf, len, c * ch + lo, 0))
            res = (void *)1;
        memcpy(a->shadow + c * ch + lo, buf, len);
    }
    free(buf);
    return res;
}

static void test_cache_concurrent(void **state)
{
    run_threads(cache_writer, 3, 700u, 24);
}

/* Cached stripes must not outlive changes made outside the cached path: a write while a slot
 * is failed (then rebuilt onto a new member), and write-zeroes / discard of the stripe. With a
 * stale entry the last write of each step would compute parity from old data. */
static void test_cache_invalidate(void **state)
{
    unsigned seed = 503;
    uint64_t ch = 64 * KiB, sb = 4 * ch;
    struct arr a;
    arr_create(&a, RK_LEVEL_RAID5, 5, (uint32_t)ch, 8);
    arr_write(&a, 0, a.size, &seed);
    /* stripe 1 fully cached: chunks 0-2 (reads chunk 3), then chunk 3 with no reads */
    write_cost(&a, sb, 3 * ch, &seed);
    assert_int_equal(write_cost(&a, sb + 3 * ch, ch, &seed).reads, 0);
    /* fail the slot of data chunk 1 of stripe 1 and write that chunk degraded */
    struct rk_raid_extent e;
    uint64_t run;
    assert_int_equal(rk_raid_map(&a.g, sb + ch, &e, 1, &run), 1);
    uint32_t slot = e.slot;
    assert_int_equal(rk_raid_fail_slot(a.raid, slot), 0);
    write_cost(&a, sb + ch, ch, &seed);
    /* rebuild onto a fresh member */
    struct rk_dev *old = a.m[slot], *fresh;
    assert_int_equal(rk_mem_open(DOFF + 8 * ch, 512, &fresh), 0);
    assert_int_equal(rk_raid_add_member(a.raid, slot, fresh), 0);
    assert_int_equal(rk_raid_rebuild_start(a.raid, slot, 0, 0), 0);
    assert_int_equal(rk_raid_job_wait(a.raid), 0);
    assert_int_equal(rk_raid_slot_state(a.raid, slot), RK_SLOT_ACTIVE);
    a.m[slot] = fresh;
    assert_int_equal(arr_check_members(&a, true), 0);
    /* chunk 0 of stripe 1: the entry is gone, so this one reads */
    assert_true(write_cost(&a, sb, ch, &seed).reads > 0);
    assert_int_equal(arr_check_members(&a, true), 0);

    /* stripe 2 cached, then zeroed whole (write-zeroes), then a single chunk written */
    write_cost(&a, 2 * sb, 3 * ch, &seed);
    assert_int_equal(write_cost(&a, 2 * sb + 3 * ch, ch, &seed).reads, 0);
    assert_int_equal(rk_dev_write_zeroes(a.raid, sb, 2 * sb, 0), 0);
    memset(a.shadow + 2 * sb, 0, sb);
    assert_true(write_cost(&a, 2 * sb + ch, ch, &seed).reads > 0);
    /* same with discard (zeroes whole stripes too) */
    write_cost(&a, 3 * sb, 3 * ch, &seed);
    assert_int_equal(write_cost(&a, 3 * sb + 3 * ch, ch, &seed).reads, 0);
    assert_int_equal(rk_dev_discard(a.raid, sb, 3 * sb), 0);
    memset(a.shadow + 3 * sb, 0, sb);
    assert_true(write_cost(&a, 3 * sb + 2 * ch, ch, &seed).reads > 0);
    arr_check(&a);
    assert_int_equal(arr_check_members(&a, true), 0);
    arr_free(&a);
    rk_dev_close(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_adjacent),
        cmocka_unit_test(test_cache_stream),
        cmocka_unit_test(test_cache_concurrent),
        cmocka_unit_test(test_cache_invalidate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
