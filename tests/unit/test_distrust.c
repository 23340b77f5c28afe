/* A read-only start of a dirty raid5 without a partial parity log (or with a resync still owed)
 * runs no resync, so the parity of the regions its write-intent bitmap marks unsynced may be
 * stale (src/raid/engine.c rk_raid_distrust_unsynced, src/raid/raid5_read.c). raid5 over 3
 * members, 64 KiB chunks and regions (one stripe row per region), region 0 unsynced, then slot 1
 * fails: a read that rebuilds slot 1's chunk in region 0 fails (-EIO) once the array distrusts
 * its unsynced parity, and is served before; rows of synced regions are rebuilt and read back
 * as written either way. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "raidkit/device.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define CHUNK  (64u * 1024)
#define DOFF   (1u << 20)
#define DSIZE  (4u << 20)
#define ROWLEN (2u * CHUNK) /* two data chunks per row */

/* The array over mem with region 0 unsynced; distrust: rk_raid_distrust_unsynced first. */
static struct rk_dev *open_unsynced(struct rk_dev **mem, bool distrust)
{
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, RK_LEVEL_RAID5, 3, CHUNK, DOFF, DSIZE);
    struct rk_dev *raid;
    assert_int_equal(rk_raid_open(&g, mem, NULL, &raid), 0);
    uint8_t bits[(DSIZE / CHUNK + 7) / 8] = {0x01};
    struct rk_raid_bitmap_opts o = {.region = CHUNK, .bits = bits, .idle_ms = 600000};
    assert_int_equal(rk_raid_bitmap_attach(raid, &o), 0);
    if (distrust)
        assert_int_equal(rk_raid_distrust_unsynced(raid), 0);
    return raid;
}

static void test_unsynced_parity_distrusted(void **state)
{
    (void)state;
    struct rk_dev *mem[3], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, RK_LEVEL_RAID5, 3, CHUNK, DOFF, DSIZE);
    assert_int_equal(rk_raid_open(&g, mem, NULL, &raid), 0);
    uint8_t *shadow = rk_test_pattern_shadow(raid, 51);
    assert_int_equal(rk_dev_flush(raid), 0);
    rk_dev_close(raid);

    uint8_t *got = rk_buf_alloc(4 * ROWLEN);
    for (int distrust = 0; distrust <= 1; distrust++) {
        raid = open_unsynced(mem, distrust);
        assert_int_equal(rk_dev_read(raid, got, 4 * ROWLEN, 0), 0); /* every member there */
        assert_memory_equal(got, shadow, 4 * ROWLEN);
        assert_int_equal(rk_raid_fail_slot(raid, 1), 0);
        /* Row 0 (region 0) holds a data chunk on slot 1 (rotating parity: slot 2 or 0 holds P). */
        assert_int_equal(rk_dev_read(raid, got, ROWLEN, 0), distrust ? -EIO : 0);
        if (!distrust)
            assert_memory_equal(got, shadow, ROWLEN);
        assert_int_equal(rk_dev_read(raid, got, 3 * ROWLEN, ROWLEN), 0); /* synced regions */
        assert_memory_equal(got, shadow + ROWLEN, 3 * ROWLEN);
        rk_dev_close(raid);
    }
    free(got);
    free(shadow);
    rk_test_close_members(mem, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsynced_parity_distrusted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
