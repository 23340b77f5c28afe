/* Resync job tests over in-memory members whose data areas hold different random bytes (as
 * members that could not be zeroed): a full resync (several 4 MiB steps in flight, the fast
 * path) leaves a scrub at 0 and copy levels holding the first copy's content (slot order: the
 * copy reads take meanwhile); raid10 with an odd member count (copies across step boundaries);
 * a degraded raid1 falls back to the scrub hook; a bitmap resync touches only its regions; a
 * full resync from an offset also takes the bitmap's regions below it (a resume after a crash);
 * a rate limit still ends. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define DOFF   (1 * MiB)
#define DSIZE  (18 * MiB) /* 4 MiB steps and a partial last one */
#define REGION (1 * MiB)

struct arr {
    struct rk_raid_geom g;
    struct rk_dev *mem[6];
    struct rk_dev *raid;
    uint8_t *orig0; /* slot 0's data area before the resync */
};

/* Members of random data areas (different per slot), raid open, bitmap attached without an
 * on-disk area; bits: regions to mark for a bitmap resync (NULL: none). */
static void arr_open(struct arr *a, int level, uint32_t n, const uint8_t *bits)
{
    memset(a, 0, sizeof(*a));
    rk_test_geom(&a->g, level, n, 64 * KiB, DOFF, DSIZE);
    rk_test_mem_members(a->mem, n, DOFF + DSIZE, 512);
    uint8_t *buf = malloc(DSIZE);
    assert_non_null(buf);
    /* xorshift is linear over GF(2): seeds whose XOR is not 0, or parity would match. */
    static const uint64_t seed[6] = {11, 101, 1009, 10007, 100003, 1000003};
    for (uint32_t i = n; i-- > 0;) {
        rk_test_fill64(buf, DSIZE, seed[i]);
        assert_int_equal(rk_dev_write(a->mem[i], buf, DSIZE, DOFF, 0), 0);
    }
    a->orig0 = buf; /* slot 0's, written last */
    assert_int_equal(rk_raid_open(&a->g, a->mem, NULL, &a->raid), 0);
    struct rk_raid_bitmap_opts o = {.region = REGION, .bits = bits};
    assert_int_equal(rk_raid_bitmap_attach(a->raid, &o), 0);
}

static void arr_close(struct arr *a)
{
    rk_dev_close(a->raid);
    rk_test_close_members(a->mem, a->g.members);
    free(a->orig0);
}

static void resync(struct arr *a, bool full, uint64_t from, uint64_t rate)
{
    struct rk_raid_progress p;
    assert_int_equal(rk_raid_resync_start(a->raid, full, from, rate), 0);
    assert_int_equal(rk_raid_job_wait(a->raid), 0);
    assert_int_equal(rk_raid_progress(a->raid, &p), 0);
    assert_int_equal(p.kind, RK_JOB_RESYNC);
    assert_int_equal(p.state, RK_JOB_DONE);
    assert_int_equal(p.pos, p.end);
}

/* A scrub without repair: the mismatches found. */
static uint64_t scrub_count(struct arr *a)
{
    struct rk_raid_progress p;
    assert_int_equal(rk_raid_scrub_start(a->raid, false, 0), 0);
    assert_int_equal(rk_raid_job_wait(a->raid), 0);
    assert_int_equal(rk_raid_progress(a->raid, &p), 0);
    return p.last_mismatches;
}

/* Every slot's data area [0, len) equals slot 0's original content. */
static void copies_hold_slot0(struct arr *a, uint64_t len)
{
    uint8_t *buf = malloc(len);
    for (uint32_t s = 0; s < a->g.members; s++) {
        assert_int_equal(rk_dev_read(a->mem[s], buf, len, DOFF), 0);
        assert_memory_equal(buf, a->orig0, len);
    }
    free(buf);
}

