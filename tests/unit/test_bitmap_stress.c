/* Write-intent bitmap under stress (src/raid/bitmap.c): six writers into random regions (some
 * spanning two), a seventh thread marking regions with rk_raid_bitmap_mark (as a re-add does),
 * and the cleaner clearing idle bits every few milliseconds, while area writes take random
 * time. Every data write must reach a member only once that member's area marks its region,
 * and nothing may hang (alarm). Before rk_raid_bitmap_mark held its regions while its area
 * write ran, the cleaner could clear a region the mark had found set, and the mark then
 * claimed the bit in memory: later writes into it reached the members unmarked (5 of 5 runs). */
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
#include <unistd.h>

#include <cmocka.h>

#include "meta/superblock.h"
#include "raid/bitmap_disk.h"
#include "raidkit/raid.h"
#include "rk_test.h"
#include "rk_test_bm.h"

#define T_DOFF   (1u << 20)
#define T_REGION (64u * 1024)
#define T_NREG   128u

struct sd {
    struct rk_dev *inner; /* first: rk_test_fwd */
    _Atomic int violations;
};
static pthread_mutex_t chk = PTHREAD_MUTEX_INITIALIZER;

static int sd_write(struct rk_dev *d, const void *buf, uint64_t len, uint64_t off, uint32_t fl)
{
    struct sd *o = d->priv;
    if (off == RK_BM_OFFSET) {
        if (rand() % 2)
            usleep((useconds_t)(rand() % 300));
        pthread_mutex_lock(&chk);
        int r = rk_dev_write(o->inner, buf, len, off, fl);
        pthread_mutex_unlock(&chk);
        return r;
    }
    if (off >= T_DOFF) {
        pthread_mutex_lock(&chk);
        int v = rk_test_bm_unmarked(o->inner, off, len, T_DOFF, T_REGION);
        pthread_mutex_unlock(&chk);
        if (v)
            atomic_fetch_add(&o->violations, v);
    }
    return rk_dev_write(o->inner, buf, len, off, fl);
}

static const struct rk_dev_ops sd_ops = {.kind = "sd",
                                         .read = rk_test_fwd_read,
                                         .write = sd_write,
                                         .flush = rk_test_fwd_flush,
                                         .close = rk_test_fwd_close};

struct thr {
    pthread_t t;
    struct rk_dev *raid;
    unsigned seed;
    int iters;
    int errs;
    bool marker;
};

static void *thr_run(void *arg)
{
    struct thr *w = arg;
    uint8_t buf[4096];
    memset(buf, 0x5a, sizeof(buf));
    for (int k = 0; k < w->iters; k++) {
        if (w->marker) {
            uint8_t bits[T_NREG / 8] = {0};
            bits[rand_r(&w->seed) % sizeof(bits)] = (uint8_t)rand_r(&w->seed);
            if (rk_raid_bitmap_mark(w->raid, bits, T_NREG))
                w->errs++;
            usleep(2000);
            continue;
        }
        uint64_t reg = (uint64_t)(rand_r(&w->seed) % T_NREG);
        /* sometimes a write spanning two regions */
        uint64_t off = reg * T_REGION + (rand_r(&w->seed) % 2 ? T_REGION - 2048 : 0);
        if (off + sizeof(buf) > (uint64_t)T_NREG * T_REGION)
            off = 0;
        if (rk_dev_write(w->raid, buf, sizeof(buf), off, 0))
            w->errs++;
        if (rand_r(&w->seed) % 8 == 0)
            usleep((useconds_t)(rand_r(&w->seed) % 3000));
    }
    return NULL;
}

static void test_stress(void **state)
{
    (void)state;
    alarm(120);
    struct sd *sd[2];
    struct rk_dev *m[2], *raid;
    for (uint32_t i = 0; i < 2; i++) {
        sd[i] = calloc(1, sizeof(*sd[i]));
        assert_non_null(sd[i]);
        assert_int_equal(rk_mem_open(T_DOFF + (8u << 20), 512, &sd[i]->inner), 0);
        m[i] = rk_test_wrap(&sd_ops, sd[i], sd[i]->inner, "sd");
    }
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, RK_LEVEL_RAID1, 2, 65536, T_DOFF, 8u << 20);
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
    struct rk_raid_bitmap_opts bo = {
        .area_offset = RK_BM_OFFSET, .area_size = 4096, .region = T_REGION, .idle_ms = 2};
    assert_int_equal(rk_raid_bitmap_attach(raid, &bo), 0);
    enum { N = 7 };
    struct thr t[N];
    for (int k = 0; k < N; k++) {
        t[k] = (struct thr){
            .raid = raid, .seed = 1234u + (unsigned)k, .iters = 600, .marker = k == N - 1};
        if (t[k].marker)
            t[k].iters = 200;
        assert_int_equal(pthread_create(&t[k].t, NULL, thr_run, &t[k]), 0);
    }
    for (int k = 0; k < N; k++)
        pthread_join(t[k].t, NULL);
    for (int k = 0; k < N; k++)
        assert_int_equal(t[k].errs, 0);
    struct rk_raid_bitmap_stats st;
    assert_int_equal(rk_raid_bitmap_stats(raid, &st), 0);
    assert_true(st.area_clears > 0); /* the cleaner ran meanwhile */
    assert_int_equal(atomic_load(&sd[0]->violations), 0);
    assert_int_equal(atomic_load(&sd[1]->violations), 0);
    rk_dev_close(raid);
    for (uint32_t i = 0; i < 2; i++)
        rk_dev_close(m[i]);
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_stress)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
