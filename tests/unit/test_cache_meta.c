/* Cache device metadata (src/cache/meta*.c, docs/FORMAT.md "Cache device"): format/open round
 * trip, map/unmap/commit/replay, the reuse rule of unmapped blocks, crash simulation (uncommitted
 * tail dropped, torn and flipped journal blocks), checkpoints and the journal wrap, a
 * re-initialisation cut halfway, a cache bound to another array, corrupted metadata refused, and
 * the golden superblock image decoded field by field. */
#include <errno.h>
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
#include "core/util.h"
#include "raidkit/member.h"
#include "rk_test.h"

#define DEV_SIZE (8 * MiB)
#define BS       (64 * 1024u)
#define ASIZE    (64 * MiB)

static const uint8_t A_UUID[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t B_UUID[16] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};

static struct rk_dev *mem_dev(uint64_t size)
{
    struct rk_dev *d;
    assert_int_equal(rk_mem_open(size, 512, &d), 0);
    return d;
}

static void format(struct rk_dev *d, uint64_t jsize)
{
    struct rk_cache_format_params p = {
        .array_size = ASIZE, .block_size = BS, .mode = RK_CACHE_WRITEBACK, .journal_size = jsize};
    memcpy(p.array_uuid, A_UUID, 16);
    char err[256] = "";
    int r = rk_cache_meta_format(d, "cache0", &p, err, sizeof(err));
    if (r)
        fail_msg("format: %s", err);
}

static struct rk_cache_meta *open_ok(struct rk_dev *d)
{
    struct rk_cache_meta *m = NULL;
    char err[512] = "";
    int r = rk_cache_meta_open(d, "cache0", A_UUID, ASIZE, &m, err, sizeof(err));
    if (r)
        fail_msg("open: %s", err);
    return m;
}

static int open_err(struct rk_dev *d, char *err, size_t len)
{
    struct rk_cache_meta *m = NULL;
    err[0] = 0;
    int r = rk_cache_meta_open(d, "cache0", A_UUID, ASIZE, &m, err, len);
    if (!r)
        rk_cache_meta_close(m);
    return r;
}

/* Map n blocks: bblock i*3+1 -> a fresh cblock, dirty when i is odd. */
static void map_some(struct rk_cache_meta *m, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t c;
        assert_int_equal(rk_cache_meta_alloc(m, &c), 0);
        rk_cache_meta_map(m, c, i * 3 + 1, i & 1);
    }
}

/* The state of bblocks [0, nb): cblock+1 (0 unmapped) and dirty, for comparing loads. */
struct snap {
    uint64_t c[1024];
    bool dirty[1024];
};

static void take(struct rk_cache_meta *m, struct snap *s)
{
    memset(s, 0, sizeof(*s));
    for (uint64_t b = 0; b < 1024; b++) {
        uint64_t c;
        bool d;
        if (!rk_cache_meta_lookup(m, b, &c, &d)) {
            s->c[b] = c + 1;
            s->dirty[b] = d;
        }
    }
}

static void test_format_open(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    assert_int_equal(rk_cache_meta_block_size(m), BS);
    uint64_t n = rk_cache_meta_blocks(m), off = rk_cache_meta_data_offset(m);
    assert_true(n >= 16);
    assert_true(off % MiB == 0 && off + n * BS <= DEV_SIZE && off + (n + 1) * BS > DEV_SIZE);
    assert_int_equal(rk_cache_meta_mode(m), RK_CACHE_WRITEBACK);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.mapped, 0);
    assert_int_equal(st.free, n);
    assert_memory_equal(rk_cache_meta_array_uuid(m), A_UUID, 16);
    uint64_t c;
    assert_int_equal(rk_cache_meta_lookup(m, 5, &c, NULL), -ENOENT);
    assert_int_equal(rk_cache_meta_close(m), 0);
    rk_dev_close(d);
}