static void full_case(int level, uint32_t n)
{
    struct arr a;
    arr_open(&a, level, n, NULL);
    assert_true(scrub_count(&a) > 0);
    /* A resync never changes what the array reads (parity levels: the data chunks). */
    uint64_t asize = a.raid->size;
    uint8_t *before = malloc(asize), *after = malloc(asize);
    assert_non_null(before);
    assert_non_null(after);
    assert_int_equal(rk_dev_read(a.raid, before, asize, 0), 0);
    resync(&a, true, 0, 0);
    assert_int_equal(scrub_count(&a), 0);
    assert_int_equal(rk_dev_read(a.raid, after, asize, 0), 0);
    if (level != RK_LEVEL_RAID1 && level != RK_LEVEL_RAID10)
        assert_memory_equal(before, after, asize);
    free(before);
    free(after);
    if (level == RK_LEVEL_RAID1)
        copies_hold_slot0(&a, DSIZE);
    arr_close(&a);
}

static void test_full_raid1_three_copies(void **state)
{
    (void)state;
    full_case(RK_LEVEL_RAID1, 3); /* the first copy wins, not a majority vote */
}

static void test_full_raid10_odd(void **state)
{
    (void)state;
    full_case(RK_LEVEL_RAID10, 3);
    full_case(RK_LEVEL_RAID10, 4);
}

static void test_full_raid5_raid6(void **state)
{
    (void)state;
    full_case(RK_LEVEL_RAID5, 4);
    full_case(RK_LEVEL_RAID6, 5);
}

/* raid1 of three with slot 0 failed: the fast path declines, the scrub hook makes the two
 * live copies equal. */
static void test_degraded_falls_back(void **state)
{
    (void)state;
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID1, 3, NULL);
    assert_int_equal(rk_raid_fail_slot(a.raid, 0), 0);
    resync(&a, true, 0, 0);
    assert_int_equal(scrub_count(&a), 0);
    arr_close(&a);
}

/* A bitmap resync of regions 2 and 9 only: a scrub still finds the other stripes of the
 * random members; regions 2 and 9 hold slot 0's content on every copy. */
static void test_bitmap_regions_only(void **state)
{
    (void)state;
    uint8_t bits[4] = {0};
    bits[0] = 1u << 2;
    bits[1] = 1u << 1; /* region 9 */
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID1, 2, bits);
    uint64_t before = scrub_count(&a);
    resync(&a, false, 0, 0);
    uint64_t after = scrub_count(&a);
    assert_int_equal(after, before - 2 * REGION / (64 * KiB));
    uint8_t *buf = malloc(REGION);
    for (uint64_t reg = 2; reg <= 9; reg += 7) {
        assert_int_equal(rk_dev_read(a.mem[1], buf, REGION, DOFF + reg * REGION), 0);
        assert_memory_equal(buf, a.orig0 + reg * REGION, REGION);
    }
    free(buf);
    arr_close(&a);
}

/* A full resync from 8 MiB with region 1 marked (written below the checkpoint before a crash):
 * region 1 and [8 MiB, end) are resynced, region 3 is left as it was. */
static void test_full_from_takes_marked_below(void **state)
{
    (void)state;
    uint8_t bits[4] = {1u << 1};
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID1, 2, bits);
    resync(&a, true, 8 * MiB, 0);
    uint8_t *buf = malloc(DSIZE);
    assert_int_equal(rk_dev_read(a.mem[1], buf, DSIZE, DOFF), 0);
    assert_memory_equal(buf + REGION, a.orig0 + REGION, REGION);
    assert_memory_equal(buf + 8 * MiB, a.orig0 + 8 * MiB, DSIZE - 8 * MiB);
    assert_memory_not_equal(buf + 3 * REGION, a.orig0 + 3 * REGION, REGION);
    free(buf);
    arr_close(&a);
}

/* Rate limited (64 MiB/s, 4 MiB steps claimed in time): still ends, scrub 0. */
static void test_rate_limited(void **state)
{
    (void)state;
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID5, 3, NULL);
    resync(&a, true, 0, 64 * MiB);
    assert_int_equal(scrub_count(&a), 0);
    arr_close(&a);
}

int main(void)
{
    rk_log_set_level(getenv("DBG") ? RK_LOG_DEBUG : RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_raid1_three_copies),
        cmocka_unit_test(test_full_raid10_odd),
        cmocka_unit_test(test_full_raid5_raid6),
        cmocka_unit_test(test_degraded_falls_back),
        cmocka_unit_test(test_bitmap_regions_only),
        cmocka_unit_test(test_full_from_takes_marked_below),
        cmocka_unit_test(test_rate_limited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
