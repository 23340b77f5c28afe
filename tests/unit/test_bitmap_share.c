/* Write-intent bitmap: writes that enter a region together share its area write
 * (src/raid/bitmap.c bm_get), and sharing never lets a write reach a member before an area
 * write that holds its region's bit has completed. Members whose area writes wait at a gate the
 * test opens one write at a time, and which check at every data write that the area they hold
 * (the last area write that completed on them) marks the region. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "meta/superblock.h"
#include "raid/bitmap_disk.h"
#include "raidkit/raid.h"
#include "rk_test.h"
#include "rk_test_bm.h"

#define T_DOFF    (1u << 20)
#define T_REGION  (64u * 1024)
#define T_FOREVER 1000000

struct gate_dev {
    struct rk_dev *inner; /* first: rk_test_fwd */
    int arrived;          /* area writes that reached the gate */
    int permits;          /* area writes the gate lets through from now on */
    int violations;       /* data writes into a region the completed area does not mark */
    uint64_t order[16];   /* offsets of the first data writes, in the order they came (before */
    _Atomic int norder;   /* the gate's lock: a mutex need not hand itself over in order) */
};

/* One lock for the gates and the checks: a check never reads a half-written area. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;

static int gd_write(struct rk_dev *d, const void *buf, uint64_t len, uint64_t off, uint32_t fl)
{
    struct gate_dev *o = d->priv;
    if (off >= T_DOFF) {
        int k = atomic_fetch_add(&o->norder, 1);
        if (k < 16)
            o->order[k] = off;
    }
    pthread_mutex_lock(&gate_lock);
    if (off == RK_BM_OFFSET) {
        o->arrived++;
        pthread_cond_broadcast(&gate_cond);
        while (o->permits == 0)
            pthread_cond_wait(&gate_cond, &gate_lock);
        o->permits--;
        int r = rk_dev_write(o->inner, buf, len, off, fl); /* completed: now the member's */
        pthread_mutex_unlock(&gate_lock);
        return r;
    }
    if (off >= T_DOFF) {
        o->violations += rk_test_bm_unmarked(o->inner, off, len, T_DOFF, T_REGION);
    }
    pthread_mutex_unlock(&gate_lock);
    return rk_dev_write(o->inner, buf, len, off, fl);
}

static const struct rk_dev_ops gd_ops = {.kind = "gate",
                                         .read = rk_test_fwd_read,
                                         .write = gd_write,
                                         .flush = rk_test_fwd_flush,
                                         .close = rk_test_fwd_close};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Let n more area writes through on every member. */
static void gate_permit(struct gate_dev **gd, int members, int n)
{
    pthread_mutex_lock(&gate_lock);
    for (int i = 0; i < members; i++)
        gd[i]->permits += n;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

/* Wait until n area writes reached member 0's gate. */
static void gate_wait_arrived(struct gate_dev *g, int n)
{
    pthread_mutex_lock(&gate_lock);
    while (g->arrived < n)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
}

static int gate_get(const int *v)
{
    pthread_mutex_lock(&gate_lock);
    int x = *v;
    pthread_mutex_unlock(&gate_lock);
    return x;
}

/* A raid1 over two gated members with a bitmap (64 KiB regions, no cleaner pass meanwhile). */
static void gate_open_array(struct gate_dev **gd, struct rk_dev **m, struct rk_dev **raid)
{
    for (uint32_t i = 0; i < 2; i++) {
        gd[i] = calloc(1, sizeof(*gd[i]));
        assert_non_null(gd[i]);
        assert_int_equal(rk_mem_open(T_DOFF + (8u << 20), 512, &gd[i]->inner), 0);
        m[i] = rk_test_wrap(&gd_ops, gd[i], gd[i]->inner, "gate");
    }
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, RK_LEVEL_RAID1, 2, 65536, T_DOFF, 8u << 20);
    assert_int_equal(rk_raid_open(&g, m, NULL, raid), 0);
    struct rk_raid_bitmap_opts bo = {
        .area_offset = RK_BM_OFFSET, .area_size = 4096, .region = T_REGION, .idle_ms = 600000};
    assert_int_equal(rk_raid_bitmap_attach(*raid, &bo), 0);
}

