/* Unit tests of the fault member: pass-through, EIO ranges, fail-all, fail-after-writes, the
 * spec parser, and power cut with its undo log (over memory and over a real file member): keep
 * none/all/random per 4 KiB block, FUA and flushed data always kept, the shared power domain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidkit/member.h"

#define SZ (1u << 20)

struct fx {
    struct rk_dev *child, *dev;
    uint8_t *buf, *got;
};

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof(*x));
    *state = x;
    if (rk_mem_open(SZ, 512, &x->child) || rk_fault_open(x->child, true, &x->dev))
        return -1;
    x->buf = rk_buf_alloc(SZ);
    x->got = rk_buf_alloc(SZ);
    return 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    rk_dev_close(x->dev); /* owns the child */
    free(x->buf);
    free(x->got);
    free(x);
    return 0;
}

static void pattern(uint8_t *buf, size_t len, int seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seed * 31 + i * 7 + i / 512);
}

static void test_passthrough(void **state)
{
    struct fx *x = *state;
    struct rk_dev *d = x->dev;
    assert_string_equal(d->ops->kind, "fault");
    assert_int_equal(d->size, x->child->size);
    assert_int_equal(d->block_size, x->child->block_size);
    assert_int_equal(d->direct, x->child->direct);
    pattern(x->buf, 8192, 1);
    assert_int_equal(rk_dev_write(d, x->buf, 8192, 4096, 0), 0);
    assert_int_equal(rk_dev_read(x->child, x->got, 8192, 4096), 0);
    assert_memory_equal(x->got, x->buf, 8192);
    memset(x->got, 0, 8192);
    assert_int_equal(rk_dev_read(d, x->got, 8192, 4096), 0);
    assert_memory_equal(x->got, x->buf, 8192);
    assert_int_equal(rk_dev_flush(d), 0);
    assert_int_equal(rk_dev_write_zeroes(d, 4096, 4096, 0), 0);
    assert_int_equal(rk_dev_discard(d, 4096, 8192), 0);
    assert_int_equal(rk_dev_read(x->child, x->got, 8192, 4096), 0);
    for (int i = 0; i < 8192; i++)
        assert_int_equal(x->got[i], 0);
    /* Asynchronous submission. */
    struct rk_io_batch b;
    struct rk_io io = {.dev = d, .op = RK_OP_WRITE, .buf = x->buf, .len = 4096, .off = 0};
    rk_io_batch_init(&b);
    rk_io_submit(&b, &io);
    assert_int_equal(rk_io_batch_wait(&b), 0);
    io = (struct rk_io){.dev = d, .op = RK_OP_READ, .buf = x->got, .len = 4096, .off = 0};
    rk_io_submit(&b, &io);
    assert_int_equal(rk_io_batch_wait(&b), 0);
    assert_memory_equal(x->got, x->buf, 4096);
    rk_io_batch_destroy(&b);
    assert_int_equal(d->inflight, 0);
}

static void test_read_range(void **state)
{
    struct fx *x = *state;
    struct rk_dev *d = x->dev;
    assert_int_equal(rk_fault_add_range(d, RK_FAULT_READ, 4096, 4096), 0);
    assert_int_equal(rk_dev_read(d, x->got, 4096, 0), 0);
    assert_int_equal(rk_dev_read(d, x->got, 4096, 8192), 0);
    assert_int_equal(rk_dev_read(d, x->got, 512, 4096), -EIO);
    assert_int_equal(rk_dev_read(d, x->got, 512, 8192 - 512), -EIO);
    assert_int_equal(rk_dev_read(d, x->got, 65536, 0), -EIO);
    /* Writes to the range still work. */
    pattern(x->buf, 4096, 2);
    assert_int_equal(rk_dev_write(d, x->buf, 4096, 4096, 0), 0);
    assert_int_equal(rk_dev_write_zeroes(d, 512, 4096, 0), 0);
    assert_int_equal(rk_dev_flush(d), 0);
    rk_fault_clear(d);
    assert_int_equal(rk_dev_read(d, x->got, 4096, 4096), 0);
}

