/* Unit tests of the emul member's rounds and sleeps (src/member/emul.c): rk_io_run rounds over SSD
 * models run on the round's own thread (start_local / wait_local: the child I/O at once, one sleep
 * to the round's latest model time), never complete before the model's time, keep the model's
 * queueing (rate gate, channels), count in-flight requests until they complete, report a child's
 * error, and mix with HDD models (those still go to the timer thread); a thread that slept for
 * the emulation has a 1 us timer slack. Timing checks are lower bounds only (a busy host may
 * wake us late, never early). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "raidkit/device.h"
#include "raidkit/emul.h"
#include "raidkit/member.h"

#define US  1000ull
#define N   3
#define BLK 4096u

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* An SSD whose latency (3 ms) dwarfs the host's own costs; rate gates far above what we use
 * unless iops says otherwise. */
static struct rk_emul_params slow_ssd(uint32_t iops)
{
    struct rk_emul_params p = {.name = "t-slow-ssd",
                               .kind = RK_EMUL_SSD,
                               .read_latency_us = 3000,
                               .write_latency_us = 3000,
                               .read_iops = iops,
                               .write_iops = iops,
                               .read_bw = 1000000000,
                               .write_bw = 1000000000,
                               .parallelism = 8};
    return p;
}

static struct rk_dev *emul_over_mem(const struct rk_emul_params *p)
{
    struct rk_dev *mem, *dev;
    assert_int_equal(rk_mem_open(1u << 20, 512, &mem), 0);
    assert_int_equal(rk_emul_open(mem, true, p, &dev), 0);
    return dev;
}

/* Run one round of n ios (op on devs[i] at offset off, buffer bufs[i] of BLK bytes, or none);
 * checks that every io succeeded, that those in the local mask ran on this thread's engine (never
 * given to a batch: not through the timer thread) and the others did not, and returns the
 * round's wall time (ns). */
static uint64_t round_of(struct rk_dev **devs, int n, enum rk_op op, void **bufs, uint64_t off,
                         unsigned local)
{
    struct rk_io io[N];
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    for (int i = 0; i < n; i++)
        rk_io_init(&io[i], devs[i], op, bufs ? bufs[i] : NULL, bufs ? BLK : 0, off, 0);
    uint64_t t0 = mono_ns();
    assert_int_equal(rk_io_run(&b, io, n), 0);
    uint64_t dt = mono_ns() - t0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(io[i].result, 0);
        if (local & (1u << i))
            assert_null(io[i].batch);
        else
            assert_ptr_equal(io[i].batch, &b);
    }
    rk_io_batch_destroy(&b);
    return dt;
}

static void test_round_on_ssds(void **state)
{
    (void)state;
    struct rk_emul_params p = slow_ssd(100000);
    struct rk_dev *d[N];
    void *w[N], *r[N];
    for (int i = 0; i < N; i++) {
        d[i] = emul_over_mem(&p);
        w[i] = rk_buf_alloc(BLK);
        r[i] = rk_buf_alloc(BLK);
        memset(w[i], 0x11 * (i + 1), BLK);
    }
    /* Writes, then reads of what they wrote: never before the model's 3 ms. */
    assert_true(round_of(d, N, RK_OP_WRITE, w, 8192, 7) >= 3000 * US);
    for (int i = 0; i < N; i++)
        assert_int_equal(atomic_load(&d[i]->inflight), 0);
    assert_true(round_of(d, N, RK_OP_READ, r, 8192, 7) >= 3000 * US);
    for (int i = 0; i < N; i++) {
        assert_memory_equal(r[i], w[i], BLK);
        assert_int_equal(atomic_load(&d[i]->inflight), 0);
        assert_int_equal(atomic_load(&d[i]->stats.reads), 1);
        assert_int_equal(atomic_load(&d[i]->stats.writes), 1);
    }
    /* A flush completes at once (the SSD model has no write cache to drain). */
    round_of(d, N, RK_OP_FLUSH, NULL, 0, 7);
    /* The thread that slept for the emulation sleeps precisely from now on. */
    assert_int_equal(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 1000);
    for (int i = 0; i < N; i++) {
        rk_dev_close(d[i]);
        free(w[i]);
        free(r[i]);
    }
}

/* Three writes to one SSD in one round go through its rate gate in turn, as when submitted to
 * the timer thread: at 1000 IOPS the third starts 2 ms after the first, so the round lasts at
 * least 2 ms + the 3 ms latency. */
static void test_round_keeps_queueing(void **state)
{
    (void)state;
    struct rk_emul_params p = slow_ssd(1000);
    struct rk_dev *one = emul_over_mem(&p);
    struct rk_dev *d[N] = {one, one, one};
    void *w[N];
    for (int i = 0; i < N; i++) {
        w[i] = rk_buf_alloc(BLK);
        memset(w[i], 0x5a, BLK);
    }
    assert_true(round_of(d, N, RK_OP_WRITE, w, 0, 7) >= 5000 * US);
    assert_int_equal(atomic_load(&one->stats.writes), N);
    assert_int_equal(atomic_load(&one->inflight), 0);
    rk_dev_close(one);
    for (int i = 0; i < N; i++)
        free(w[i]);
}

