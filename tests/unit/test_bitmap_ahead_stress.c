/* Stress: bitmap look-ahead (src/raid/bitmap.c bm_ahead) under concurrent streams, random writers,
 * rk_raid_bitmap_mark and a fast cleaner; raid5 gathering's wait for a WRITING entry under
 * several streams, flushes and a member that starts failing writes.
 *
 * Invariants checked:
 *  - a data write reaches a member only when that member's area marks its region;
 *  - BM_SET in memory => the bit is in every member's area (checked under the same mutex that
 *    serializes area writes, so no area write lands between the state read and the area read);
 *  - no hang (alarm), data reads back as written. */
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
#include <unistd.h>

#include <cmocka.h>

#include "meta/superblock.h"
#include "raid/bitmap.h"
#include "raid/bitmap_disk.h"
#include "raid/raid_int.h"
#include "raidkit/raid.h"
#include "rk_test.h"
#include "rk_test_bm.h"

#define T_DOFF   (1u << 20)
#define T_REGION (64u * 1024)
#define T_MDATA  (8u << 20)
#define T_NREG   (T_MDATA / T_REGION)

struct sd {
    struct rk_dev *inner; /* first: rk_test_fwd */
    _Atomic int violations;
    _Atomic int fail_after; /* > 0: data writes fail once this many more landed */
    _Atomic int failing;
};
static pthread_mutex_t chk = PTHREAD_MUTEX_INITIALIZER;

static int sd_write(struct rk_dev *d, const void *buf, uint64_t len, uint64_t off, uint32_t fl)
{
    struct sd *o = d->priv;
    if (atomic_load(&o->failing))
        return -EIO;
    if (off == RK_BM_OFFSET) {
        if (rand() % 2)
            usleep((useconds_t)(rand() % 300));
        pthread_mutex_lock(&chk);
        int r = rk_dev_write(o->inner, buf, len, off, fl);
        pthread_mutex_unlock(&chk);
        return r;
    }
    if (off >= T_DOFF && off < T_DOFF + T_MDATA) {
        pthread_mutex_lock(&chk);
        int v = rk_test_bm_unmarked(o->inner, off, len, T_DOFF, T_REGION);
        pthread_mutex_unlock(&chk);
        if (v)
            atomic_fetch_add(&o->violations, v);
        int fa = atomic_load(&o->fail_after);
        if (fa > 0 && atomic_fetch_sub(&o->fail_after, 1) == 1) {
            atomic_store(&o->failing, 1);
            return -EIO;
        }
    }
    return rk_dev_write(o->inner, buf, len, off, fl);
}

static const struct rk_dev_ops sd_ops = {.kind = "sd",
                                         .read = rk_test_fwd_read,
                                         .write = sd_write,
                                         .flush = rk_test_fwd_flush,
                                         .close = rk_test_fwd_close};

struct ctx {
    struct rk_dev *raid;
    struct sd *sd[8];
    uint32_t n;
    _Atomic int stop;
    _Atomic int bad_set; /* BM_SET regions whose bit some member's area lacks */
    uint64_t asize;      /* array bytes */
    uint8_t *shadow;
};

struct thr {
    pthread_t t;
    struct ctx *c;
    unsigned seed;
    int iters;
    int errs;
    int kind;        /* 0 stream, 1 random, 2 marker, 3 checker, 4 flusher */
    uint64_t lo, hi; /* own array range (stream/random) */
    uint64_t bs;
};

