/* Re-add (docs/FORMAT.md "Re-add", docs/ARCHITECTURE.md "Re-add"): the superblock fields, and in
 * the engine: no bit is cleared while a slot is away, a re-add resyncs only the marked regions
 * and leaves the rest of the member alone, the clear's event is recorded before bits go (and not
 * for a slot that failed during the cleaner's flush), and a scrub repair sets bits before it
 * writes. */
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

#include "core/util.h"
#include "meta/superblock.h"
#include "raidkit/raid.h"
#include "rk_test.h"
#include "sb_golden.h"

#define DOFF   (1u << 20)
#define REGION (64u * 1024)
#define DATA   (4u << 20)
#define BM_OFF (4096u * 2)

static void test_sb_fields(void **state)
{
    (void)state;
    struct rk_sb a, b;
    uint8_t buf[RK_SB_SIZE];
    char err[256] = "";
    golden_sb_v1(&a);
    assert_int_equal(a.events_cleared, 0); /* older arrays: zero, still valid */
    a.events_cleared = a.events;
    a.slots[1].state = RK_SLOT_REBUILDING;
    a.readd_slots = 1u << 1;
    rk_sb_encode(&a, buf);
    assert_int_equal(rk_get_le64(buf + 216), a.events);
    assert_int_equal(rk_get_le32(buf + 228), 2);
    assert_int_equal(rk_sb_decode(buf, &b, err, sizeof(err)), 0);
    assert_int_equal(b.events_cleared, a.events);
    assert_int_equal(b.readd_slots, 2);
    struct rk_sb bad = a;
    bad.events_cleared = a.events + 1;
    assert_int_equal(rk_sb_check(&bad, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "bitmap cleared at event"));
    bad = a;
    bad.readd_slots = 1u << 31; /* beyond the slots */
    assert_int_equal(rk_sb_check(&bad, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "re-add flag of slot 31"));
    /* A flag on a slot that is not rebuilding means nothing: dropped at decode. */
    a.readd_slots = (1u << 0) | (1u << 1);
    rk_sb_encode(&a, buf);
    assert_int_equal(rk_sb_decode(buf, &b, err, sizeof(err)), 0);
    assert_int_equal(b.readd_slots, 1u << 1);
}

