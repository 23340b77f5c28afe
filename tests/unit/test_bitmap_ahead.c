/* Write-intent bitmap look-ahead (src/raid/bitmap.h BM_AHEAD_*): once writes set the bits of
 * BM_AHEAD_RUN regions one after the other (a sequential stream), the next region's area write
 * also sets the bits of the regions ahead of it, and the cleaner sets each next window before
 * the stream gets there, so the stream stops for an area write only at its start. Every data write
 * still lands only where the members' areas mark its region (the checking member below), random
 * writes never look ahead, and the cleaner clears the bits set ahead that no write used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "raid/bitmap.h"
#include "raidkit/raid.h"
#include "rk_test.h"
#include "rk_test_bm.h"

#define A_DOFF   (1u << 20)
#define A_REGION (64u * 1024)
#define A_DATA   (16u << 20) /* 256 regions */

/* A member that counts data writes landing in a region its own area does not mark. */
struct chk_dev {
    struct rk_dev *inner; /* first: rk_test_fwd */
    int violations;
};

static int chk_write(struct rk_dev *d, const void *buf, uint64_t len, uint64_t off, uint32_t fl)
{
    struct chk_dev *o = d->priv;
    if (off >= A_DOFF)
        o->violations += rk_test_bm_unmarked(o->inner, off, len, A_DOFF, A_REGION);
    return rk_dev_write(o->inner, buf, len, off, fl);
}

static const struct rk_dev_ops chk_ops = {.read = rk_test_fwd_read,
                                          .write = chk_write,
                                          .flush = rk_test_fwd_flush,
                                          .close = rk_test_fwd_close};

static struct rk_dev *open_array(struct chk_dev **cd, struct rk_dev **m, uint32_t idle_ms)
{
    struct rk_dev *raid;
    for (uint32_t i = 0; i < 2; i++) {
        cd[i] = calloc(1, sizeof(*cd[i]));
        assert_non_null(cd[i]);
        assert_int_equal(rk_mem_open(A_DOFF + A_DATA, 512, &cd[i]->inner), 0);
        m[i] = rk_test_wrap(&chk_ops, cd[i], cd[i]->inner, "check");
    }
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, RK_LEVEL_RAID1, 2, 65536, A_DOFF, A_DATA);
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
    struct rk_raid_bitmap_opts bo = {
        .area_offset = RK_BM_OFFSET, .area_size = 4096, .region = A_REGION, .idle_ms = idle_ms};
    assert_int_equal(rk_raid_bitmap_attach(raid, &bo), 0);
    return raid;
}

static void close_array(struct rk_dev *raid, struct rk_dev **m)
{
    rk_dev_close(raid);
    for (uint32_t i = 0; i < 2; i++)
        rk_dev_close(m[i]);
}

static struct rk_raid_bitmap_stats stats(struct rk_dev *raid)
{
    struct rk_raid_bitmap_stats st;
    assert_int_equal(rk_raid_bitmap_stats(raid, &st), 0);
    return st;
}

static void write_region(struct rk_dev *raid, uint64_t i)
{
    static uint8_t buf[4096];
    memset(buf, (int)(i & 0xff), sizeof(buf));
    assert_int_equal(rk_dev_write(raid, buf, sizeof(buf), i * A_REGION + 8192, 0), 0);
}

static const uint64_t window = BM_AHEAD_BYTES / A_REGION; /* 64 regions */

/* Wait (up to 5 s) until at least n regions' bits are durable: the cleaner's refills run on
 * their own thread. */
static bool wait_set(struct rk_dev *raid, uint64_t n)
{
    for (int t = 0; t < 5000; t++) {
        if (stats(raid).set >= n)
            return true;
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    return false;
}

/* A stream over every region: BM_AHEAD_RUN area writes to start, the last of them also setting
 * the first window ahead; from then on, once a write ends in the second half of the window, the
 * cleaner sets the next window in an area write of its own, so the stream never reaches a
 * region whose bit is not durable yet (each region's bit is durable before its write below;
 * without the refill the wait for region BM_AHEAD_RUN + window times out). */
static void test_stream_sets_ahead(void **state)
{
    (void)state;
    struct chk_dev *cd[2];
    struct rk_dev *m[2], *raid = open_array(cd, m, 600000);
    const uint64_t nreg = A_DATA / A_REGION;
    for (uint64_t i = 0; i < BM_AHEAD_RUN - 1; i++)
        write_region(raid, i);
    assert_int_equal(stats(raid).area_sets, BM_AHEAD_RUN - 1);
    assert_int_equal(stats(raid).bits_set, BM_AHEAD_RUN - 1); /* not a stream yet */
    write_region(raid, BM_AHEAD_RUN - 1);
    struct rk_raid_bitmap_stats st = stats(raid);
    assert_int_equal(st.area_sets, BM_AHEAD_RUN);
    assert_int_equal(st.bits_set, BM_AHEAD_RUN + window);
    assert_int_equal(st.set, BM_AHEAD_RUN + window); /* durable: the same area write */
    for (uint64_t i = BM_AHEAD_RUN; i < BM_AHEAD_RUN + window / 2; i++)
        write_region(raid, i); /* first half of the window: no area write */
    assert_int_equal(stats(raid).area_sets, BM_AHEAD_RUN);
    for (uint64_t i = BM_AHEAD_RUN + window / 2; i < nreg; i++) {
        assert_true(wait_set(raid, i + 1));
        write_region(raid, i);
    }
    st = stats(raid);
    uint64_t refills = (nreg - BM_AHEAD_RUN - window + window - 1) / window; /* 188: 3 */
    assert_int_equal(st.area_sets, BM_AHEAD_RUN + refills);
    assert_int_equal(st.set, nreg);
    assert_int_equal(st.bits_set, nreg); /* never past the last region */
    for (uint32_t i = 0; i < 2; i++)
        assert_int_equal(cd[i]->violations, 0);
    close_array(raid, m);
}

/* Writes into scattered regions (every third, then back to the start) never look ahead. */
static void test_scattered_no_ahead(void **state)
{
    (void)state;
    struct chk_dev *cd[2];
    struct rk_dev *m[2], *raid = open_array(cd, m, 600000);
    uint64_t n = 0;
    for (uint64_t i = 0; i < A_DATA / A_REGION; i += 3, n++)
        write_region(raid, i);
    for (uint64_t i = 1; i < 40; i += 3, n++)
        write_region(raid, i);
    struct rk_raid_bitmap_stats st = stats(raid);
    assert_int_equal(st.bits_set, n);
    assert_int_equal(st.area_sets, n);
    for (uint32_t i = 0; i < 2; i++)
        assert_int_equal(cd[i]->violations, 0);
    close_array(raid, m);
}

/* The bits set ahead that no write used are cleared by the cleaner like any idle region. */
static void test_ahead_bits_cleared(void **state)
{
    (void)state;
    struct chk_dev *cd[2];
    struct rk_dev *m[2], *raid = open_array(cd, m, 100);
    for (uint64_t i = 0; i < BM_AHEAD_RUN; i++)
        write_region(raid, i);
    assert_true(stats(raid).set > BM_AHEAD_RUN);
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (int t = 0; t < 250 && stats(raid).set; t++)
        nanosleep(&ts, NULL);
    assert_int_equal(stats(raid).set, 0);
    close_array(raid, m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_sets_ahead),
        cmocka_unit_test(test_scattered_no_ahead),
        cmocka_unit_test(test_ahead_bits_cleared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
