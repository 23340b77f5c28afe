/* Write-intent bitmap: the committed golden area (decode + byte-identical re-encode), every
 * corrupted field refused (never trusted), the superblock's bitmap/resync fields, and the
 * engine's ordering: a region's bit is on the members before the write that needs it. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "bm_golden.h"
#include "core/util.h"
#include "meta/superblock.h"
#include "raidkit/raid.h"
#include "rk_test.h"
#include "rk_test_bm.h"
#include "sb_golden.h"

static void load_golden(uint8_t *buf)
{
    char path[4096];
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    if (src && *src) {
        snprintf(path, sizeof(path), "%s/tests/golden/bitmap_v1.bin", src);
    } else {
        snprintf(path, sizeof(path), "%s", __FILE__);
        char *slash = strrchr(path, '/');
        if (slash)
            snprintf(slash, sizeof(path) - (size_t)(slash - path), "/../golden/bitmap_v1.bin");
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open golden image %s", path);
    assert_int_equal(fread(buf, 1, GOLDEN_BM_SIZE, f), GOLDEN_BM_SIZE);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
}

static void test_golden(void **state)
{
    (void)state;
    static uint8_t img[GOLDEN_BM_SIZE], re[GOLDEN_BM_SIZE];
    struct rk_bm_hdr h, want;
    char err[200] = "";
    load_golden(img);
    assert_int_equal(rk_bm_decode(img, GOLDEN_BM_SIZE, 1000, &h, err, sizeof(err)), 0);
    golden_bm_v1(&want, re);
    assert_int_equal(h.region, 128 * 1024);
    assert_int_equal(h.nregions, 1000);
    assert_int_equal(h.events, 7);
    assert_memory_equal(h.uuid, want.uuid, 16);
    for (uint64_t i = 0; i < 1000; i++)
        assert_int_equal(rk_bm_test(img, i), i == 0 || i == 9 || i == 500 || i == 999);
    assert_memory_equal(img, re, GOLDEN_BM_SIZE);
    /* Documented offsets (docs/FORMAT.md "Write-intent bitmap"). */
    assert_memory_equal(img, "RKBITMAP", 8);
    assert_int_equal(rk_get_le32(img + 8), 1);
    assert_int_equal(rk_get_le32(img + 16), 64);
    assert_int_equal(rk_get_le64(img + 24), 128 * 1024);
    assert_int_equal(rk_get_le64(img + 32), 1000);
    assert_int_equal(rk_get_le64(img + 40), 7);
    assert_int_equal(img[48], 0x10);
    assert_int_equal(img[64], 0x01);       /* region 0 */
    assert_int_equal(img[65], 0x02);       /* region 9 */
    assert_int_equal(img[64 + 124], 0x80); /* region 999 = byte 124 bit 7 */
}

/* Corrupt one thing of the golden area (re-encoding the crc when fix_crc), expect rc. */
static void expect_refused(size_t off, uint8_t val, bool fix_crc, uint64_t want_n, int rc)
{
    static uint8_t img[GOLDEN_BM_SIZE];
    struct rk_bm_hdr h;
    char err[200] = "";
    golden_bm_v1(&h, img);
    img[off] = val;
    if (fix_crc) {
        rk_put_le32(img + 12, 0);
        rk_put_le32(img + 12, rk_crc32c(img, GOLDEN_BM_SIZE));
    }
    assert_int_equal(rk_bm_decode(img, GOLDEN_BM_SIZE, want_n, &h, err, sizeof(err)), rc);
    assert_true(err[0] != '\0');
    print_message("refused (%d): %s\n", rc, err);
}

