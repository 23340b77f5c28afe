/* Helpers shared by the raid5/raid6 engine unit tests (test_raid5, test_raid5_cache): an array
 * over in-memory members with a shadow of its content, checks of the array and of every member's
 * placement and parity against the plain-C reference, member I/O counts of one write, and threads
 * hammering the same stripes. Header-only, as rk_test.h; include after cmocka.h. */
#ifndef RK_TEST_R5_H
#define RK_TEST_R5_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raid/parity.h"
#include "raid/raid_int.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define DOFF (8 * KiB) /* data offset: member I/O must add it */

struct arr {
    struct rk_raid_geom g;
    struct rk_dev *m[RK_MAX_MEMBERS];
    struct rk_dev *raid;
    uint64_t size;
    unsigned char *shadow;
};

static inline void arr_geom(struct arr *a, int level, uint32_t n, uint32_t chunk, uint64_t rows)
{
    memset(a, 0, sizeof(*a));
    rk_test_geom(&a->g, level, n, chunk, DOFF, rows * chunk);
}

/* Members plus a raid device over all of them, and a zero shadow (fresh mem devices read 0). */
static inline void arr_create(struct arr *a, int level, uint32_t n, uint32_t chunk, uint64_t rows)
{
    arr_geom(a, level, n, chunk, rows);
    rk_test_mem_members(a->m, n, DOFF + rows * chunk, 512);
    assert_int_equal(rk_raid_open(&a->g, a->m, NULL, &a->raid), 0);
    a->size = a->raid->size;
    assert_int_equal(a->size, rk_raid_array_size(&a->g));
    a->shadow = rk_test_zero_shadow(a->size);
}

/* Reopen the raid device over the members except those in the missing mask. */
static inline int arr_reopen(struct arr *a, uint32_t missing)
{
    struct rk_dev *m[RK_MAX_MEMBERS];
    if (a->raid)
        rk_dev_close(a->raid);
    a->raid = NULL;
    for (uint32_t i = 0; i < a->g.members; i++)
        m[i] = (missing & (1u << i)) ? NULL : a->m[i];
    return rk_raid_open(&a->g, m, NULL, &a->raid);
}

static inline void arr_free(struct arr *a)
{
    rk_dev_close(a->raid);
    rk_test_close_members(a->m, a->g.members);
    free(a->shadow);
}

static inline void arr_write(struct arr *a, uint64_t off, uint64_t len, unsigned *seed)
{
    unsigned char *b = malloc(len);
    rk_test_fill_rand_r(b, len, seed);
    assert_int_equal(rk_dev_write(a->raid, b, len, off, 0), 0);
    memcpy(a->shadow + off, b, len);
    free(b);
}

/* The whole array reads back as the shadow (in pieces of varied sizes). */
static inline void arr_check(struct arr *a)
{
    uint64_t step = 3 * a->g.chunk / 2 + 512;
    unsigned char *b = malloc(step);
    for (uint64_t off = 0; off < a->size; off += step) {
        uint64_t n = a->size - off < step ? a->size - off : step;
        assert_int_equal(rk_dev_read(a->raid, b, n, off), 0);
        if (memcmp(b, a->shadow + off, n)) {
            for (uint64_t i = 0; i < n; i++)
                if (b[i] != a->shadow[off + i]) {
                    print_error("mismatch at array offset %llu\n", (unsigned long long)(off + i));
                    break;
                }
            fail();
        }
    }
    free(b);
}

/*
 * Independent placement check: read every member's data area, rebuild the array image from the
 * layout's definition (parity slot n-1 - s mod n, Q next, data after them), compare with the
 * shadow, and check P/Q of every stripe with the byte-wise reference. Returns bad stripes.
 */
static inline int arr_check_members(struct arr *a, bool check_data)
{
    uint32_t n = a->g.members, np = a->g.level == RK_LEVEL_RAID6 ? 2 : 1, nd = n - np;
    uint64_t ch = a->g.chunk, rows = a->g.data_size[0] / ch;
    unsigned char *mem[RK_MAX_MEMBERS];
    unsigned char *p = malloc(ch), *q = malloc(ch);
    int bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        mem[i] = malloc(rows * ch);
        assert_int_equal(rk_dev_read(a->m[i], mem[i], rows * ch, DOFF), 0);
    }
    for (uint64_t s = 0; s < rows; s++) {
        uint32_t pd = n - 1 - (uint32_t)(s % n);
        void *data[RK_MAX_MEMBERS];
        for (uint32_t k = 0; k < nd; k++) {
            uint32_t slot = (pd + np + k) % n;
            data[k] = mem[slot] + s * ch;
            if (check_data)
                assert_memory_equal(data[k], a->shadow + (s * nd + k) * ch, ch);
        }
        rk_parity_ref_pq((int)nd, ch, data, p, np == 2 ? q : NULL);
        bool ok = !memcmp(p, mem[pd] + s * ch, ch);
        if (np == 2)
            ok = ok && !memcmp(q, mem[(pd + 1) % n] + s * ch, ch);
        bad += !ok;
    }
    for (uint32_t i = 0; i < n; i++)
        free(mem[i]);
    free(p);
    free(q);
    return bad;
}