static int g_clearing; /* bitmap_clearing calls */
static int on_clearing(void *ctx)
{
    (void)ctx;
    g_clearing++;
    return 0;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Wait up to 5 s for the bitmap to hold want set bits (-1: any number > 0). */
static uint64_t wait_set(struct rk_dev *raid, long want)
{
    struct rk_raid_bitmap_stats st;
    for (int t = 0; t < 100; t++) {
        rk_raid_bitmap_stats(raid, &st);
        if (want < 0 ? st.set > 0 : st.set == (uint64_t)want)
            break;
        nap_ms(50);
    }
    return st.set;
}

static void test_engine_readd(void **state)
{
    (void)state;
    struct rk_dev *m[2], *raid;
    for (int i = 0; i < 2; i++)
        assert_int_equal(rk_mem_open(DOFF + DATA, 512, &m[i]), 0);
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, RK_LEVEL_RAID1, 2, 65536, DOFF, DATA);
    struct rk_raid_events ev = {.bitmap_clearing = on_clearing};
    assert_int_equal(rk_raid_open(&g, m, &ev, &raid), 0);
    struct rk_raid_bitmap_opts bo = {
        .area_offset = BM_OFF, .area_size = 4096, .region = REGION, .idle_ms = 100};
    assert_int_equal(rk_raid_bitmap_attach(raid, &bo), 0);
    static uint8_t a[REGION], b[REGION], got[REGION];
    rk_test_fill64(a, sizeof(a), 1);
    rk_test_fill64(b, sizeof(b), 2);
    for (uint64_t off = 0; off < DATA; off += REGION)
        assert_int_equal(rk_dev_write(raid, a, REGION, off, 0), 0);
    assert_int_equal(wait_set(raid, 0), 0); /* whole: idle bits clear */
    assert_true(g_clearing > 0);

    assert_int_equal(rk_raid_fail_slot(raid, 1), 0);
    int before = g_clearing;
    assert_int_equal(rk_dev_write(raid, b, REGION, 3 * REGION, 0), 0);
    assert_int_equal(rk_dev_write(raid, b, 4096, 9 * REGION + 4096, 0), 0);
    nap_ms(600); /* many idle times: a slot is away, nothing is cleared */
    assert_int_equal(wait_set(raid, 2), 2);
    assert_int_equal(g_clearing, before);
    /* Something behind raidkit's back in an unmarked region of m1: a re-add must keep it
     * (it reconstructs only marked regions), a full rebuild would overwrite it. */
    static uint8_t mark[4096];
    memset(mark, 0x5a, sizeof(mark));
    assert_int_equal(rk_dev_write(m[1], mark, sizeof(mark), DOFF + 20 * REGION, 0), 0);

    assert_int_equal(rk_raid_add_member(raid, 1, m[1]), 0);
    assert_int_equal(rk_raid_slot_state(raid, 1), RK_SLOT_REBUILDING);
    assert_int_equal(rk_raid_readd_start(raid, 1, 0, 0), 0);
    assert_int_equal(rk_raid_job_wait(raid), 0);
    struct rk_raid_progress p;
    assert_int_equal(rk_raid_progress(raid, &p), 0);
    assert_true(p.readd);
    assert_int_equal(p.resynced, 2 * REGION);
    assert_int_equal(rk_raid_slot_state(raid, 1), RK_SLOT_ACTIVE);
    assert_int_equal(rk_dev_read(m[1], got, REGION, DOFF + 3 * REGION), 0);
    assert_memory_equal(got, b, REGION);
    assert_int_equal(rk_dev_read(m[1], got, 4096, DOFF + 20 * REGION), 0);
    assert_memory_equal(got, mark, 4096);

    /* Whole again: the bits clear; a scrub repair sets them before it writes. */
    assert_int_equal(wait_set(raid, 0), 0);
    struct rk_raid_bitmap_stats st;
    rk_raid_bitmap_stats(raid, &st);
    uint64_t sets = st.area_sets;
    assert_int_equal(rk_raid_scrub_start(raid, true, 0), 0);
    assert_int_equal(rk_raid_job_wait(raid), 0);
    rk_raid_bitmap_stats(raid, &st);
    assert_true(st.area_sets > sets);
    rk_dev_close(raid);
    for (int i = 0; i < 2; i++)
        rk_dev_close(m[i]);
}

/* A member whose flush can be held (a remote member's flush waits for its op timeout): the
 * flush signals that it entered, then waits until released. Everything else passes through. */
struct gate {
    struct rk_dev *child;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool armed, entered;
};

static int gate_read(struct rk_dev *d, void *buf, uint64_t len, uint64_t off)
{
    return rk_dev_read(((struct gate *)d->priv)->child, buf, len, off);
}

static int gate_write(struct rk_dev *d, const void *buf, uint64_t len, uint64_t off, uint32_t fl)
{
    return rk_dev_write(((struct gate *)d->priv)->child, buf, len, off, fl);
}

static int gate_flush(struct rk_dev *d)
{
    struct gate *g = d->priv;
    pthread_mutex_lock(&g->lock);
    if (g->armed) {
        g->entered = true;
        pthread_cond_broadcast(&g->cond);
        while (g->armed)
            pthread_cond_wait(&g->cond, &g->lock);
    }
    pthread_mutex_unlock(&g->lock);
    return rk_dev_flush(g->child);
}

static int gate_discard(struct rk_dev *d, uint64_t len, uint64_t off)
{
    return rk_dev_discard(((struct gate *)d->priv)->child, len, off);
}

static int gate_zero(struct rk_dev *d, uint64_t len, uint64_t off, uint32_t fl)
{
    return rk_dev_write_zeroes(((struct gate *)d->priv)->child, len, off, fl);
}

static void gate_close(struct rk_dev *d)
{
    (void)d; /* the test owns the gate and its child */
}

static const struct rk_dev_ops gate_ops = {.kind = "gate",
                                           .read = gate_read,
                                           .write = gate_write,
                                           .flush = gate_flush,
                                           .discard = gate_discard,
                                           .write_zeroes = gate_zero,
                                           .close = gate_close};