static void test_corrupt(void **state)
{
    (void)state;
    expect_refused(64 + 50, 0xff, false, 1000, -EBADMSG); /* a bit flipped: crc */
    expect_refused(30, 0x01, false, 1000, -EBADMSG);      /* header byte: crc */
    expect_refused(0, 'X', false, 1000, -ENODATA);        /* magic */
    expect_refused(8, 2, true, 1000, -EINVAL);            /* version 2 */
    expect_refused(16, 32, true, 1000, -EINVAL);          /* header size */
    expect_refused(20, 1, true, 1000, -EINVAL);           /* unknown flags */
    expect_refused(25, 0x03, true, 1000, -EINVAL);        /* region not a power of two */
    expect_refused(26, 0x00, true, 1000, -EINVAL);        /* region 0 */
    expect_refused(32, 0xe9, true, 1000, -EINVAL);        /* nregions 1001 != expected */
    expect_refused(64 + 125, 0x01, true, 1000, -EINVAL);  /* bit 1000 set past nregions */
    expect_refused(33, 0x7f, true, 0, -EINVAL);           /* nregions beyond the area */
    /* The right region count is required when the caller knows it. */
    static uint8_t img[GOLDEN_BM_SIZE];
    struct rk_bm_hdr h;
    char err[200];
    golden_bm_v1(&h, img);
    assert_int_equal(rk_bm_decode(img, GOLDEN_BM_SIZE, 0, &h, err, sizeof(err)), 0);
    assert_int_equal(rk_bm_decode(img, GOLDEN_BM_SIZE, 999, &h, err, sizeof(err)), -EINVAL);
}

static void test_sizes(void **state)
{
    (void)state;
    char err[200];
    assert_int_equal(rk_bm_area_size(1), 4096);
    assert_int_equal(rk_bm_area_size(RK_BM_ONE_BLOCK_REGIONS), 4096);
    assert_int_equal(rk_bm_area_size(RK_BM_ONE_BLOCK_REGIONS + 1), 8192);
    assert_int_equal(rk_bm_default_region(64ull << 20, 65536), 64 * 1024);
    assert_int_equal(rk_bm_default_region(64ull << 20, 1u << 20), 1 << 20);
    uint64_t r = rk_bm_default_region(4ull << 40, 65536); /* 4 TiB members */
    assert_true((4ull << 40) / r <= RK_BM_ONE_BLOCK_REGIONS);
    assert_true((4ull << 40) / (r / 2) > RK_BM_ONE_BLOCK_REGIONS);
    assert_int_equal(rk_bm_check_region(65536, 1ull << 30, 65536, err, sizeof(err)), 0);
    assert_int_equal(rk_bm_check_region(32768, 1ull << 30, 4096, err, sizeof(err)), -EINVAL);
    assert_int_equal(rk_bm_check_region(65536, 1ull << 30, 131072, err, sizeof(err)), -EINVAL);
    assert_int_equal(rk_bm_check_region(3 << 16, 1ull << 30, 4096, err, sizeof(err)), -EINVAL);
    /* 64 KiB regions over 1 TiB need 2 MiB of bits: more than the area. */
    assert_int_equal(rk_bm_check_region(65536, 1ull << 40, 4096, err, sizeof(err)), -EINVAL);
}

/* The superblock's bytes 192..223: round trip at their offsets; zeros (older arrays) decode;
 * bad values are refused. */
