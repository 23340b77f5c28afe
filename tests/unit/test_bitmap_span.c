/* Write-intent bitmap on striped levels: a write marks exactly the regions of the member data
 * it touches. A write from the middle of one chunk into the next chunk of its row (member
 * offsets that restart at the row's start) once marked every region of the member, so a raid5
 * re-add resynced the whole member (issue 14; src/raid/rangelock.c raid_member_span). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raid/bitmap_disk.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define S_DOFF   (1u << 20)
#define S_CHUNK  (64u * 1024)
#define S_REGION (64u * 1024)
#define S_DATA   (8u << 20)

/* Open a level array of n memory members with an on-disk bitmap that never clears (idle 60 s);
 * write len bytes at array offset off; return the number of regions marked. */
static uint64_t marked_after(int level, uint32_t n, uint64_t off, uint64_t len)
{
    struct rk_dev *m[4], *raid;
    rk_test_mem_members(m, n, S_DOFF + S_DATA, 512);
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, level, n, S_CHUNK, S_DOFF, S_DATA);
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
    struct rk_raid_bitmap_opts bo = {
        .area_offset = RK_BM_OFFSET, .area_size = 4096, .region = S_REGION, .idle_ms = 60000};
    assert_int_equal(rk_raid_bitmap_attach(raid, &bo), 0);
    char *buf = calloc(1, len);
    assert_non_null(buf);
    assert_int_equal(rk_dev_write(raid, buf, len, off, 0), 0);
    free(buf);
    struct rk_raid_bitmap_stats st;
    assert_int_equal(rk_raid_bitmap_stats(raid, &st), 0);
    rk_dev_close(raid);
    rk_test_close_members(m, n);
    return st.set;
}

static void test_span_striped(void **state)
{
    (void)state;
    /* raid5 of 3 (2 data chunks per row): chunk 0 -> chunk 1 of row 0 is member region 0. */
    assert_int_equal(marked_after(RK_LEVEL_RAID5, 3, S_CHUNK - 4096, 8192), 1);
    /* ... the last chunk of row 0 into row 1: regions 0 and 1. */
    assert_int_equal(marked_after(RK_LEVEL_RAID5, 3, 2 * S_CHUNK - 4096, 8192), 2);
    /* Inside one chunk of row 5: region 5 only. */
    assert_int_equal(marked_after(RK_LEVEL_RAID5, 3, 10 * S_CHUNK + 4096, 4096), 1);
    /* raid6 of 4 (2 data chunks per row), raid10 of 4 (2 chunks per row): the same crossing. */
    assert_int_equal(marked_after(RK_LEVEL_RAID6, 4, S_CHUNK - 4096, 8192), 1);
    assert_int_equal(marked_after(RK_LEVEL_RAID10, 4, S_CHUNK - 4096, 8192), 1);
    /* raid1: member offsets follow the array's. */
    assert_int_equal(marked_after(RK_LEVEL_RAID1, 2, S_REGION - 4096, 8192), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span_striped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