static void *thr_run(void *arg)
{
    struct thr *w = arg;
    struct ctx *c = w->c;
    uint8_t *buf = malloc(w->bs ? w->bs : 4096);
    struct raid_priv *r = raid_priv_of(c->raid);
    for (int k = 0; k < w->iters && !atomic_load(&c->stop); k++) {
        switch (w->kind) {
        case 0: { /* a stream from a random place of its range for a random length */
            uint64_t nb = (w->hi - w->lo) / w->bs;
            uint64_t pos = w->lo + (uint64_t)(rand_r(&w->seed) % nb) * w->bs;
            int len = 8 + rand_r(&w->seed) % 200;
            for (int i = 0; i < len && pos + w->bs <= w->hi; i++, pos += w->bs) {
                for (uint64_t b = 0; b < w->bs; b++)
                    buf[b] = (uint8_t)rand_r(&w->seed);
                if (rk_dev_write(c->raid, buf, w->bs, pos, 0))
                    w->errs++;
                else if (c->shadow)
                    memcpy(c->shadow + pos, buf, w->bs);
            }
            break;
        }
        case 1: {
            uint64_t nb = (w->hi - w->lo) / w->bs;
            uint64_t pos = w->lo + (uint64_t)(rand_r(&w->seed) % nb) * w->bs;
            for (uint64_t b = 0; b < w->bs; b++)
                buf[b] = (uint8_t)rand_r(&w->seed);
            if (rk_dev_write(c->raid, buf, w->bs, pos, 0))
                w->errs++;
            else if (c->shadow)
                memcpy(c->shadow + pos, buf, w->bs);
            if (rand_r(&w->seed) % 8 == 0)
                usleep((useconds_t)(rand_r(&w->seed) % 2000));
            break;
        }
        case 2: {
            uint8_t bits[T_NREG / 8] = {0};
            bits[rand_r(&w->seed) % sizeof(bits)] = (uint8_t)rand_r(&w->seed);
            if (rk_raid_bitmap_mark(c->raid, bits, T_NREG))
                w->errs++;
            usleep(3000);
            break;
        }
        case 3: {
            pthread_mutex_lock(&chk);
            uint8_t area[8][4096];
            uint32_t usable = raid_slot_mask(r, RAID_STATES_WRITE);
            /* read every writable member's area once, then compare */
            for (uint32_t s = 0; s < c->n; s++)
                if (usable & (1u << s))
                    rk_dev_read(c->sd[s]->inner, area[s], 4096, RK_BM_OFFSET);
            for (uint64_t i = 0; i < T_NREG; i++) {
                if (!raid_bitmap_region_set(r, i))
                    continue;
                for (uint32_t s = 0; s < c->n; s++)
                    if ((usable & (1u << s)) && !rk_bm_test(area[s], i)) {
                        atomic_fetch_add(&c->bad_set, 1);
                        fprintf(stderr, "region %llu BM_SET, slot %u area clear\n",
                                (unsigned long long)i, s);
                    }
            }
            pthread_mutex_unlock(&chk);
            usleep(500);
            break;
        }
        case 4:
            rk_dev_flush(c->raid);
            usleep((useconds_t)(1000 + rand_r(&w->seed) % 4000));
            break;
        }
    }
    free(buf);
    return NULL;
}

/* One run: level over n members, bitmap idle idle_ms; nstream stream writers of bs bytes and
 * nrand random writers of rbs bytes, each in its own slice of the array. */
