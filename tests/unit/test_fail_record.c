/* A member failure is recorded before any request that depended on it completes (engine.c
 * raid_fail / raid_fail_settle, docs/ARCHITECTURE.md "Durability"): a member that fails its
 * writes, and a member_failed callback that blocks until the test releases it and then
 * returns 0 (recorded) or -EIO (recorded nowhere). Runs on raid1 and raid5: the rule is the
 * engine's, not a level's. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "raidkit/raid.h"
#include "rk_test.h"

#define CHUNK   (16 * 1024u)
#define DATA_SZ (1024 * 1024u)
#define HOLD_MS 60 /* how long a held request is watched for (not) completing */

/* The member_failed callback's gate: it announces itself, waits for release, returns result. */
struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int entered, released, returned, calls;
    int result;
};

static int on_failed(void *ctx, uint32_t slot, int error)
{
    (void)slot;
    (void)error;
    struct gate *g = ctx;
    pthread_mutex_lock(&g->lock);
    g->calls++;
    g->entered = 1;
    pthread_cond_broadcast(&g->cond);
    while (!g->released)
        pthread_cond_wait(&g->cond, &g->lock);
    g->returned = 1;
    int r = g->result;
    pthread_mutex_unlock(&g->lock);
    return r;
}

static void gate_wait_entered(struct gate *g)
{
    pthread_mutex_lock(&g->lock);
    while (!g->entered)
        pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

static void gate_release(struct gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->released = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static int gate_returned(struct gate *g)
{
    pthread_mutex_lock(&g->lock);
    int r = g->returned;
    pthread_mutex_unlock(&g->lock);
    return r;
}

struct fx {
    struct rk_raid_geom g;
    struct rk_dev *m[RK_MAX_MEMBERS];
    struct rk_dev *raid;
    struct gate gate;
    uint32_t bad_slot;
};

/* level over n members; member bad_slot fails every write and flush. */
static void fx_open(struct fx *f, int level, uint32_t n, int result)
{
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->gate.lock, NULL);
    pthread_cond_init(&f->gate.cond, NULL);
    f->gate.result = result;
    f->bad_slot = n - 1;
    rk_test_geom(&f->g, level, n, CHUNK, 0, DATA_SZ);
    for (uint32_t i = 0; i < n; i++)
        f->m[i] = rk_test_bad_open(&rk_test_bad_ops, DATA_SZ);
    struct rk_test_bad *b = f->m[f->bad_slot]->priv;
    b->fail_writes = 1;
    b->fail_flush = 1;
    struct rk_raid_events ev = {.ctx = &f->gate, .member_failed = on_failed};
    assert_int_equal(rk_raid_open(&f->g, f->m, &ev, &f->raid), 0);
}

static void fx_close(struct fx *f)
{
    rk_dev_close(f->raid);
    rk_test_close_members(f->m, f->g.members);
    pthread_mutex_destroy(&f->gate.lock);
    pthread_cond_destroy(&f->gate.cond);
}

/* One request run on its own thread: a FUA write of one full stripe row at off, or a flush. */
struct req {
    pthread_t t;
    struct fx *f;
    bool flush;
    uint64_t off, len;
    _Atomic int done;
    int ret;
    int cb_returned; /* the callback had returned when the request completed */
};

static void *req_thread(void *arg)
{
    struct req *q = arg;
    if (q->flush) {
        q->ret = rk_dev_flush(q->f->raid);
    } else {
        uint8_t *buf = malloc(q->len);
        assert_non_null(buf);
        rk_test_fill64(buf, q->len, q->off + 1);
        q->ret = rk_dev_write(q->f->raid, buf, q->len, q->off, RK_WRITE_FUA);
        free(buf);
    }
    q->cb_returned = gate_returned(&q->f->gate);
    atomic_store(&q->done, 1);
    return NULL;
}

static void req_start(struct req *q, struct fx *f, bool flush, uint64_t off)
{
    memset(q, 0, sizeof(*q));
    q->f = f;
    q->flush = flush;
    q->off = off;
    /* A whole row of data chunks: every slot, the failing one included, gets a write. */
    q->len = CHUNK * (f->g.level == RK_LEVEL_RAID5 ? f->g.members - 1 : 1);
    assert_int_equal(pthread_create(&q->t, NULL, req_thread, q), 0);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/*
 * The first FUA write loses the failing member and runs the (held) callback; a second FUA write
 * and a flush start after the slot reads FAILED, skip it and succeed on the others. None of the
 * three completes while the callback is held; all complete after it returned, with 0 when it
 * recorded the failure and -EIO when it could not, after which the array refuses writes.
 */
static void held_until_recorded(int level, uint32_t n, int result)
{
    struct fx f;
    struct req first, second, flush;
    fx_open(&f, level, n, result);
    req_start(&first, &f, false, 0);
    gate_wait_entered(&f.gate);
    assert_int_equal(rk_raid_slot_state(f.raid, f.bad_slot), RK_SLOT_FAILED);
    req_start(&second, &f, false, 4 * CHUNK * n);
    req_start(&flush, &f, true, 0);
    sleep_ms(HOLD_MS);
    assert_int_equal(atomic_load(&first.done), 0);
    assert_int_equal(atomic_load(&second.done), 0);
    assert_int_equal(atomic_load(&flush.done), 0);
    gate_release(&f.gate);
    pthread_join(first.t, NULL);
    pthread_join(second.t, NULL);
    pthread_join(flush.t, NULL);
    int want = result ? -EIO : 0;
    assert_int_equal(first.ret, want);
    assert_int_equal(second.ret, want);
    assert_int_equal(flush.ret, want);
    assert_true(first.cb_returned && second.cb_returned && flush.cb_returned);
    assert_int_equal(f.gate.calls, 1);

    /* Afterwards: recorded means business as usual (degraded); not recorded means no more
     * writes or flushes, while reads still work. */
    uint8_t *buf = calloc(1, CHUNK);
    assert_non_null(buf);
    assert_int_equal(rk_dev_write(f.raid, buf, CHUNK, 8 * CHUNK * n, RK_WRITE_FUA), want);
    assert_int_equal(rk_dev_flush(f.raid), want);
    assert_int_equal(rk_dev_read(f.raid, buf, CHUNK, 0), 0);
    free(buf);
    fx_close(&f);
}

static void test_raid1_fua_held_until_recorded(void **state)
{
    (void)state;
    held_until_recorded(RK_LEVEL_RAID1, 2, 0);
}

static void test_raid1_record_failed_eio(void **state)
{
    (void)state;
    held_until_recorded(RK_LEVEL_RAID1, 2, -EIO);
}

static void test_raid5_fua_held_until_recorded(void **state)
{
    (void)state;
    held_until_recorded(RK_LEVEL_RAID5, 3, 0);
}

static void test_raid5_record_failed_eio(void **state)
{
    (void)state;
    held_until_recorded(RK_LEVEL_RAID5, 3, -EIO);
}

/* rk_raid_fail_slot reports a failure that could not be recorded, and writes stop. */
static void test_fail_slot_record_failed(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, RK_LEVEL_RAID1, 3, -EIO);
    gate_release(&f.gate);
    assert_int_equal(rk_raid_fail_slot(f.raid, 0), -EIO);
    assert_int_equal(rk_dev_flush(f.raid), -EIO);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raid1_fua_held_until_recorded),
        cmocka_unit_test(test_raid1_record_failed_eio),
        cmocka_unit_test(test_raid5_fua_held_until_recorded),
        cmocka_unit_test(test_raid5_record_failed_eio),
        cmocka_unit_test(test_fail_slot_record_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