struct writer {
    pthread_t t;
    struct rk_dev *raid;
    uint64_t off;
    int ret;
    _Atomic bool done;
};

static void *writer_run(void *arg)
{
    struct writer *w = arg;
    uint8_t buf[4096];
    memset(buf, 0x5a, sizeof(buf));
    w->ret = rk_dev_write(w->raid, buf, sizeof(buf), w->off, 0);
    atomic_store(&w->done, true);
    return NULL;
}

static void writer_start(struct writer *w, struct rk_dev *raid, uint64_t off)
{
    *w = (struct writer){.raid = raid, .off = off};
    assert_int_equal(pthread_create(&w->t, NULL, writer_run, w), 0);
}

static uint64_t bits_set(struct rk_dev *raid)
{
    struct rk_raid_bitmap_stats st;
    assert_int_equal(rk_raid_bitmap_stats(raid, &st), 0);
    return st.bits_set;
}

static void wait_bits_set(struct rk_dev *raid, uint64_t n)
{
    for (int t = 0; t < 3000 && bits_set(raid) < n; t++)
        sleep_ms(10);
    assert_int_equal(bits_set(raid), n);
}

/* The first write of region 0 sets its bit; its area write waits at the gate while three more
 * writes enter the region (a sequential stream with writes in flight): they wait for that area
 * write, not each for one more. */
static void test_area_write_shared(void **state)
{
    (void)state;
    struct gate_dev *gd[2];
    struct rk_dev *m[2], *raid;
    gate_open_array(gd, m, &raid);
    struct writer w[4];
    writer_start(&w[0], raid, 0);
    gate_wait_arrived(gd[0], 1);
    for (int k = 1; k < 4; k++)
        writer_start(&w[k], raid, (uint64_t)k * 4096);
    sleep_ms(300); /* the three reach the bitmap and wait (on a starved host some may not yet) */
    gate_permit(gd, 2, T_FOREVER);
    for (int k = 0; k < 4; k++) {
        pthread_join(w[k].t, NULL);
        assert_int_equal(w[k].ret, 0);
    }
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(gate_get(&gd[i]->arrived), 1);
        assert_int_equal(gate_get(&gd[i]->violations), 0);
    }
    /* The region is marked: another write there writes no area; one in region 1 writes it once. */
    struct writer again;
    writer_start(&again, raid, 8192);
    pthread_join(again.t, NULL);
    assert_int_equal(again.ret, 0);
    writer_start(&again, raid, T_REGION);
    pthread_join(again.t, NULL);
    assert_int_equal(again.ret, 0);
    for (uint32_t i = 0; i < 2; i++)
        assert_int_equal(gate_get(&gd[i]->arrived), 2);
    struct rk_raid_bitmap_stats st;
    assert_int_equal(rk_raid_bitmap_stats(raid, &st), 0);
    assert_int_equal(st.bits_set, 2);
    assert_int_equal(st.area_sets, 2);
    rk_dev_close(raid);
    for (uint32_t i = 0; i < 2; i++)
        rk_dev_close(m[i]);
}

/*
 * A write that finds its region's bit already in the image waits for an area write that began
 * after the bit was set, never for the one under way when it came. Area write A1 (region 0's
 * bit) is held at the gate; W1 then sets region 1's bit and W2 enters region 1 too, finding the
 * bit in the image and an area write running (A1, which does not hold it). A1 completes: W1 and
 * W2 must both wait for A2 (bits 0 and 1), held at the gate in turn. A waiter that took A1 as
 * its write would put region 1's data on the members while their area has bit 0 only: the
 * checker counts that, and W2 would be done before A2 is let through.
 */