static void test_write_range(void **state)
{
    struct fx *x = *state;
    struct rk_dev *d = x->dev;
    assert_int_equal(rk_fault_add_range(d, RK_FAULT_WRITE, 65536, 512), 0);
    pattern(x->buf, 65536, 3);
    assert_int_equal(rk_dev_write(d, x->buf, 65536, 0, 0), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 4096, 65536 - 2048, 0), -EIO);
    assert_int_equal(rk_dev_write_zeroes(d, 512, 65536, 0), -EIO);
    assert_int_equal(rk_dev_discard(d, 131072, 0), -EIO);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 65536 + 512, 0), 0);
    assert_int_equal(rk_dev_read(d, x->got, 4096, 65536), 0); /* reads unaffected */
    struct rk_io_batch b;
    struct rk_io io = {.dev = d, .op = RK_OP_WRITE, .buf = x->buf, .len = 512, .off = 65536};
    rk_io_batch_init(&b);
    rk_io_submit(&b, &io);
    assert_int_equal(rk_io_batch_wait(&b), 1);
    assert_int_equal(io.result, -EIO);
    rk_io_batch_destroy(&b);
    /* The failed writes never reached the child. */
    assert_int_equal(rk_dev_read(x->child, x->got, 65536, 0), 0);
    assert_memory_equal(x->got, x->buf, 65536);
}

static void test_range_limits(void **state)
{
    struct fx *x = *state;
    for (int i = 0; i < 16; i++)
        assert_int_equal(rk_fault_add_range(x->dev, RK_FAULT_READ, (uint64_t)i * 4096, 512), 0);
    assert_int_equal(rk_fault_add_range(x->dev, RK_FAULT_READ, 0, 512), -ENOSPC);
    rk_fault_clear(x->dev);
    assert_int_equal(rk_fault_add_range(x->dev, RK_FAULT_READ, 0, 512), 0);
    assert_int_equal(rk_fault_add_range(x->dev, RK_FAULT_READ, 0, 0), -EINVAL);
    assert_int_equal(rk_fault_add_range(x->dev, 0, 0, 512), -EINVAL);
    assert_int_equal(rk_fault_add_range(x->child, RK_FAULT_READ, 0, 512), -EINVAL);
}

static void test_fail_all(void **state)
{
    struct fx *x = *state;
    struct rk_dev *d = x->dev;
    rk_fault_fail_all(d, true);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), -EIO);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 0, 0), -EIO);
    assert_int_equal(rk_dev_flush(d), -EIO);
    assert_int_equal(rk_dev_discard(d, 512, 0), -EIO);
    assert_int_equal(rk_dev_write_zeroes(d, 512, 0, 0), -EIO);
    rk_fault_fail_all(d, false);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), 0);
    assert_int_equal(rk_dev_flush(d), 0);
}

static void test_fail_after_writes(void **state)
{
    struct fx *x = *state;
    struct rk_dev *d = x->dev;
    rk_fault_fail_after_writes(d, 2);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 0, 0), 0);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 512, 0), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 1024, 0), -EIO);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), -EIO);
    assert_int_equal(rk_dev_flush(d), -EIO);
    rk_fault_clear(d);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), 0);
    rk_fault_fail_after_writes(d, 0);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 0, 0), -EIO);
}

/* The count is exact under concurrency: 4 threads x 50 writes, 120 allowed. */
struct faw_arg {
    struct rk_dev *dev;
    int thread;
    int ok;
};

static void *faw_worker(void *p)
{
    struct faw_arg *a = p;
    uint8_t *buf = rk_buf_alloc(512);
    memset(buf, 1, 512);
    for (int i = 0; i < 50; i++)
        if (rk_dev_write(a->dev, buf, 512, (uint64_t)(a->thread * 50 + i) * 512, 0) == 0)
            a->ok++;
    free(buf);
    return NULL;
}

