/*
 * raid5/raid6 foreground writes during a rebuild, through the public API: the rebuild computes
 * a row from the other slots and writes it to the new member afterwards, under the member range
 * lock; a foreground write of that row in between would be overwritten with the old content
 * unless it waits for that lock too.
 *
 * The race window is forced rather than hoped for: the new member is a slow disk for the
 * rebuild's chunk-sized writes (each waits SLOW_US before it lands) while the foreground's 4 KiB
 * writes land at once, the rebuild goes one chunk per step at a low rate, and writer threads
 * aim every write at the row the rebuild is on (the chunk of that row on the rebuilt slot).
 * Without the lock in the write path, such a write lands inside the window of nearly every step,
 * so the rebuilt member ends up stale; the test asserts the window was hit at least once.
 * Afterwards: a scrub finds no mismatch, the array reads back as the shadow, and it still does
 * with nparity other slots failed (every stripe then depends on the rebuilt member).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "raidkit/raid.h"
#include "rk_test.h"

#define DOFF     (8 * KiB) /* data offset */
#define CHUNK    (64 * KiB)
#define ROWS     16
#define PIECE    (4 * KiB)            /* foreground write size */
#define SLOW_US  3000                 /* delay of each rebuild write on the new member */
#define RATE     (2ull * 1024 * 1024) /* rebuild bytes/s: < 4 MiB/s gives one chunk per step */
#define NWRITERS 2
#define ROUNDS   3 /* per level, each rebuilding another slot */

/* ---- the new member: a mem device whose chunk-sized (rebuild) writes are slow ---- */

struct slow {
    struct rk_dev *inner;
    _Atomic int in_delay; /* a rebuild write is waiting to land */
    _Atomic uint64_t delayed;
};

static int slow_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    return rk_dev_read(((struct slow *)dev->priv)->inner, buf, len, off);
}

static int slow_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                      uint32_t flags)
{
    struct slow *s = dev->priv;
    if (len >= CHUNK) {
        s->in_delay++;
        usleep(SLOW_US);
        s->delayed++;
        int rc = rk_dev_write(s->inner, buf, len, off, flags);
        s->in_delay--;
        return rc;
    }
    return rk_dev_write(s->inner, buf, len, off, flags);
}

static int slow_flush(struct rk_dev *dev)
{
    return rk_dev_flush(((struct slow *)dev->priv)->inner);
}

static void slow_close(struct rk_dev *dev)
{
    struct slow *s = dev->priv;
    rk_dev_close(s->inner);
    free(s);
}

static const struct rk_dev_ops slow_ops = {.kind = "slow",
                                           .read = slow_read,
                                           .write = slow_write,
                                           .flush = slow_flush,
                                           .close = slow_close};

static struct rk_dev *slow_open(uint64_t size)
{
    struct slow *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    assert_int_equal(rk_mem_open(size, 512, &s->inner), 0);
    struct rk_dev *d = rk_test_wrap(&slow_ops, s, s->inner, "slow");
    d->opt_io_size = 512;
    return d;
}

/* ---- the array and its shadow ---- */

struct arr {
    struct rk_raid_geom g;
    uint32_t nd;
    struct rk_dev *m[RK_MAX_MEMBERS];
    struct rk_dev *raid;
    uint64_t size;
    unsigned char *shadow;
};

static void arr_create(struct arr *a, int level, uint32_t n, unsigned *seed)
{
    memset(a, 0, sizeof(*a));
    rk_test_geom(&a->g, level, n, CHUNK, DOFF, ROWS * CHUNK);
    a->nd = n - (level == RK_LEVEL_RAID6 ? 2 : 1);
    rk_test_mem_members(a->m, n, DOFF + ROWS * CHUNK, 512);
    assert_int_equal(rk_raid_open(&a->g, a->m, NULL, &a->raid), 0);
    a->size = a->raid->size;
    a->shadow = malloc(a->size);
    assert_non_null(a->shadow);
    rk_test_fill_rand_r(a->shadow, a->size, seed);
    assert_int_equal(rk_dev_write(a->raid, a->shadow, a->size, 0, 0), 0);
}

/* The whole array reads back as the shadow. */
static void arr_check(struct arr *a)
{
    unsigned char *b = malloc(a->size);
    assert_non_null(b);
    assert_int_equal(rk_dev_read(a->raid, b, a->size, 0), 0);
    for (uint64_t i = 0; i < a->size; i++)
        if (b[i] != a->shadow[i]) {
            print_error("mismatch at array offset %llu (row %llu)\n", (unsigned long long)i,
                        (unsigned long long)(i / (CHUNK * a->nd)));
            fail();
        }
    free(b);
}

/* ---- foreground writers aimed at the rebuild position ---- */

struct writer {
    struct arr *a;
    uint32_t target; /* slot being rebuilt */
    struct slow *slow;
    int id;
    unsigned seed;
    _Atomic int *stop;
    uint64_t writes, in_window; /* in_window: writes issued while a rebuild write waited */
    int err;
};

/* Array offset of the data chunk of row that lies on slot, or of a random data chunk of row
 * when slot holds its parity. */
static uint64_t row_chunk_on(struct arr *a, uint64_t row, uint32_t slot, unsigned *seed)
{
    for (uint32_t k = 0; k < a->nd; k++) {
        uint64_t off = (row * a->nd + k) * CHUNK, run;
        struct rk_raid_extent e;
        if (rk_raid_map(&a->g, off, &e, 1, &run) == 1 && e.slot == slot)
            return off;
    }
    return (row * a->nd + (uint64_t)rand_r(seed) % a->nd) * CHUNK;
}