static void test_sb_fields(void **state)
{
    (void)state;
    struct rk_sb a, b;
    uint8_t buf[RK_SB_SIZE];
    char err[256] = "";
    golden_sb_v1(&a);
    a.bitmap_offset = RK_BM_OFFSET;
    a.bitmap_size = 4096;
    a.bitmap_region = 65536;
    a.resync_flags = RK_SB_RESYNC_PENDING | RK_SB_RESYNC_FULL;
    a.resync_offset = 1 << 20;
    rk_sb_encode(&a, buf);
    assert_int_equal(rk_get_le32(buf + 192), 3);
    assert_int_equal(rk_get_le64(buf + 200), 1 << 20);
    assert_int_equal(rk_get_le64(buf + 208), 65536);
    assert_int_equal(rk_sb_decode(buf, &b, err, sizeof(err)), 0);
    assert_int_equal(b.resync_flags, 3);
    assert_int_equal(b.resync_offset, 1 << 20);
    assert_int_equal(b.bitmap_region, 65536);
    struct rk_sb bad = a;
    bad.resync_flags = 4;
    assert_int_equal(rk_sb_check(&bad, err, sizeof(err)), -EINVAL);
    bad = a;
    bad.resync_offset = a.data_size + 512;
    assert_int_equal(rk_sb_check(&bad, err, sizeof(err)), -EINVAL);
    bad = a;
    bad.bitmap_region = 0; /* an area without a region size */
    assert_int_equal(rk_sb_check(&bad, err, sizeof(err)), -EINVAL);
    bad = a;
    bad.bitmap_region = 3 * 65536;
    assert_int_equal(rk_sb_check(&bad, err, sizeof(err)), -EINVAL);
    bad = a;
    bad.bitmap_size = 512 * 1024; /* past the 512 KiB end of the bitmap's place */
    assert_int_equal(rk_sb_check(&bad, err, sizeof(err)), -EINVAL);
    bad = a;
    bad.bitmap_offset = bad.bitmap_size = 0; /* a region size without an area */
    assert_int_equal(rk_sb_check(&bad, err, sizeof(err)), -EINVAL);
}

/* ---- engine ordering: a member that checks, at every data write, that the bitmap area it
 * holds already marks the region (and that bits were set with FUA) ---- */

#define T_DOFF   (1u << 20)
#define T_REGION (64u * 1024)

struct order_dev {
    struct rk_dev *inner; /* first: rk_test_fwd */
    int violations, area_writes, area_fua;
    _Atomic int flushes;
};

/* Member writes come from several threads at once (writers, the cleaner, its flush hooks): the
 * checker's scratch area, its counters and the area rewrite are serialized, so a check never
 * reads a half-written area. */
static pthread_mutex_t od_lock = PTHREAD_MUTEX_INITIALIZER;

static int od_write(struct rk_dev *d, const void *buf, uint64_t len, uint64_t off, uint32_t fl)
{
    struct order_dev *o = d->priv;
    pthread_mutex_lock(&od_lock);
    if (off == RK_BM_OFFSET) {
        o->area_writes++;
        o->area_fua += (fl & RK_WRITE_FUA) != 0;
        int r = rk_dev_write(o->inner, buf, len, off, fl);
        pthread_mutex_unlock(&od_lock);
        return r;
    }
    if (off >= T_DOFF)
        o->violations += rk_test_bm_unmarked(o->inner, off, len, T_DOFF, T_REGION);
    pthread_mutex_unlock(&od_lock);
    return rk_dev_write(o->inner, buf, len, off, fl);
}

static int od_flush(struct rk_dev *d)
{
    struct order_dev *o = d->priv;
    atomic_fetch_add(&o->flushes, 1);
    return rk_dev_flush(o->inner);
}

static const struct rk_dev_ops od_ops = {.kind = "order",
                                         .read = rk_test_fwd_read,
                                         .write = od_write,
                                         .flush = od_flush,
                                         .close = rk_test_fwd_close};

