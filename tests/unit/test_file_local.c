/* Unit tests of rk_io_run rounds on the per-thread rings of file members (rk_dev_ops.start_local
 * / wait_local, src/member/file_local.c): data round trips from several threads with FUA writes
 * and flushes in the rounds, rounds that mix file members with a device without a local engine,
 * rounds larger than the local limit, an invalid io inside a round, and exact statistics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidkit/member.h"
#include "rk_test.h"

#define NFILE   3
#define FSIZE   (4u << 20)
#define THREADS 4
#define ROUNDS  60 /* THREADS * ROUNDS * PIECE <= FSIZE */
#define PIECE   (16u << 10)

struct fx {
    char dir[64];
    char path[NFILE][96];
    struct rk_dev *dev[NFILE + 1]; /* NFILE file members in /tmp, then one memory device */
    bool direct;                   /* the files are O_DIRECT (the per-thread ring path) */
};

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof(*x));
    *state = x;
    snprintf(x->dir, sizeof(x->dir), "/tmp/rk-local-XXXXXX");
    if (!mkdtemp(x->dir))
        return -1;
    for (int i = 0; i < NFILE; i++) {
        snprintf(x->path[i], sizeof(x->path[i]), "%s/m%d", x->dir, i);
        int fd = open(x->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, FSIZE))
            return -1;
        close(fd);
        if (rk_file_open(x->path[i], 0, &x->dev[i]))
            return -1;
    }
    x->direct = x->dev[0]->direct && !rk_file_inline(x->dev[0]);
    return rk_mem_open(FSIZE, 512, &x->dev[NFILE]) ? -1 : 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    for (int i = 0; i <= NFILE; i++)
        if (x->dev[i])
            rk_dev_close(x->dev[i]);
    for (int i = 0; i < NFILE; i++)
        unlink(x->path[i]);
    rmdir(x->dir);
    free(x);
    return 0;
}

struct worker {
    struct fx *x;
    int id;
    int failures;
};

/* Each thread owns the slice [id * ROUNDS * PIECE, ...) of every device: ROUNDS rounds of one
 * write per device (the first FUA, a flush of file 0 in every fourth round), then a round of
 * reads of the same pieces, compared. */
static void *worker_run(void *arg)
{
    struct worker *w = arg;
    struct fx *x = w->x;
    uint8_t *wb = rk_buf_alloc((NFILE + 1) * PIECE), *rb = rk_buf_alloc((NFILE + 1) * PIECE);
    struct rk_io ios[NFILE + 2];
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    for (int r = 0; r < ROUNDS && !w->failures; r++) {
        uint64_t off = ((uint64_t)w->id * ROUNDS + (uint64_t)r) * PIECE;
        int n = 0;
        for (int d = 0; d <= NFILE; d++) {
            uint8_t *p = wb + (size_t)d * PIECE;
            rk_test_fill64(p, PIECE, (uint64_t)w->id << 32 | (uint64_t)r << 8 | (uint64_t)d);
            rk_io_init(&ios[n++], x->dev[d], RK_OP_WRITE, p, PIECE, off, d == 0 ? RK_WRITE_FUA : 0);
        }
        if (r % 4 == 0)
            rk_io_init(&ios[n++], x->dev[0], RK_OP_FLUSH, NULL, 0, 0, 0);
        if (rk_io_run(&b, ios, n))
            w->failures++;
        n = 0;
        for (int d = 0; d <= NFILE; d++)
            rk_io_init(&ios[n++], x->dev[d], RK_OP_READ, rb + (size_t)d * PIECE, PIECE, off, 0);
        if (rk_io_run(&b, ios, n) || memcmp(wb, rb, (size_t)(NFILE + 1) * PIECE))
            w->failures++;
    }
    rk_io_batch_destroy(&b);
    free(wb);
    free(rb);
    return NULL;
}

static void test_rounds_threads(void **state)
{
    struct fx *x = *state;
    if (!x->direct)
        print_message("note: /tmp has no O_DIRECT here; the rounds take the inline path\n");
    pthread_t t[THREADS];
    struct worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.x = x, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    /* Every io counted exactly once, nothing left in flight. */
    for (int d = 0; d <= NFILE; d++) {
        struct rk_dev *dev = x->dev[d];
        assert_int_equal(atomic_load(&dev->stats.writes), THREADS * ROUNDS);
        assert_int_equal(atomic_load(&dev->stats.reads), THREADS * ROUNDS);
        assert_int_equal(atomic_load(&dev->stats.write_bytes), (uint64_t)THREADS * ROUNDS * PIECE);
        assert_int_equal(atomic_load(&dev->stats.errors), 0);
        assert_int_equal(atomic_load(&dev->inflight), 0);
    }
    assert_int_equal(atomic_load(&x->dev[0]->stats.flushes), THREADS * ((ROUNDS + 3) / 4));
}

/* A round of 80 ios (more than the local limit) and a round with an out-of-range io: the others
 * complete, the bad one fails alone and is counted as nothing but an error-free rejection. */
static void test_big_and_invalid(void **state)
{
    struct fx *x = *state;
    enum { N = 80 };
    uint8_t *buf = rk_buf_alloc(N * 4096), *back = rk_buf_alloc(N * 4096);
    struct rk_io ios[N];
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    rk_test_fill64(buf, N * 4096, 99);
    for (int i = 0; i < N; i++)
        rk_io_init(&ios[i], x->dev[i % NFILE], RK_OP_WRITE, buf + i * 4096, 4096,
                   (uint64_t)(i / NFILE) * 4096, 0);
    assert_int_equal(rk_io_run(&b, ios, N), 0);
    for (int i = 0; i < N; i++)
        rk_io_init(&ios[i], x->dev[i % NFILE], RK_OP_READ, back + i * 4096, 4096,
                   (uint64_t)(i / NFILE) * 4096, 0);
    assert_int_equal(rk_io_run(&b, ios, N), 0);
    assert_memory_equal(buf, back, N * 4096);

    uint64_t w0 = atomic_load(&x->dev[1]->stats.writes);
    rk_io_init(&ios[0], x->dev[0], RK_OP_WRITE, buf, 4096, 0, 0);
    rk_io_init(&ios[1], x->dev[1], RK_OP_WRITE, buf, 4096, FSIZE, 0); /* past the end */
    rk_io_init(&ios[2], x->dev[2], RK_OP_WRITE, buf, 4096, 8192, 0);
    assert_int_equal(rk_io_run(&b, ios, 3), 1);
    assert_int_equal(ios[0].result, 0);
    assert_int_not_equal(ios[1].result, 0);
    assert_int_equal(ios[2].result, 0);
    assert_int_equal(atomic_load(&x->dev[1]->stats.writes), w0);
    for (int d = 0; d < NFILE; d++)
        assert_int_equal(atomic_load(&x->dev[d]->inflight), 0);
    rk_io_batch_destroy(&b);
    free(buf);
    free(back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rounds_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_and_invalid, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