/* Write 4 KiB pieces into the rebuilt slot's chunk of the row the rebuild is on; each writer
 * owns every NWRITERS-th piece of a chunk, so the shadow has one writer per byte. */
static void *writer_run(void *arg)
{
    struct writer *w = arg;
    struct arr *a = w->a;
    unsigned char buf[PIECE];
    uint64_t mine = CHUNK / PIECE / NWRITERS;
    while (!*w->stop) {
        struct rk_raid_progress p;
        if (rk_raid_progress(a->raid, &p)) {
            w->err = -EINVAL;
            break;
        }
        /* Only writes during the rebuild matter here. */
        if (p.state == RK_JOB_DONE || p.state == RK_JOB_FAILED)
            break;
        uint64_t row = p.pos / CHUNK < ROWS ? p.pos / CHUNK : ROWS - 1;
        uint64_t piece = (uint64_t)w->id + NWRITERS * ((uint64_t)rand_r(&w->seed) % mine);
        uint64_t off = row_chunk_on(a, row, w->target, &w->seed) + piece * PIECE;
        rk_test_fill_rand_r(buf, PIECE, &w->seed);
        w->in_window += w->slow->in_delay > 0;
        int rc = rk_dev_write(a->raid, buf, PIECE, off, 0);
        if (rc) {
            w->err = rc;
            break;
        }
        memcpy(a->shadow + off, buf, PIECE);
        w->writes++;
    }
    return NULL;
}

/* One round: fail target, write a little degraded, add a slow new member, rebuild it under
 * foreground writes, check. Returns the writes issued inside a rebuild write's window. */
static uint64_t round_run(int level, uint32_t n, uint32_t target, unsigned seed)
{
    struct arr a;
    arr_create(&a, level, n, &seed);
    assert_int_equal(rk_raid_fail_slot(a.raid, target), 0);
    for (int i = 0; i < 8; i++) { /* the old member misses these */
        uint64_t off = (uint64_t)rand_r(&seed) % (a.size / PIECE) * PIECE;
        rk_test_fill_rand_r(a.shadow + off, PIECE, &seed);
        assert_int_equal(rk_dev_write(a.raid, a.shadow + off, PIECE, off, 0), 0);
    }
    struct rk_dev *fresh = slow_open(DOFF + ROWS * CHUNK);
    assert_int_equal(rk_raid_add_member(a.raid, target, fresh), 0);

    _Atomic int stop = 0;
    pthread_t t[NWRITERS];
    struct writer w[NWRITERS];
    for (int i = 0; i < NWRITERS; i++) {
        w[i] = (struct writer){.a = &a,
                               .target = target,
                               .slow = fresh->priv,
                               .id = i,
                               .seed = seed * 31 + (unsigned)i,
                               .stop = &stop};
        assert_int_equal(pthread_create(&t[i], NULL, writer_run, &w[i]), 0);
    }
    assert_int_equal(rk_raid_rebuild_start(a.raid, target, 0, RATE), 0);
    int job = rk_raid_job_wait(a.raid);
    stop = 1;
    uint64_t in_window = 0, writes = 0;
    for (int i = 0; i < NWRITERS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].err, 0);
        writes += w[i].writes;
        in_window += w[i].in_window;
    }
    /* Some writer wrote during the rebuild. Not each: on a loaded host a writer thread may first
     * run after the 0.5 s rebuild ended (seen once at load 4.7). */
    assert_true(writes > 0);
    assert_int_equal(job, 0);
    assert_int_equal(rk_raid_slot_state(a.raid, target), RK_SLOT_ACTIVE);
    assert_int_equal(((struct slow *)fresh->priv)->delayed, ROWS);

    assert_int_equal(rk_raid_scrub_start(a.raid, false, 0), 0);
    assert_int_equal(rk_raid_job_wait(a.raid), 0);
    struct rk_raid_progress p;
    assert_int_equal(rk_raid_progress(a.raid, &p), 0);
    assert_true(p.scrubbed);
    if (p.last_mismatches)
        print_error("level %d, slot %u rebuilt: %llu stripes mismatch\n", level, target,
                    (unsigned long long)p.last_mismatches);
    assert_int_equal(p.last_mismatches, 0);
    arr_check(&a);
    /* Fail nparity other slots: every stripe now needs the rebuilt member. */
    for (uint32_t i = 1; i <= n - a.nd; i++)
        assert_int_equal(rk_raid_fail_slot(a.raid, (target + i) % n), 0);
    arr_check(&a);

    rk_dev_close(a.raid);
    rk_dev_close(fresh);
    for (uint32_t i = 0; i < n; i++)
        rk_dev_close(a.m[i]);
    free(a.shadow);
    return in_window;
}

static void run_level(int level, uint32_t n, unsigned seed)
{
    uint64_t in_window = 0;
    for (uint32_t i = 0; i < ROUNDS; i++)
        in_window += round_run(level, n, (i * 2 + 1) % n, seed + i);
    /* The forced window was really exercised (else the test proves nothing). */
    assert_true(in_window > 0);
}

static void test_raid5_rebuild_writes(void **state)
{
    run_level(RK_LEVEL_RAID5, 4, 7001u);
}

static void test_raid6_rebuild_writes(void **state)
{
    run_level(RK_LEVEL_RAID6, 5, 8001u);
}

int main(void)
{
    /* Stripe gathering off: it merges the writers' 4 KiB pieces of one chunk into a whole-chunk
     * write, which the slow member cannot tell from a rebuild write, so the exact count of
     * rebuild writes (ROWS) failed about once in a loaded `make check` (17 != 16). */
    setenv("RAIDKIT_RAID5_GATHER_US", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raid5_rebuild_writes),
        cmocka_unit_test(test_raid6_rebuild_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