static void test_fail_after_threads(void **state)
{
    struct fx *x = *state;
    pthread_t th[4];
    struct faw_arg a[4];
    rk_fault_fail_after_writes(x->dev, 120);
    for (int i = 0; i < 4; i++) {
        a[i] = (struct faw_arg){.dev = x->dev, .thread = i};
        pthread_create(&th[i], NULL, faw_worker, &a[i]);
    }
    int ok = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ok += a[i].ok;
    }
    assert_int_equal(ok, 120);
}

static void test_spec(void **state)
{
    struct fx *x = *state;
    struct rk_dev *d = x->dev;
    char err[256];
    assert_int_equal(
        rk_fault_apply_spec(d, "read-eio=64K+4K,write-eio=0+512,eio=1M-8K+4K", err, sizeof(err)),
        -EINVAL); /* "1M-8K" is not a size */
    assert_non_null(strstr(err, "1M-8K"));
    assert_int_equal(rk_dev_read(d, x->got, 4096, 65536), 0); /* nothing applied */
    assert_int_equal(
        rk_fault_apply_spec(d, "read-eio=64K+4K,write-eio=0+512,eio=8K+4K", err, sizeof(err)), 0);
    assert_int_equal(rk_dev_read(d, x->got, 4096, 65536), -EIO);
    assert_int_equal(rk_dev_write(d, x->buf, 4096, 65536, 0), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 0, 0), -EIO);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), 0);
    assert_int_equal(rk_dev_read(d, x->got, 512, 8192), -EIO);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 8192 + 3584, 0), -EIO);
    rk_fault_clear(d);
    assert_int_equal(rk_fault_apply_spec(d, "fail-after-writes=1", err, sizeof(err)), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 0, 0), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 0, 0), -EIO);
    rk_fault_clear(d);
    assert_int_equal(rk_fault_apply_spec(d, "fail-all", err, sizeof(err)), 0);
    assert_int_equal(rk_dev_flush(d), -EIO);
    rk_fault_clear(d);

    const char *bad[] = {
        "bogus",
        "read-eio=1M",
        "read-eio=x+4K",
        "eio=0+0",
        "eio=+4K",
        "fail-after-writes=abc",
        "fail-after-writes=",
        "fail-all,,fail-all",
        "fail-all,",
        "write-eio=18446744073709551615+2",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(rk_fault_apply_spec(d, bad[i], err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "fault spec"));
    }
    assert_int_equal(rk_fault_apply_spec(d, NULL, err, sizeof(err)), 0); /* nothing to do */
    assert_int_equal(rk_fault_apply_spec(d, "", err, sizeof(err)), 0);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), 0);
    assert_int_equal(rk_fault_apply_spec(x->child, "fail-all", err, sizeof(err)), -EINVAL);
    /* Too many ranges: refused as a whole. */
    char many[1024] = "";
    size_t n = 0;
    for (int i = 0; i < 17; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "%seio=%dK+1K", i ? "," : "", i * 4);
    assert_int_equal(rk_fault_apply_spec(d, many, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "16"));
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), 0);
    /* Nothing of a failed spec was applied. */
    assert_int_equal(rk_fault_apply_spec(d, "fail-all,bogus", err, sizeof(err)), -EINVAL);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), 0);
}

/* Write A, flush, write B (unflushed, overlapping A), FUA write C (overlapping B), cut:
 * the child holds A and C, B is gone, and every later request fails. */