/* Random writes of 512 B .. 2.5 stripes at 512-byte aligned offsets, checked as they go. */
static inline void arr_random_io(struct arr *a, int nops, unsigned *seed)
{
    uint64_t sbytes = a->g.chunk * (a->g.members - (a->g.level == RK_LEVEL_RAID6 ? 2 : 1));
    unsigned char *b = malloc(3 * sbytes);
    for (int i = 0; i < nops; i++) {
        uint64_t len = (1 + (uint64_t)rand_r(seed) % (5 * sbytes / 512)) * 512 / 2;
        len = (len + 511) / 512 * 512;
        uint64_t off = (uint64_t)rand_r(seed) % (a->size / 512) * 512;
        if (off + len > a->size)
            len = a->size - off;
        if (rand_r(seed) % 3) {
            arr_write(a, off, len, seed);
        } else {
            assert_int_equal(rk_dev_read(a->raid, b, len, off), 0);
            assert_memory_equal(b, a->shadow + off, len);
        }
    }
    free(b);
}

struct counts {
    uint64_t reads, writes;
};

static inline struct counts arr_counts(struct arr *a)
{
    struct counts c = {0, 0};
    for (uint32_t i = 0; i < a->g.members; i++) {
        c.reads += atomic_load(&a->m[i]->stats.reads);
        c.writes += atomic_load(&a->m[i]->stats.writes);
    }
    return c;
}

/* Member reads and writes of one array write, with what stripe gathering held of it
 * (raid5_gather.c: a write continuing a stream waits in memory) written out by a flush. */
static inline struct counts write_cost(struct arr *a, uint64_t off, uint64_t len, unsigned *seed)
{
    struct counts c0 = arr_counts(a);
    arr_write(a, off, len, seed);
    assert_int_equal(rk_dev_flush(a->raid), 0);
    struct counts c1 = arr_counts(a);
    return (struct counts){c1.reads - c0.reads, c1.writes - c0.writes};
}

struct hammer {
    struct arr *a;
    int id, nthreads;
    unsigned seed;
};

/* Each thread owns the 4K blocks b with b % nthreads == id, over a few stripes, so all threads
 * keep hitting the same stripes with writes of their own blocks (1..3 of them at a time, which
 * also spans stripes). */
static inline void *hammer_run(void *arg)
{
    struct hammer *h = arg;
    struct arr *a = h->a;
    uint64_t blocks = a->size / 4096;
    unsigned char buf[4096];
    for (int i = 0; i < 400; i++) {
        uint64_t b =
            (uint64_t)rand_r(&h->seed) % (blocks / (uint64_t)h->nthreads) * (uint64_t)h->nthreads +
            (uint64_t)h->id;
        rk_test_fill_rand_r(buf, sizeof(buf), &h->seed);
        if (rk_dev_write(a->raid, buf, sizeof(buf), b * 4096, 0))
            return (void *)1;
        memcpy(a->shadow + b * 4096, buf, sizeof(buf)); /* own blocks only: no race */
        if (rk_dev_read(a->raid, buf, sizeof(buf), b * 4096) ||
            memcmp(buf, a->shadow + b * 4096, sizeof(buf)))
            return (void *)2;
    }
    return NULL;
}

/* Run nthreads copies of body (each with its own hammer state and seed) on a fresh raid5 and a
 * fresh raid6 of 5 members, chunk 8 KiB, stripes stripes; then check data and every stripe's
 * parity. */
static inline void run_threads(void *(*body)(void *), int nthreads, unsigned seed0,
                               uint64_t stripes)
{
    static const int levels[] = {RK_LEVEL_RAID5, RK_LEVEL_RAID6};
    for (int li = 0; li < 2; li++) {
        struct arr a;
        pthread_t t[8];
        struct hammer h[8];
        assert_true(nthreads <= 8);
        arr_create(&a, levels[li], 5, 8192, stripes);
        for (int i = 0; i < nthreads; i++) {
            h[i] = (struct hammer){
                .a = &a, .id = i, .nthreads = nthreads, .seed = seed0 + (unsigned)i};
            assert_int_equal(pthread_create(&t[i], NULL, body, &h[i]), 0);
        }
        for (int i = 0; i < nthreads; i++) {
            void *res;
            pthread_join(t[i], &res);
            assert_null(res);
        }
        arr_check(&a);
        assert_int_equal(arr_check_members(&a, true), 0);
        arr_free(&a);
    }
}

#endif