static void test_waiter_needs_later_write(void **state)
{
    (void)state;
    struct gate_dev *gd[2];
    struct rk_dev *m[2], *raid;
    gate_open_array(gd, m, &raid);
    struct writer w0, w1, w2;
    writer_start(&w0, raid, 0);
    gate_wait_arrived(gd[0], 1); /* A1 under way, region 0's bit only */
    writer_start(&w1, raid, T_REGION);
    wait_bits_set(raid, 2); /* W1 set region 1's bit: it is in the image, not on disk */
    writer_start(&w2, raid, T_REGION + 4096);
    sleep_ms(200); /* W2 reaches the bitmap and waits (on a starved host it may come later) */
    assert_false(atomic_load(&w1.done));
    assert_false(atomic_load(&w2.done));
    gate_permit(gd, 2, 1); /* A1 completes on both members */
    pthread_join(w0.t, NULL);
    assert_int_equal(w0.ret, 0);
    gate_wait_arrived(gd[0], 2); /* A2 (bits 0 and 1) under way, held */
    sleep_ms(200);               /* a waiter that took A1 as its write goes on meanwhile */
    assert_false(atomic_load(&w1.done));
    assert_false(atomic_load(&w2.done));
    for (uint32_t i = 0; i < 2; i++)
        assert_int_equal(gate_get(&gd[i]->violations), 0);
    gate_permit(gd, 2, T_FOREVER);
    pthread_join(w1.t, NULL);
    pthread_join(w2.t, NULL);
    assert_int_equal(w1.ret, 0);
    assert_int_equal(w2.ret, 0);
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(gate_get(&gd[i]->violations), 0);
        assert_int_equal(gate_get(&gd[i]->arrived), 2); /* W2 shared A2: no third area write */
    }
    rk_dev_close(raid);
    for (uint32_t i = 0; i < 2; i++)
        rk_dev_close(m[i]);
}

/*
 * Writes released by one area write leave in the order they came, so a client's stream reaches
 * the members in its own order (src/raid/bitmap.c bm_sync_gen). A1 (region 0) is held at the
 * gate; writers into regions 2, 4, .., 16 come one after another, each once the previous one's
 * bit is in the image (so it waits); then the gate opens. (Every other region: writes into
 * regions one after the other would be a stream, whose bits are set ahead, bitmap.h.) Their data
 * writes must reach member 1 (the one a raid1 write reaches in the writer's own thread) in the
 * order the writers came. A writer may still be overtaken between leaving the bitmap and its member
 * write (the writer it woke can take its CPU), in a third to half of the rounds on a loaded host,
 * so the test asks for one round in order out of thirty. Released together (the old broadcast, each
 * racing for the lock), 24 of 24 rounds came out of order.
 */
static bool leave_in_order_round(void)
{
    enum { K = 8 };
    struct gate_dev *gd[2];
    struct rk_dev *m[2], *raid;
    gate_open_array(gd, m, &raid);
    struct writer w0, w[K];
    writer_start(&w0, raid, 0);
    gate_wait_arrived(gd[0], 1);
    for (int k = 0; k < K; k++) {
        writer_start(&w[k], raid, (uint64_t)(2 * k + 2) * T_REGION);
        wait_bits_set(raid, (uint64_t)k + 2);
    }
    sleep_ms(50); /* the last one reaches its wait */
    gate_permit(gd, 2, T_FOREVER);
    pthread_join(w0.t, NULL);
    assert_int_equal(w0.ret, 0);
    for (int k = 0; k < K; k++) {
        pthread_join(w[k].t, NULL);
        assert_int_equal(w[k].ret, 0);
    }
    bool in_order = atomic_load(&gd[1]->norder) == K + 1;
    /* Region 0's writer wrote A1 and went on first, but it may come later (the writers it woke
     * took its CPU): the order asked for is that of the eight that waited. */
    for (int k = 0, last = 0; in_order && k <= K; k++) {
        uint64_t reg = (gd[1]->order[k] - T_DOFF) / T_REGION;
        if (reg) {
            in_order = reg == (uint64_t)last + 2;
            last = (int)reg;
        }
    }
    assert_int_equal(gate_get(&gd[0]->violations), 0);
    assert_int_equal(gate_get(&gd[0]->arrived), 2); /* all eight shared A2 */
    rk_dev_close(raid);
    for (uint32_t i = 0; i < 2; i++)
        rk_dev_close(m[i]);
    return in_order;
}

static void test_waiters_leave_in_order(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* The sanitizers widen the gap between leaving the bitmap and the member write
     * (ThreadSanitizer: 13 of 30 runs with no round in order, the queue itself releasing in order):
     * checked in the plain build only. */
    skip();
#endif
    int rounds = 0;
    while (rounds < 30 && !leave_in_order_round())
        rounds++;
    assert_true(rounds < 30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_area_write_shared),
        cmocka_unit_test(test_waiter_needs_later_write),
        cmocka_unit_test(test_waiters_leave_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