static void power_cut_scenario(struct rk_dev *child, struct rk_dev *d, bool async)
{
    const uint64_t K = 1024;
    uint8_t *a = rk_buf_alloc(16 * K), *b = rk_buf_alloc(16 * K), *c = rk_buf_alloc(8 * K);
    uint8_t *want = calloc(1, 64 * K), *got = rk_buf_alloc(64 * K);
    pattern(a, 16 * K, 10);
    pattern(b, 16 * K, 11);
    pattern(c, 8 * K, 12);
    struct rk_io_batch bt;
    rk_io_batch_init(&bt);
    struct rk_io io[3] = {
        {.dev = d, .op = RK_OP_WRITE, .buf = a, .len = 16 * K, .off = 0},
        {.dev = d, .op = RK_OP_WRITE, .buf = b, .len = 16 * K, .off = 8 * K},
        {.dev = d, .op = RK_OP_WRITE, .buf = c, .len = 8 * K, .off = 20 * K, .flags = 1},
    };
    for (int i = 0; i < 3; i++) {
        if (async) {
            rk_io_submit(&bt, &io[i]);
            assert_int_equal(rk_io_batch_wait(&bt), 0);
        } else {
            assert_int_equal(rk_dev_write(d, io[i].buf, io[i].len, io[i].off, io[i].flags), 0);
        }
        if (i == 0)
            assert_int_equal(rk_dev_flush(d), 0);
    }
    /* Two unflushed writes to one place: undone newest first, the oldest content returns. */
    assert_int_equal(rk_dev_write(d, c, 4 * K, 40 * K, 0), 0);
    assert_int_equal(rk_dev_write(d, a, 4 * K, 40 * K, 0), 0);
    assert_int_equal(rk_fault_power_cut(d), 0);
    memcpy(want, a, 16 * K);
    memcpy(want + 20 * K, c, 8 * K);
    assert_int_equal(rk_dev_read(child, got, 64 * K, 0), 0);
    assert_memory_equal(got, want, 64 * K);
    assert_int_equal(rk_dev_read(d, got, 512, 0), -EIO);
    assert_int_equal(rk_dev_write(d, a, 512, 0, 0), -EIO);
    assert_int_equal(rk_dev_flush(d), -EIO);
    rk_fault_clear(d); /* a power cut is not undone by clear */
    assert_int_equal(rk_dev_read(d, got, 512, 0), -EIO);
    if (async) {
        rk_io_submit(&bt, &io[0]);
        assert_int_equal(rk_io_batch_wait(&bt), 1);
        assert_int_equal(io[0].result, -EIO);
    }
    rk_io_batch_destroy(&bt);
    free(a);
    free(b);
    free(c);
    free(want);
    free(got);
}

static void test_power_cut_mem(void **state)
{
    struct fx *x = *state;
    power_cut_scenario(x->child, x->dev, false);
}

/* The same over a real file member with io_uring, writes submitted asynchronously. */
static void test_power_cut_file(void **state)
{
    char dir[] = "/tmp/rk-fault-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/m0", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, SZ), 0);
    close(fd);
    struct rk_dev *file, *d;
    assert_int_equal(rk_file_open(path, 0, &file), 0);
    assert_int_equal(rk_fault_open(file, false, &d), 0);
    assert_int_equal(d->direct, file->direct);
    power_cut_scenario(file, d, true);
    assert_int_equal(d->inflight, 0);
    rk_dev_close(d);
    rk_dev_close(file);
    unlink(path);
    rmdir(dir);
}

/* A flush drops only what it covers; writes after it are still undone. */
static void test_power_cut_after_flush(void **state)
{
    struct fx *x = *state;
    struct rk_dev *d = x->dev;
    pattern(x->buf, 16384, 20);
    assert_int_equal(rk_dev_write(d, x->buf, 8192, 0, 0), 0);
    assert_int_equal(rk_dev_flush(d), 0);
    assert_int_equal(rk_dev_write(d, x->buf + 8192, 4096, 0, 0), 0);
    assert_int_equal(rk_dev_write_zeroes(d, 4096, 4096, 0), 0);
    assert_int_equal(rk_dev_discard(d, 4096, 0), 0);
    assert_int_equal(rk_dev_write(d, x->buf + 8192, 8192, 8192, RK_WRITE_FUA), 0);
    assert_int_equal(rk_fault_power_cut(d), 0);
    assert_int_equal(rk_dev_read(x->child, x->got, 16384, 0), 0);
    assert_memory_equal(x->got, x->buf, 8192);
    assert_memory_equal(x->got + 8192, x->buf + 8192, 8192);
    assert_int_equal(rk_fault_power_cut(d), 0); /* a second cut has nothing to undo */
    assert_int_equal(rk_dev_read(x->child, x->got, 16384, 0), 0);
    assert_memory_equal(x->got, x->buf, 16384);
}

