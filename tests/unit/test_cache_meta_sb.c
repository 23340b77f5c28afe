/* Cache device metadata (src/cache/meta*.c, docs/FORMAT.md "Cache device"), the second half of
 * test_cache_meta.c: group commit from several threads, a device failing a commit, the golden
 * superblock image decoded field by field, out-of-range superblock fields refused, the array
 * binding field and its check, a read-only open that writes nothing, the index's memory, and
 * randomized dirty scans and power cuts. */
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

#include "cache/meta.h"
#include "cache/meta_int.h"
#include "cache_golden.h"
#include "meta/superblock.h"
#include "sb_golden.h"
#include "core/util.h"
#include "rk_test_cache_meta.h"

struct thr {
    struct rk_cache_meta *m;
    unsigned id;
};

static void *commit_thread(void *arg)
{
    struct thr *t = arg;
    for (unsigned i = 0; i < 50; i++) {
        uint64_t c;
        if (rk_cache_meta_alloc(t->m, &c))
            break;
        rk_cache_meta_map(t->m, c, t->id * 100 + i, i & 1);
        if (rk_cache_meta_commit(t->m))
            return (void *)1;
    }
    return NULL;
}

/* Four threads map and commit at once (group commit); a reopen gives the same index. */
static void test_group_commit_threads(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE + 8 * MiB);
    format(d, 64 * 1024);
    struct rk_cache_meta *m = open_ok(d);
    pthread_t th[4];
    struct thr t[4];
    for (unsigned i = 0; i < 4; i++) {
        t[i] = (struct thr){m, i};
        pthread_create(&th[i], NULL, commit_thread, &t[i]);
    }
    for (unsigned i = 0; i < 4; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        assert_null(rv);
    }
    struct snap want, got;
    take(m, &want);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.mapped, 200);
    uint8_t *img = img_read(d);
    char err[512];
    assert_int_equal(load_img(img, d->size, &got, err, sizeof(err)), 0);
    assert_memory_equal(&got, &want, sizeof(got));
    free(img);
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

/* A failing device: commit returns the error, and keeps returning it. */
static void test_commit_device_failure(void **state)
{
    (void)state;
    struct rk_dev *inner = mem_dev(DEV_SIZE), *d;
    assert_int_equal(rk_fault_open(inner, true, &d), 0);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 2);
    rk_fault_fail_all(d, true);
    assert_int_equal(rk_cache_meta_commit(m), -EIO);
    rk_fault_fail_all(d, false);
    assert_int_equal(rk_cache_meta_commit(m), -EIO);
    uint64_t c;
    assert_int_equal(rk_cache_meta_alloc(m, &c), 0);
    rk_cache_meta_map(m, c, 500, true);
    assert_int_equal(rk_cache_meta_commit(m), -EIO);
    assert_int_equal(rk_cache_meta_close(m), -EIO);
    /* What was durable before the failure loads (here: the empty cache). */
    m = open_ok(d);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.mapped, 0);
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