static void *fail_slot1(void *raid)
{
    rk_raid_fail_slot(raid, 1);
    return NULL;
}

/* The cleaner looked (not degraded), then a slot failed while its flush ran: no clear's event
 * may be recorded after that (the failure's event would become the clear's, and the member's
 * re-add a whole rebuild), and its bits stay. */
static void test_fail_during_clean_flush(void **state)
{
    (void)state;
    struct gate g = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    struct rk_dev *m[2], *m0, *raid;
    assert_int_equal(rk_mem_open(DOFF + DATA, 512, &m0), 0);
    assert_int_equal(rk_mem_open(DOFF + DATA, 512, &g.child), 0);
    m[0] = m0;
    m[1] = rk_dev_alloc(&gate_ops, &g, "gate");
    assert_non_null(m[1]);
    m[1]->size = g.child->size;
    m[1]->block_size = m[1]->opt_io_size = 512;
    struct rk_raid_geom geo = {0};
    rk_test_geom(&geo, RK_LEVEL_RAID1, 2, 65536, DOFF, DATA);
    struct rk_raid_events ev = {.bitmap_clearing = on_clearing};
    assert_int_equal(rk_raid_open(&geo, m, &ev, &raid), 0);
    struct rk_raid_bitmap_opts bo = {
        .area_offset = BM_OFF, .area_size = 4096, .region = REGION, .idle_ms = 100};
    assert_int_equal(rk_raid_bitmap_attach(raid, &bo), 0);
    static uint8_t a[REGION];
    rk_test_fill64(a, sizeof(a), 3);
    assert_int_equal(rk_dev_write(raid, a, REGION, 0, 0), 0);
    assert_int_equal(wait_set(raid, 0), 0);

    /* Armed once the write returned (its own bitmap update may flush), well before the
     * region is idle (100 ms). */
    assert_int_equal(rk_dev_write(raid, a, REGION, 5 * REGION, 0), 0);
    pthread_mutex_lock(&g.lock);
    g.armed = true;
    pthread_mutex_unlock(&g.lock);
    pthread_mutex_lock(&g.lock); /* the cleaner's flush of the idle region holds */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 5;
    while (!g.entered && pthread_cond_timedwait(&g.cond, &g.lock, &dl) == 0)
        ;
    bool entered = g.entered;
    pthread_mutex_unlock(&g.lock);
    assert_true(entered);
    int before = g_clearing;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fail_slot1, raid), 0);
    for (int i = 0; i < 100 && rk_raid_slot_state(raid, 1) == RK_SLOT_ACTIVE; i++)
        nap_ms(10);
    pthread_mutex_lock(&g.lock);
    g.armed = false;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
    pthread_join(t, NULL);
    assert_int_equal(rk_raid_slot_state(raid, 1), RK_SLOT_FAILED);
    nap_ms(500); /* several cleaner passes */
    assert_int_equal(g_clearing, before);
    assert_int_equal(wait_set(raid, 1), 1);
    rk_dev_close(raid);
    rk_dev_close(m[1]);
    rk_dev_close(m0);
    rk_dev_close(g.child);
}

static void test_readd_needs_bitmap(void **state)
{
    (void)state;
    struct rk_dev *m[2], *raid;
    for (int i = 0; i < 2; i++)
        assert_int_equal(rk_mem_open(DOFF + DATA, 512, &m[i]), 0);
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, RK_LEVEL_RAID1, 2, 65536, DOFF, DATA);
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
    assert_int_equal(rk_raid_fail_slot(raid, 1), 0);
    assert_int_equal(rk_raid_add_member(raid, 1, m[1]), 0);
    assert_int_equal(rk_raid_readd_start(raid, 1, 0, 0), -ENOENT);
    rk_dev_close(raid);
    for (int i = 0; i < 2; i++)
        rk_dev_close(m[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sb_fields),
        cmocka_unit_test(test_engine_readd),
        cmocka_unit_test(test_fail_during_clean_flush),
        cmocka_unit_test(test_readd_needs_bitmap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