/* The undo log is bounded: beyond 64 MiB unflushed, the oldest writes become permanent while
 * the newest are still undone. */
static void test_undo_bound(void **state)
{
    struct rk_dev *mem, *d;
    const uint64_t M = 1 << 20;
    assert_int_equal(rk_mem_open(96 * M, 4096, &mem), 0);
    assert_int_equal(rk_fault_open(mem, true, &d), 0);
    uint8_t *buf = rk_buf_alloc(M), *got = rk_buf_alloc(M);
    for (int i = 0; i < 80; i++) {
        pattern(buf, M, 40 + i);
        assert_int_equal(rk_dev_write(d, buf, M, (uint64_t)i * M, 0), 0);
    }
    assert_int_equal(rk_fault_power_cut(d), 0);
    pattern(buf, M, 40);
    assert_int_equal(rk_dev_read(mem, got, M, 0), 0);
    assert_memory_equal(got, buf, M); /* oldest: kept */
    assert_int_equal(rk_dev_read(mem, got, M, 79 * M), 0);
    for (uint64_t i = 0; i < M; i++) /* newest: undone */
        assert_int_equal(got[i], 0);
    free(buf);
    free(got);
    rk_dev_close(d);
}

/* Blocks [0, 16) hold A (flushed); B is a FUA write over blocks 0-3; C (blocks 4-11) and D
 * (blocks 12-15) are unflushed; then a cut with keep mode `keep` and seed. got receives the
 * child's 16 blocks, st the cut statistics. */
static void subset_scenario(enum rk_fault_keep keep, uint64_t seed, uint8_t *got,
                            struct rk_fault_cut_stats *st)
{
    const uint64_t B = RK_FAULT_ATOM;
    struct rk_dev *mem, *d;
    assert_int_equal(rk_mem_open(SZ, 4096, &mem), 0);
    assert_int_equal(rk_fault_open(mem, true, &d), 0);
    assert_int_equal(rk_fault_set_keep(d, keep, seed), 0);
    uint8_t *buf = rk_buf_alloc(16 * B);
    pattern(buf, 16 * B, 1);
    assert_int_equal(rk_dev_write(d, buf, 16 * B, 0, 0), 0);
    assert_int_equal(rk_dev_flush(d), 0);
    pattern(buf, 4 * B, 2);
    assert_int_equal(rk_dev_write(d, buf, 4 * B, 0, RK_WRITE_FUA), 0);
    pattern(buf, 8 * B, 3);
    assert_int_equal(rk_dev_write(d, buf, 8 * B, 4 * B, 0), 0);
    pattern(buf, 4 * B, 4);
    assert_int_equal(rk_dev_write(d, buf, 4 * B, 12 * B, 0), 0);
    assert_int_equal(rk_fault_power_cut(d), 0);
    assert_int_equal(rk_fault_last_cut(d, st), 0);
    assert_int_equal(rk_dev_read(mem, got, 16 * B, 0), 0);
    assert_int_equal(rk_dev_write(d, buf, B, 0, 0), -EIO);
    free(buf);
    rk_dev_close(d);
}

/* Which generation (1 = A, 3/4 = the unflushed write) block i holds, or -1 for anything else
 * (a torn or foreign block). */
static int block_gen(const uint8_t *got, int i)
{
    const uint64_t B = RK_FAULT_ATOM;
    uint8_t *want = malloc(16 * B);
    int g = -1, unflushed = i < 12 ? 3 : 4;
    uint64_t off = i < 12 ? 4 * B : 12 * B;
    pattern(want, 16 * B, 1);
    if (!memcmp(got + i * B, want + i * B, B))
        g = 1;
    pattern(want, 8 * B, unflushed);
    if (!memcmp(got + i * B, want + (i * B - off), B))
        g = unflushed;
    free(want);
    return g;
}