/* A round over two SSD models and an HDD model (the HDD's request goes to its timer thread). */
static void test_round_mixed_with_hdd(void **state)
{
    (void)state;
    struct rk_emul_params p = slow_ssd(100000), h;
    char err[256];
    assert_int_equal(rk_emul_profile_load("hdd-7200", &h, err, sizeof(err)), 0);
    struct rk_dev *d[N] = {emul_over_mem(&p), emul_over_mem(&h), emul_over_mem(&p)};
    void *w[N], *r[N];
    for (int i = 0; i < N; i++) {
        w[i] = rk_buf_alloc(BLK);
        r[i] = rk_buf_alloc(BLK);
        memset(w[i], 0xa0 + i, BLK);
    }
    assert_true(round_of(d, N, RK_OP_WRITE, w, 4096, 5) >= 3000 * US);
    assert_true(round_of(d, N, RK_OP_READ, r, 4096, 5) >= 3000 * US);
    for (int i = 0; i < N; i++) {
        assert_memory_equal(r[i], w[i], BLK);
        assert_int_equal(atomic_load(&d[i]->inflight), 0);
        rk_dev_close(d[i]);
        free(w[i]);
        free(r[i]);
    }
}

/* While a round sleeps to its model time, each of its ios counts in its device's in-flight gauge
 * (raid1/10 reads go to the least busy member by it). A 200 ms latency leaves a wide margin. */
struct bg_round {
    struct rk_dev **d;
    void **w;
    atomic_bool done;
};

static void *bg_round_run(void *arg)
{
    struct bg_round *g = arg;
    round_of(g->d, N, RK_OP_WRITE, g->w, 0, 7);
    atomic_store(&g->done, true);
    return NULL;
}

static void test_round_inflight(void **state)
{
    (void)state;
    struct rk_emul_params p = slow_ssd(100000);
    p.write_latency_us = 200000;
    struct rk_dev *d[N];
    void *w[N];
    for (int i = 0; i < N; i++) {
        d[i] = emul_over_mem(&p);
        w[i] = rk_buf_alloc(BLK);
        memset(w[i], 0x3c, BLK);
    }
    struct bg_round g = {.d = d, .w = w};
    atomic_init(&g.done, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, bg_round_run, &g), 0);
    bool seen = false;
    for (int k = 0; k < 150 && !seen; k++) {
        seen = true;
        for (int i = 0; i < N; i++)
            seen = seen && atomic_load(&d[i]->inflight) == 1;
        if (!seen) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
    assert_true(seen);
    assert_false(atomic_load(&g.done));
    pthread_join(t, NULL);
    for (int i = 0; i < N; i++) {
        assert_int_equal(atomic_load(&d[i]->inflight), 0);
        rk_dev_close(d[i]);
        free(w[i]);
    }
}

/* A child's error is the io's result; the round's other ios complete normally. */
static void test_round_child_error(void **state)
{
    (void)state;
    struct rk_emul_params p = slow_ssd(100000);
    struct rk_dev *mem, *fault, *bad, *good = emul_over_mem(&p);
    assert_int_equal(rk_mem_open(1u << 20, 512, &mem), 0);
    assert_int_equal(rk_fault_open(mem, true, &fault), 0);
    assert_int_equal(rk_fault_add_range(fault, RK_FAULT_WRITE, 0, 65536), 0);
    assert_int_equal(rk_emul_open(fault, true, &p, &bad), 0);
    void *buf = rk_buf_alloc(BLK);
    memset(buf, 0x77, BLK);
    struct rk_io io[2];
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    rk_io_init(&io[0], bad, RK_OP_WRITE, buf, BLK, 4096, 0);
    rk_io_init(&io[1], good, RK_OP_WRITE, buf, BLK, 4096, 0);
    assert_int_equal(rk_io_run(&b, io, 2), 1);
    assert_int_equal(io[0].result, -EIO);
    assert_int_equal(io[1].result, 0);
    assert_int_equal(atomic_load(&bad->inflight), 0);
    assert_int_equal(atomic_load(&good->inflight), 0);
    assert_int_equal(atomic_load(&bad->stats.errors), 1);
    rk_io_batch_destroy(&b);
    free(buf);
    rk_dev_close(bad);
    rk_dev_close(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_on_ssds),        cmocka_unit_test(test_round_keeps_queueing),
        cmocka_unit_test(test_round_mixed_with_hdd), cmocka_unit_test(test_round_inflight),
        cmocka_unit_test(test_round_child_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