static void load_golden(uint8_t *buf)
{
    char path[4096];
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    if (src && *src) {
        snprintf(path, sizeof(path), "%s/tests/golden/cache_sb_v1.bin", src);
    } else {
        snprintf(path, sizeof(path), "%s", __FILE__);
        char *slash = strrchr(path, '/');
        if (slash)
            snprintf(slash, sizeof(path) - (size_t)(slash - path), "/../golden/cache_sb_v1.bin");
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open golden image %s", path);
    assert_int_equal(fread(buf, 1, RKC_BLK, f), RKC_BLK);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
}

/* The committed image decodes to the documented fields at the documented offsets and
 * re-encodes byte-identical (docs/FORMAT.md "Cache superblock"). */
static void test_golden_sb(void **state)
{
    (void)state;
    static uint8_t img[RKC_BLK], re[RKC_BLK];
    struct rkc_sb sb, want;
    char err[256] = "";
    load_golden(img);
    assert_int_equal(rkc_sb_decode(img, &sb, err, sizeof(err)), 0);
    golden_cache_sb_v1(&want);
    assert_memory_equal(img, "RKCACHSB", 8);
    assert_int_equal(rk_get_le32(img + 8), 1);
    assert_int_equal(rk_get_le32(img + 12), 4096);
    assert_int_equal(rk_get_le32(img + 16), 0x11cd5001u);
    assert_int_equal(sb.mode, RK_CACHE_WRITEBACK);
    assert_int_equal(rk_get_le32(img + 20), 2);
    assert_memory_equal(sb.cache_uuid, want.cache_uuid, 16);
    assert_memory_equal(img + 24, want.cache_uuid, 16);
    assert_memory_equal(img + 40, want.array_uuid, 16);
    assert_int_equal(sb.array_size, 1024 * MiB);
    assert_int_equal(rk_get_le64(img + 56), 1024 * MiB);
    assert_int_equal(rk_get_le32(img + 64), 65536);
    assert_int_equal(rk_get_le64(img + 72), 4064);
    assert_int_equal(rk_get_le64(img + 80), 0x1122334455667788ull);
    assert_int_equal(rk_get_le64(img + 88), 4096);
    assert_int_equal(rk_get_le64(img + 96), 40960);
    assert_int_equal(rk_get_le64(img + 104), 36864);
    assert_int_equal(rk_get_le64(img + 112), 77824);
    assert_int_equal(rk_get_le64(img + 120), 1048576);
    assert_int_equal(rk_get_le64(img + 128), 2 * MiB);
    assert_int_equal(rk_get_le64(img + 136), 1764547200);
    for (unsigned i = 144; i < RKC_BLK; i++)
        assert_int_equal(img[i], 0);
    assert_memory_equal(&sb, &want, sizeof(sb));
    rkc_sb_encode(&sb, re);
    assert_memory_equal(img, re, RKC_BLK);
    /* The layout of a 256 MiB device at 64 KiB still gives these fields. */
    struct rkc_sb lay = {.block_size = 65536};
    assert_int_equal(rkc_layout(&lay, 256 * MiB, 0, err, sizeof(err)), 0);
    assert_int_equal(lay.nblocks, 4064);
    assert_int_equal(lay.data_off, 2 * MiB);
    assert_int_equal(lay.journal_off, 77824);
}

/* Every corrupted superblock field is refused with its own message. */
static void test_sb_fields_refused(void **state)
{
    (void)state;
    static uint8_t img[RKC_BLK], bad[RKC_BLK];
    struct rkc_sb sb;
    char err[256];
    load_golden(img);
    static const struct {
        unsigned off;
        uint8_t val;
        int rc;
        const char *msg;
    } cases[] = {
        {0, 'X', -ENODATA, "not a raidkit cache"},
        {8, 2, -EPROTONOSUPPORT, "version"},
        {12, 1, -EINVAL, "header size"},
        {20, 7, -EINVAL, "mode"},
        {64, 0x30, -EINVAL, "block size"},
        {73, 0x7f, -EINVAL, "checkpoint slots"},
        {80 + 7, 0x11, -EINVAL, NULL},
        {120, 1, -EINVAL, "journal"},
        {128, 1, -EINVAL, "data offset"},
        {300, 1, -EINVAL, "reserved"},
        {24 + 3, 0, -EINVAL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(bad, img, RKC_BLK);
        bad[cases[i].off] = cases[i].val;
        if (cases[i].off != 0 && cases[i].off != 8 && cases[i].off != 12) {
            memset(bad + 16, 0, 4);
            rk_put_le32(bad + 16, rk_crc32c(bad, RKC_BLK));
        }
        err[0] = 0;
        int r = rkc_sb_decode(bad, &sb, err, sizeof(err));
        if (cases[i].off == 80 + 7 || cases[i].off == 24 + 3) {
            assert_int_equal(r, 0); /* another instance / UUID byte: still a valid block */
            continue;
        }
        if (r != cases[i].rc || (cases[i].msg && !strstr(err, cases[i].msg)))
            fail_msg("offset %u: rc %d, message '%s'", cases[i].off, r, err);
    }
    memcpy(bad, img, RKC_BLK);
    bad[200] ^= 1; /* no crc fix */
    assert_int_equal(rkc_sb_decode(bad, &sb, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "checksum"));
}

/* The array superblock's cache binding (bytes 3336..3399): round trip, golden unchanged, bad
 * combinations refused. */
static void test_array_binding_field(void **state)
{
    (void)state;
    struct rk_sb sb, back;
    uint8_t buf[RK_SB_SIZE];
    char err[256];
    golden_sb_v1(&sb);
    assert_int_equal(sb.cache_flags, 0);
    sb.cache_flags = RK_SB_CACHE_BOUND | RK_SB_CACHE_DIRTY;
    memcpy(sb.cache_uuid, B_UUID, 16);
    rk_sb_encode(&sb, buf);
    assert_int_equal(rk_get_le32(buf + 3336), 3);
    assert_memory_equal(buf + 3344, B_UUID, 16);
    for (unsigned i = 3360; i < RK_SB_SIZE; i++)
        assert_int_equal(buf[i], 0);
    assert_int_equal(rk_sb_decode(buf, &back, err, sizeof(err)), 0);
    assert_int_equal(back.cache_flags, 3);
    assert_memory_equal(back.cache_uuid, B_UUID, 16);
    static const uint32_t badflags[] = {4, RK_SB_CACHE_DIRTY, 0};
    for (int i = 0; i < 3; i++) {
        sb.cache_flags = badflags[i];
        rk_sb_encode(&sb, buf);
        assert_int_equal(rk_sb_decode(buf, &back, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "cache"));
    }
    sb.cache_flags = RK_SB_CACHE_BOUND;
    memset(sb.cache_uuid, 0, 16);
    rk_sb_encode(&sb, buf);
    assert_int_equal(rk_sb_decode(buf, &back, err, sizeof(err)), -EINVAL);
}

/* rk_cache_binding_check: every combination of binding and cache. */
static void test_binding_check(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    const uint8_t *cu = rk_cache_meta_uuid(m);
    static const uint8_t zero[16];
    char err[512], u[RK_CACHE_UUID_STR];
    assert_int_equal(rk_cache_binding_check(0, zero, NULL, false, err, sizeof(err)), 0);
    assert_int_equal(rk_cache_binding_check(RK_CACHE_BIND_BOUND, cu, m, false, err, sizeof(err)),
                     0);
    assert_int_equal(rk_cache_binding_check(3, cu, m, false, err, sizeof(err)), 0);
    assert_int_equal(rk_cache_binding_check(RK_CACHE_BIND_BOUND, cu, NULL, false, err, sizeof(err)),
                     RK_CACHE_BIND_UNBIND);
    assert_int_equal(rk_cache_binding_check(3, cu, NULL, false, err, sizeof(err)), -EUCLEAN);
    assert_non_null(strstr(err, rk_cache_uuid_format(cu, u)));
    assert_int_equal(rk_cache_binding_check(3, cu, NULL, true, err, sizeof(err)),
                     RK_CACHE_BIND_UNBIND);
    assert_int_equal(rk_cache_binding_check(3, B_UUID, m, true, err, sizeof(err)), -ESTALE);
    assert_non_null(strstr(err, "09090909-0909-0909-0909-090909090909"));
    assert_non_null(strstr(err, u));
    assert_int_equal(rk_cache_binding_check(0, zero, m, false, err, sizeof(err)), -ESTALE);
    assert_non_null(strstr(err, "stale"));
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

/* Read-only open writes nothing; commit refuses. */
static void test_open_ro(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 4);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    rk_cache_meta_close(m);
    uint8_t *before = img_read(d);
    char err[256];
    assert_int_equal(rk_cache_meta_open_ro(d, "cache0", NULL, 0, &m, err, sizeof(err)), 0);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.mapped, 4);
    map_some(m, 0);
    uint64_t c;
    assert_int_equal(rk_cache_meta_alloc(m, &c), 0);
    rk_cache_meta_map(m, c, 900, false);
    assert_int_equal(rk_cache_meta_commit(m), -EROFS);
    assert_int_equal(rk_cache_meta_close(m), 0);
    uint8_t *after = img_read(d);
    assert_memory_equal(before, after, DEV_SIZE);
    free(before);
    free(after);
    /* Not a cache at all. */
    struct rk_dev *z = mem_dev(DEV_SIZE);
    assert_int_equal(rk_cache_meta_open_ro(z, "zero", NULL, 0, &m, err, sizeof(err)), -ENODATA);
    assert_non_null(strstr(err, "zero: not a raidkit cache device"));
    rk_dev_close(z);
    rk_dev_close(d);
}

/* Memory of the index per TiB of cache at 64 KiB blocks (docs/FORMAT.md "Cache index memory"):
 * measured on a 16 GiB cache (262144 blocks), scaled. */
static void test_index_memory(void **state)
{
    (void)state;
    struct rk_cache_meta m = {.sb = {.nblocks = 262144}};
    assert_int_equal(rkc_index_init(&m), 0);
    size_t bytes =
        m.sb.nblocks * (sizeof(*m.ent) + sizeof(*m.next)) + (sizeof(*m.bucket) << m.bucket_bits);
    double per_tib = (double)bytes * 64.0; /* 16 GiB -> 1 TiB */
    printf("# index: %zu bytes for %llu blocks = %.1f bytes/block, %.0f MiB per TiB at 64 KiB\n",
           bytes, (unsigned long long)m.sb.nblocks, (double)bytes / (double)m.sb.nblocks,
           per_tib / (double)MiB);
    assert_true(per_tib <= 256.0 * MiB);
    rkc_index_free(&m);
}

struct scan_list {
    uint64_t b[128];
    size_t n;
};

static void scan_collect(void *ctx, uint64_t cblock, uint64_t bblock)
{
    struct scan_list *l = ctx;
    (void)cblock;
    l->b[l->n++] = bblock;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The bounded scan (a heap of max entries) against a sorted reference, random bblocks. */
static void test_dirty_scan_random(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    uint64_t ref[100], seed = 77;
    size_t nref = 0;
    for (unsigned i = 0; i < 100; i++) {
        uint64_t c, b = rk_test_xorshift(&seed) % (ASIZE / BS);
        if (!rk_cache_meta_lookup(m, b, &c, NULL) || rk_cache_meta_alloc(m, &c))
            continue;
        bool dirty = i % 3 != 0;
        rk_cache_meta_map(m, c, b, dirty);
        if (dirty)
            ref[nref++] = b;
    }
    qsort(ref, nref, sizeof(ref[0]), u64_cmp);
    for (unsigned t = 0; t < 200; t++) {
        uint64_t from = rk_test_xorshift(&seed) % (ASIZE / BS);
        size_t max = rk_test_xorshift(&seed) % 20;
        struct scan_list l = {.n = 0};
        size_t got = rk_cache_meta_dirty_scan(m, from, max, scan_collect, &l);
        size_t k = 0, want = 0;
        while (k < nref && ref[k] < from)
            k++;
        for (; k < nref && (!max || want < max); k++, want++)
            assert_int_equal(l.b[want], ref[k]);
        assert_int_equal(got, want);
        assert_int_equal(l.n, want);
    }
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

/* Power cuts of a fault member (random subset of unflushed 4 KiB blocks kept) at a random write
 * while maps, unmaps, dirty flips and wraps commit: the cache always loads, as the last
 * acknowledged commit or the one that was being written, never anything else. */
static void test_power_cut_random(void **state)
{
    (void)state;
    unsigned as_acked = 0, as_inflight = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        struct rk_dev *inner = mem_dev(DEV_SIZE), *d;
        assert_int_equal(rk_fault_open(inner, false, &d), 0);
        format(d, 64 * 1024);
        struct rk_cache_meta *m = open_ok(d);
        assert_int_equal(rk_fault_set_keep(d, RK_FAULT_KEEP_RANDOM, seed), 0);
        uint64_t rs = seed * 0x9e3779b9ull + 1;
        assert_int_equal(rk_fault_cut_after(d, rk_test_xorshift(&rs) % 80), 0);
        static struct snap acked, inflight, got;
        take(m, &acked);
        for (unsigned i = 0;; i++) {
            uint64_t c, b = rk_test_xorshift(&rs) % 200;
            bool dirty;
            unsigned k = (unsigned)(rk_test_xorshift(&rs) % 3);
            if (!rk_cache_meta_lookup(m, b, &c, &dirty)) {
                if (k == 0)
                    rk_cache_meta_unmap(m, c);
                else
                    rk_cache_meta_set_dirty(m, c, !dirty);
            } else if (!rk_cache_meta_alloc(m, &c)) {
                rk_cache_meta_map(m, c, b, k != 0);
            }
            if (rk_test_xorshift(&rs) % 4)
                continue; /* several changes per commit */
            take(m, &inflight);
            if (rk_cache_meta_commit(m))
                break;
            acked = inflight;
            assert_true(i < 100000);
        }
        rk_cache_meta_close(m);
        rk_dev_close(d);
        uint8_t *img = img_read(inner);
        char err[512];
        int r = load_img(img, DEV_SIZE, &got, err, sizeof(err));
        if (r)
            fail_msg("seed %llu: %s", (unsigned long long)seed, err);
        if (!memcmp(&got, &acked, sizeof(got)))
            as_acked++;
        else if (!memcmp(&got, &inflight, sizeof(got)))
            as_inflight++;
        else
            fail_msg("seed %llu: loaded a state that was never committed",
                     (unsigned long long)seed);
        free(img);
        rk_dev_close(inner);
    }
    printf("# power cuts: %u loaded the last acknowledged commit, %u the one in flight\n", as_acked,
           as_inflight);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_commit_threads),
        cmocka_unit_test(test_commit_device_failure),
        cmocka_unit_test(test_golden_sb),
        cmocka_unit_test(test_sb_fields_refused),
        cmocka_unit_test(test_array_binding_field),
        cmocka_unit_test(test_binding_check),
        cmocka_unit_test(test_open_ro),
        cmocka_unit_test(test_index_memory),
        cmocka_unit_test(test_dirty_scan_random),
        cmocka_unit_test(test_power_cut_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
