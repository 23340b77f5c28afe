/* Bad ranges preloaded into the raid engine (rk_raid_add_bad_range, as assembly does from the
 * superblock): never served from their slot, EIO when no other copy is left, dropped on replace. */
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

#define DOFF  (1 * MiB)
#define DSIZE (4 * MiB)
#define BAD   (2 * MiB) /* data-area offset of the preloaded range (raid1: = array offset) */
#define BLEN  (64 * KiB)

struct bfx {
    struct rk_raid_geom g;
    struct rk_dev *mem[2];
    struct rk_dev *fresh;
    struct rk_dev *raid;
    uint8_t *shadow;
};

static struct bfx *bfx_open(void)
{
    struct bfx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    rk_test_geom(&f->g, RK_LEVEL_RAID1, 2, 64 * KiB, DOFF, DSIZE);
    rk_test_mem_members(f->mem, 2, DOFF + DSIZE, 512);
    assert_int_equal(rk_mem_open(DOFF + DSIZE, 512, &f->fresh), 0);
    assert_int_equal(rk_raid_open(&f->g, f->mem, NULL, &f->raid), 0);
    f->shadow = rk_test_pattern_shadow(f->raid, 99);
    /* Slot 1's copy of the range is garbage, as after a rebuild that could not fill it. */
    uint8_t junk[BLEN];
    memset(junk, 0, sizeof(junk));
    assert_int_equal(rk_dev_write(f->mem[1], junk, BLEN, DOFF + BAD, 0), 0);
    return f;
}

static void bfx_close(struct bfx *f)
{
    rk_dev_close(f->raid);
    rk_test_close_members(f->mem, 2);
    rk_dev_close(f->fresh);
    free(f->shadow);
    free(f);
}

/* Read [off, off+len) of the array and compare with the shadow. */
static void expect_data(struct bfx *f, uint64_t off, uint64_t len)
{
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(rk_dev_read(f->raid, buf, len, off), 0);
    if (memcmp(buf, f->shadow + off, len))
        fail_msg("array data differs in [%llu, +%llu)", (unsigned long long)off,
                 (unsigned long long)len);
    free(buf);
}

static void test_preload_refusals(void **state)
{
    (void)state;
    struct bfx *f = bfx_open();
    assert_int_equal(rk_raid_add_bad_range(f->raid, 2, 0, 4096), -EINVAL);
    assert_int_equal(rk_raid_add_bad_range(f->raid, 1, 0, 0), -EINVAL);
    assert_int_equal(rk_raid_add_bad_range(f->raid, 1, DSIZE - 4096, 8192), -EINVAL);
    assert_int_equal(rk_raid_add_bad_range(f->raid, 1, DSIZE + 4096, 4096), -EINVAL);
    assert_int_equal(rk_raid_add_bad_range(f->mem[0], 0, 0, 4096), -EINVAL); /* not a raid */
    struct rk_raid_bad_range br[2];
    assert_int_equal(rk_raid_bad_ranges(f->raid, br, 2), 0);
    bfx_close(f);
}

static void test_preload_then_fail_other(void **state)
{
    (void)state;
    struct bfx *f = bfx_open();
    assert_int_equal(rk_raid_add_bad_range(f->raid, 1, BAD, BLEN), 0);
    assert_int_equal(rk_raid_add_bad_range(f->raid, 1, BAD + 4096, 4096), 0); /* covered */
    struct rk_raid_bad_range br[4];
    assert_int_equal(rk_raid_bad_ranges(f->raid, br, 4), 1);
    assert_int_equal(br[0].slot, 1);
    assert_int_equal(br[0].member_off, BAD);
    assert_int_equal(br[0].len, BLEN);
    /* Both copies active: the range always comes from slot 0, never slot 1's zeros (reads
     * alternate between copies otherwise, so 20 tries would hit slot 1). */
    for (int i = 0; i < 20; i++)
        expect_data(f, BAD, BLEN);
    expect_data(f, 0, f->raid->size);
    /* Slot 0 gone: the range exists on no good copy -> EIO, every time, also for a read that
     * only overlaps it; the rest of the array is still served by slot 1. */
    assert_int_equal(rk_raid_fail_slot(f->raid, 0), 0);
    uint8_t buf[8192];
    for (int i = 0; i < 20; i++)
        assert_int_equal(rk_dev_read(f->raid, buf, 4096, BAD + 8192), -EIO);
    assert_int_equal(rk_dev_read(f->raid, buf, 8192, BAD - 4096), -EIO);
    assert_int_equal(rk_dev_read(f->raid, buf, 8192, BAD + BLEN - 4096), -EIO);
    expect_data(f, 0, BAD);
    expect_data(f, BAD + BLEN, f->raid->size - BAD - BLEN);
    bfx_close(f);
}

static void test_replace_drops_ranges(void **state)
{
    (void)state;
    struct bfx *f = bfx_open();
    uint64_t b0 = 3 * MiB; /* slot 0's own unreadable 4 KiB */
    assert_int_equal(rk_raid_add_bad_range(f->raid, 1, BAD, BLEN), 0);
    assert_int_equal(rk_raid_add_bad_range(f->raid, 0, b0, 4096), 0);
    struct rk_raid_bad_range br[4];
    assert_int_equal(rk_raid_bad_ranges(f->raid, br, 4), 2);
    /* A failed slot's ranges are no longer reported (they would not reach the superblock). */
    assert_int_equal(rk_raid_fail_slot(f->raid, 1), 0);
    assert_int_equal(rk_raid_bad_ranges(f->raid, br, 4), 1);
    assert_int_equal(br[0].slot, 0);
    /* The replacement starts clean; its rebuild cannot copy slot 0's unreadable range, so that
     * chunk is recorded on slot 1 (in the dropped entry's place), and the rebuild completes. */
    assert_int_equal(rk_raid_add_member(f->raid, 1, f->fresh), 0);
    assert_int_equal(rk_raid_rebuild_start(f->raid, 1, 0, 0), 0);
    assert_int_equal(rk_raid_job_wait(f->raid), 0);
    assert_int_equal(rk_raid_slot_state(f->raid, 1), RK_SLOT_ACTIVE);
    assert_int_equal(rk_raid_bad_ranges(f->raid, br, 4), 2);
    assert_int_equal(br[0].slot, 1);
    assert_int_equal(br[0].member_off, b0);
    assert_int_equal(br[0].len, 64 * KiB);
    assert_int_equal(br[1].slot, 0);
    /* On no good copy: EIO; the rest of that chunk comes from slot 0. */
    uint8_t buf[4096];
    assert_int_equal(rk_dev_read(f->raid, buf, 4096, b0), -EIO);
    expect_data(f, b0 + 4096, 60 * KiB);
    /* With slot 0 gone, the rebuilt slot 1 serves the old range (its entry was dropped). */
    assert_int_equal(rk_raid_fail_slot(f->raid, 0), 0);
    expect_data(f, BAD, BLEN);
    expect_data(f, 0, b0);
    assert_int_equal(rk_dev_read(f->raid, buf, 4096, b0 + 8192), -EIO);
    bfx_close(f);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preload_refusals),
        cmocka_unit_test(test_preload_then_fail_other),
        cmocka_unit_test(test_replace_drops_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