static void test_engine_order(void **state)
{
    (void)state;
    for (int level = RK_LEVEL_RAID1; level <= RK_LEVEL_RAID5; level += 4) {
        uint32_t n = level == RK_LEVEL_RAID1 ? 2 : 4;
        struct rk_dev *m[4], *raid;
        struct order_dev *od[4];
        for (uint32_t i = 0; i < n; i++) {
            od[i] = calloc(1, sizeof(*od[i]));
            assert_int_equal(rk_mem_open(T_DOFF + (8u << 20), 512, &od[i]->inner), 0);
            m[i] = rk_test_wrap(&od_ops, od[i], od[i]->inner, "order");
        }
        struct rk_raid_geom g = {0};
        rk_test_geom(&g, level, n, 65536, T_DOFF, 8u << 20);
        assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
        struct rk_raid_bitmap_opts bo = {
            .area_offset = RK_BM_OFFSET, .area_size = 4096, .region = T_REGION, .idle_ms = 200};
        assert_int_equal(rk_raid_bitmap_attach(raid, &bo), 0);
        static uint8_t buf[256 * 1024];
        rk_test_fill64(buf, sizeof(buf), 7);
        uint64_t seed = 3;
        for (int k = 0; k < 200; k++) {
            uint64_t len = 4096u << (rk_test_xorshift(&seed) % 6);
            uint64_t off = rk_test_xorshift(&seed) % (raid->size / 4096) * 4096;
            if (off + len > raid->size)
                off = raid->size - len;
            assert_int_equal(rk_dev_write(raid, buf, len, off, 0), 0);
        }
        assert_int_equal(rk_dev_write_zeroes(raid, 65536, 0, 0), 0);
        struct rk_raid_bitmap_stats st;
        assert_int_equal(rk_raid_bitmap_stats(raid, &st), 0);
        assert_true(st.set > 0);
        assert_int_equal(st.region, T_REGION);
        /* Idle regions lose their bits once a flush covered them (200 ms idle; up to 30 s, as
         * the cleaner thread may wait for the CPU on a loaded machine). */
        for (int t = 0; t < 600 && st.set; t++) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
            rk_raid_bitmap_stats(raid, &st);
        }
        assert_int_equal(st.set, 0);
        assert_true(st.area_clears > 0);
        rk_dev_close(raid);
        for (uint32_t i = 0; i < n; i++) {
            assert_int_equal(od[i]->violations, 0);
            assert_true(od[i]->area_fua > 0);
            rk_dev_close(m[i]);
        }
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Degraded: the cleaner clears no bit, but flushes the members once per idle transition (so the
 * level retires what the flush made durable, e.g. raid5/6 log entries), not once per tick. */
static void test_degraded_idle_flush(void **state)
{
    (void)state;
    struct rk_dev *m[2], *raid;
    struct order_dev *od[2];
    for (uint32_t i = 0; i < 2; i++) {
        od[i] = calloc(1, sizeof(*od[i]));
        assert_int_equal(rk_mem_open(T_DOFF + (8u << 20), 512, &od[i]->inner), 0);
        m[i] = rk_test_wrap(&od_ops, od[i], od[i]->inner, "order");
    }
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, RK_LEVEL_RAID1, 2, 65536, T_DOFF, 8u << 20);
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
    struct rk_raid_bitmap_opts bo = {
        .area_offset = RK_BM_OFFSET, .area_size = 4096, .region = T_REGION, .idle_ms = 100};
    assert_int_equal(rk_raid_bitmap_attach(raid, &bo), 0);
    assert_int_equal(rk_raid_fail_slot(raid, 1), 0);
    static uint8_t buf[4096];
    for (int round = 1; round <= 2; round++) {
        int before = atomic_load(&od[0]->flushes);
        assert_int_equal(rk_dev_write(raid, buf, sizeof(buf), (uint64_t)round * T_REGION, 0), 0);
        sleep_ms(800); /* 16 ticks of 50 ms, idle after 2 */
        assert_int_equal(atomic_load(&od[0]->flushes) - before, 1);
        struct rk_raid_bitmap_stats st;
        assert_int_equal(rk_raid_bitmap_stats(raid, &st), 0);
        assert_int_equal(st.set, round); /* kept for the re-add of slot 1 */
    }
    rk_dev_close(raid);
    for (uint32_t i = 0; i < 2; i++)
        rk_dev_close(m[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),       cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_sizes),        cmocka_unit_test(test_sb_fields),
        cmocka_unit_test(test_engine_order), cmocka_unit_test(test_degraded_idle_flush),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