static void test_map_commit_reopen(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 20);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    uint64_t c;
    bool dirty;
    assert_int_equal(rk_cache_meta_lookup(m, 4, &c, &dirty), 0);
    assert_true(dirty);
    rk_cache_meta_set_dirty(m, c, false);
    assert_int_equal(rk_cache_meta_lookup(m, 7, &c, &dirty), 0);
    rk_cache_meta_unmap(m, c);
    assert_int_equal(rk_cache_meta_set_mode(m, RK_CACHE_WRITETHROUGH), 0);
    struct snap before, after;
    take(m, &before);
    /* No close: reopen from the journal alone (as after a crash). */
    struct rk_cache_meta *m2 = open_ok(d);
    take(m2, &after);
    assert_memory_equal(&before, &after, sizeof(before));
    assert_int_equal(rk_cache_meta_mode(m2), RK_CACHE_WRITETHROUGH);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m2, &st);
    assert_int_equal(st.mapped, 19);
    assert_int_equal(st.dirty, 9);
    assert_int_equal(st.free, rk_cache_meta_blocks(m2) - 19);
    rk_cache_meta_close(m2);
    /* m's memory is dropped without writing (its device moved on). */
    m->readonly = true;
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

static void test_unmap_reuse_after_durable(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(2 * MiB + 16 * BS);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    uint64_t n = rk_cache_meta_blocks(m), c, c2;
    assert_int_equal(n, 16);
    map_some(m, 16);
    assert_int_equal(rk_cache_meta_alloc(m, &c), -ENOSPC);
    assert_int_equal(rk_cache_meta_lookup(m, 1, &c, NULL), 0);
    rk_cache_meta_unmap(m, c);
    assert_int_equal(rk_cache_meta_lookup(m, 1, &c2, NULL), -ENOENT);
    /* Not durable yet: not handed out. */
    assert_int_equal(rk_cache_meta_alloc(m, &c2), -ENOSPC);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    assert_int_equal(rk_cache_meta_alloc(m, &c2), 0);
    assert_int_equal(c2, c);
    rk_cache_meta_release(m, c2);
    assert_int_equal(rk_cache_meta_alloc(m, &c2), 0);
    assert_int_equal(c2, c);
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

struct scan_ctx {
    uint64_t last;
    size_t n;
};

static void scan_fn(void *ctx, uint64_t cblock, uint64_t bblock)
{
    struct scan_ctx *s = ctx;
    assert_true(s->n == 0 || bblock > s->last);
    s->last = bblock;
    s->n++;
    (void)cblock;
}

static void test_dirty_scan(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 40); /* dirty: odd i, bblocks 4, 10, 16, ... */
    struct scan_ctx s = {0};
    assert_int_equal(rk_cache_meta_dirty_scan(m, 0, 0, scan_fn, &s), 20);
    s = (struct scan_ctx){0};
    assert_int_equal(rk_cache_meta_dirty_scan(m, 11, 5, scan_fn, &s), 5);
    assert_int_equal(s.last, 40); /* 16, 22, 28, 34, 40 */
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

static void test_other_array_refused(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = NULL;
    char err[512] = "";
    assert_int_equal(rk_cache_meta_open(d, "cache0", B_UUID, ASIZE, &m, err, sizeof(err)), -EXDEV);
    assert_null(m);
    assert_non_null(strstr(err, "cache0"));
    assert_non_null(strstr(err, "01020304-0506-0708-090a-0b0c0d0e0f10"));
    assert_non_null(strstr(err, "09090909-0909-0909-0909-090909090909"));
    assert_int_equal(rk_cache_meta_open(d, "cache0", A_UUID, ASIZE * 2, &m, err, sizeof(err)),
                     -EXDEV);
    assert_int_equal(open_err(d, err, sizeof(err)), 0);
    rk_dev_close(d);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_open),
        cmocka_unit_test(test_map_commit_reopen),
        cmocka_unit_test(test_unmap_reuse_after_durable),
        cmocka_unit_test(test_dirty_scan),
        cmocka_unit_test(test_other_array_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