/* keep=random: flushed and FUA data always persist; each 4 KiB block of each unflushed write
 * persists whole or not at all, independently; the same seed gives the same image, and over
 * a few seeds both outcomes occur. keep=all keeps everything. */
static void test_keep_random_subset(void **state)
{
    (void)state;
    const uint64_t B = RK_FAULT_ATOM;
    uint8_t *got = rk_buf_alloc(16 * B), *again = rk_buf_alloc(16 * B), *fua = malloc(4 * B);
    struct rk_fault_cut_stats st;
    pattern(fua, 4 * B, 2);
    unsigned kept_total = 0, undone_total = 0;
    for (uint64_t seed = 1; seed <= 16; seed++) {
        subset_scenario(RK_FAULT_KEEP_RANDOM, seed, got, &st);
        assert_memory_equal(got, fua, 4 * B); /* FUA over flushed data: kept */
        unsigned kept = 0;
        for (int i = 4; i < 16; i++) {
            int g = block_gen(got, i);
            assert_true(g == 1 || g == 3 || g == 4); /* old or new, never torn */
            kept += g != 1;
        }
        assert_int_equal(st.writes, 2);
        assert_int_equal(st.kept + st.undone, 12);
        assert_int_equal(st.kept, kept);
        kept_total += kept;
        undone_total += 12 - kept;
        subset_scenario(RK_FAULT_KEEP_RANDOM, seed, again, &st);
        assert_memory_equal(got, again, 16 * B); /* reproducible */
    }
    assert_true(kept_total > 0 && undone_total > 0);
    subset_scenario(RK_FAULT_KEEP_ALL, 1, got, &st);
    for (int i = 4; i < 16; i++)
        assert_int_equal(block_gen(got, i), i < 12 ? 3 : 4);
    assert_int_equal(st.kept, 12);
    subset_scenario(RK_FAULT_KEEP_NONE, 1, got, &st);
    for (int i = 4; i < 16; i++)
        assert_int_equal(block_gen(got, i), 1);
    assert_int_equal(st.undone, 12);
    assert_int_equal(rk_fault_set_keep(NULL, RK_FAULT_KEEP_ALL, 1), -EINVAL);
    free(got);
    free(again);
    free(fua);
}

/* Two members in the shared power domain, cut-after=3 counted over both: the fourth write
 * fails, both members are off from then on, and both lose their unflushed writes. Closing
 * both resets the domain. */
static void test_shared_cut_after(void **state)
{
    (void)state;
    struct rk_dev *mem[2], *d[2];
    uint8_t *buf = rk_buf_alloc(4096), *got = rk_buf_alloc(4096), *zero = calloc(1, 4096);
    char err[256];
    memset(buf, 0xab, 4096);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rk_mem_open(SZ, 4096, &mem[i]), 0);
        assert_int_equal(rk_fault_open(mem[i], true, &d[i]), 0);
        assert_int_equal(rk_fault_apply_spec(d[i], "power=shared,cut-after=3", err, sizeof(err)),
                         0);
    }
    assert_int_equal(rk_dev_write(d[0], buf, 4096, 0, 0), 0);
    assert_int_equal(rk_dev_write(d[1], buf, 4096, 0, 0), 0);
    assert_int_equal(rk_dev_flush(d[1]), 0); /* d[1]'s write is durable */
    assert_int_equal(rk_dev_write(d[1], buf, 4096, 8192, 0), 0);
    assert_int_equal(rk_dev_write(d[0], buf, 4096, 4096, 0), -EIO); /* the cut */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rk_dev_read(d[i], got, 4096, 0), -EIO);
        assert_int_equal(rk_dev_flush(d[i]), -EIO);
    }
    assert_int_equal(rk_dev_read(mem[0], got, 4096, 0), 0);
    assert_memory_equal(got, zero, 4096); /* unflushed: undone (keep=none) */
    assert_int_equal(rk_dev_read(mem[1], got, 4096, 0), 0);
    assert_memory_equal(got, buf, 4096); /* flushed: kept */
    assert_int_equal(rk_dev_read(mem[1], got, 4096, 8192), 0);
    assert_memory_equal(got, zero, 4096);
    rk_dev_close(d[0]);
    rk_dev_close(d[1]);
    /* A new member of the (reset) shared domain works again. */
    assert_int_equal(rk_mem_open(SZ, 4096, &mem[0]), 0);
    assert_int_equal(rk_fault_open(mem[0], true, &d[0]), 0);
    assert_int_equal(rk_fault_apply_spec(d[0], "power=shared", err, sizeof(err)), 0);
    assert_int_equal(rk_dev_write(d[0], buf, 4096, 0, 0), 0);
    rk_dev_close(d[0]);
    free(buf);
    free(got);
    free(zero);
}