static void run(int level, uint32_t n, uint32_t nstream, uint64_t bs, uint32_t nrand, uint64_t rbs,
                int iters, bool fail_member, unsigned seed)
{
    alarm(240); /* a hang fails the test */
    if (level == RK_LEVEL_RAID5)
        setenv("RAIDKIT_RAID5_GATHER_US", "3000", 1);
    struct ctx c = {0};
    struct rk_dev *m[8];
    c.n = n;
    for (uint32_t i = 0; i < n; i++) {
        c.sd[i] = calloc(1, sizeof(*c.sd[i]));
        assert_non_null(c.sd[i]);
        assert_int_equal(rk_mem_open(T_DOFF + T_MDATA, 512, &c.sd[i]->inner), 0);
        m[i] = rk_test_wrap(&sd_ops, c.sd[i], c.sd[i]->inner, "sd");
    }
    struct rk_raid_geom g = {0};
    rk_test_geom(&g, level, n, 65536, T_DOFF, T_MDATA);
    assert_int_equal(rk_raid_open(&g, m, NULL, &c.raid), 0);
    struct rk_raid_bitmap_opts bo = {
        .area_offset = RK_BM_OFFSET, .area_size = 4096, .region = T_REGION, .idle_ms = 2};
    assert_int_equal(rk_raid_bitmap_attach(c.raid, &bo), 0);
    c.asize = c.raid->size;
    c.shadow = calloc(1, c.asize);
    uint32_t nw = nstream + nrand;
    uint64_t slice = c.asize / nw;
    slice -= slice % (level == RK_LEVEL_RAID1 ? 65536 : 65536 * (n - 1));
    enum { MAXT = 16 };
    struct thr t[MAXT];
    uint32_t nt = 0;
    for (uint32_t k = 0; k < nw; k++)
        t[nt++] = (struct thr){.c = &c,
                               .seed = seed + k,
                               .iters = iters,
                               .kind = k < nstream ? 0 : 1,
                               .lo = k * slice,
                               .hi = (k + 1) * slice,
                               .bs = k < nstream ? bs : rbs};
    t[nt++] = (struct thr){.c = &c, .seed = seed + 100, .iters = 100000, .kind = 2};
    t[nt++] = (struct thr){.c = &c, .seed = seed + 101, .iters = 100000, .kind = 3};
    t[nt++] = (struct thr){.c = &c, .seed = seed + 102, .iters = 100000, .kind = 4};
    if (fail_member)
        atomic_store(&c.sd[1]->fail_after, 300);
    for (uint32_t k = 0; k < nt; k++)
        assert_int_equal(pthread_create(&t[k].t, NULL, thr_run, &t[k]), 0);
    for (uint32_t k = 0; k < nw; k++)
        pthread_join(t[k].t, NULL);
    atomic_store(&c.stop, 1);
    for (uint32_t k = nw; k < nt; k++)
        pthread_join(t[k].t, NULL);
    for (uint32_t k = 0; k < nw; k++)
        assert_int_equal(t[k].errs, 0);
    assert_int_equal(rk_dev_flush(c.raid), 0);
    struct rk_raid_bitmap_stats st;
    assert_int_equal(rk_raid_bitmap_stats(c.raid, &st), 0);
    struct rk_raid_gather_stats gs;
    rk_raid_gather_stats(c.raid, &gs);
    fprintf(stderr,
            "level %d: area_sets %llu clears %llu bits_set %llu; gather held %llu whole %llu "
            "memory %llu bad_set %d viol %d %d\n",
            level, (unsigned long long)st.area_sets, (unsigned long long)st.area_clears,
            (unsigned long long)st.bits_set, (unsigned long long)gs.writes_held,
            (unsigned long long)gs.out_whole_fill, (unsigned long long)gs.out_memory,
            atomic_load(&c.bad_set), atomic_load(&c.sd[0]->violations),
            atomic_load(&c.sd[1]->violations));
    uint8_t *back = malloc(c.asize);
    assert_int_equal(rk_dev_read(c.raid, back, c.asize, 0), 0);
    uint64_t first_bad = UINT64_MAX;
    for (uint64_t i = 0; i < c.asize && first_bad == UINT64_MAX; i++)
        if (back[i] != c.shadow[i])
            first_bad = i;
    if (first_bad != UINT64_MAX)
        fprintf(stderr, "data mismatch at %llu\n", (unsigned long long)first_bad);
    assert_true(first_bad == UINT64_MAX);
    assert_int_equal(atomic_load(&c.bad_set), 0);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(atomic_load(&c.sd[i]->violations), 0);
    free(back);
    free(c.shadow);
    rk_dev_close(c.raid);
    for (uint32_t i = 0; i < n; i++)
        rk_dev_close(m[i]);
    alarm(0);
}

static void test_raid1(void **state)
{
    (void)state;
    run(RK_LEVEL_RAID1, 2, 3, 16384, 2, 4096, 60, false, 11);
}

static void test_raid5(void **state)
{
    (void)state;
    run(RK_LEVEL_RAID5, 4, 4, 16384, 1, 4096, 40, false, 21);
}

static void test_raid5_fail(void **state)
{
    (void)state;
    run(RK_LEVEL_RAID5, 4, 4, 16384, 1, 4096, 40, true, 31);
}

static void test_raid1_one_stream(void **state)
{
    (void)state;
    run(RK_LEVEL_RAID1, 2, 1, 65536, 3, 4096, 150, false, 41);
}

static void test_raid5_one_stream(void **state)
{
    (void)state;
    run(RK_LEVEL_RAID5, 4, 1, 65536, 2, 4096, 150, false, 51);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_raid1), cmocka_unit_test(test_raid5),
                                       cmocka_unit_test(test_raid5_fail),
                                       cmocka_unit_test(test_raid1_one_stream),
                                       cmocka_unit_test(test_raid5_one_stream)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