/* The power-cut spec items: valid combinations apply, bad values are refused as a whole. */
static void test_spec_power(void **state)
{
    struct fx *x = *state;
    struct rk_dev *d = x->dev;
    char err[256];
    assert_int_equal(
        rk_fault_apply_spec(d, "cut-after=2,keep=all,seed=5,latency=10", err, sizeof(err)), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 0, 0), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 512, 0), 0);
    assert_int_equal(rk_dev_write(d, x->buf, 512, 1024, 0), -EIO);
    assert_int_equal(rk_dev_read(d, x->got, 512, 0), -EIO);
    const char *bad[] = {
        "keep=maybe",       "keep=",       "cut-after=x",      "cut-after=", "seed=-1",
        "latency=10000001", "power=local", "cut-after=1,bogus"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(rk_fault_apply_spec(d, bad[i], err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "fault spec"));
    }
}

struct slow_write {
    struct rk_dev *dev;
    uint8_t *buf;
    int r;
};

static void *slow_writer(void *p)
{
    struct slow_write *w = p;
    w->r = rk_dev_write(w->dev, w->buf, 4096, 0, 0);
    return NULL;
}

/* A write running when the power is cut completes with -EIO, never with success (nothing can
 * acknowledge after the cut), and with keep=none its data is undone. The child is a second
 * fault device with latency, so the write is still running when the cut comes. */
static void test_cut_fails_running_write(void **state)
{
    (void)state;
    struct rk_dev *mem, *slow, *d;
    assert_int_equal(rk_mem_open(SZ, 4096, &mem), 0);
    assert_int_equal(rk_fault_open(mem, true, &slow), 0);
    assert_int_equal(rk_fault_set_latency(slow, 100 * 1000), 0);
    assert_int_equal(rk_fault_open(slow, true, &d), 0);
    struct slow_write w = {.dev = d, .buf = rk_buf_alloc(4096)};
    uint8_t *got = rk_buf_alloc(4096), *zero = calloc(1, 4096);
    memset(w.buf, 0x5a, 4096);
    pthread_t th;
    pthread_create(&th, NULL, slow_writer, &w);
    usleep(50 * 1000); /* the write is inside the slow child now (its undo read takes 100 ms) */
    assert_int_equal(rk_fault_power_cut(d), 0);
    pthread_join(th, NULL);
    assert_int_equal(w.r, -EIO);
    assert_int_equal(rk_dev_read(mem, got, 4096, 0), 0);
    assert_memory_equal(got, zero, 4096);
    rk_dev_close(d);
    free(w.buf);
    free(got);
    free(zero);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_passthrough, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_range_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_after_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_after_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power_cut_mem, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power_cut_after_flush, setup, teardown),
        cmocka_unit_test(test_power_cut_file),
        cmocka_unit_test(test_undo_bound),
        cmocka_unit_test(test_keep_random_subset),
        cmocka_unit_test(test_shared_cut_after),
        cmocka_unit_test(test_cut_fails_running_write),
        cmocka_unit_test_setup_teardown(test_spec_power, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
