/* Unit tests of the cache data path (src/cache/cache*.c) over in-memory backing and cache
 * devices: random I/O against a reference through every mode with switches, detach and attach
 * in the middle; write-back correctness after a drain; the clean-cache and dirty-cache failure
 * cases (C09 at unit level). The metadata is the real one (src/cache/meta*.c) on a memory device.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/cache.h"
#include "core/util.h"
#include "raidkit/member.h"

#define BACK_SIZE (2 * 1024 * 1024)
#define CBS       8192

struct env {
    struct rk_dev *back, *cdev, *dev;
    struct rk_cache *c;
    uint8_t *ref;
};

static const uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static uint64_t env_back = BACK_SIZE; /* backing size of the next env_open */

/* A cache of about cblocks blocks of CBS bytes over a memory backing of BACK_SIZE. */
static void env_open(struct env *e, int mode, uint64_t cblocks)
{
    assert_int_equal(rk_mem_open(env_back, 4096, &e->back), 0);
    struct rk_dev *mem;
    uint64_t csize = 1024 * 1024 + cblocks * CBS;
    assert_int_equal(rk_mem_open(csize, 4096, &mem), 0);
    struct rk_cache_format_params p = {.array_size = env_back,
                                       .block_size = CBS,
                                       .mode = (enum rk_cache_mode)mode,
                                       .journal_size = 64 * 1024};
    memcpy(p.array_uuid, uuid, 16);
    char err[256] = "";
    assert_int_equal(rk_cache_meta_format(mem, "mem-cache", &p, err, sizeof(err)), 0);
    assert_int_equal(rk_fault_open(mem, true, &e->cdev), 0);
    struct rk_cache_opts o = {.stripe = 2 * CBS};
    memcpy(o.array_uuid, uuid, 16);
    assert_int_equal(
        rk_cache_open(e->back, e->cdev, "mem-cache", &o, &e->c, &e->dev, err, sizeof(err)), 0);
    rk_cache_set_fault_dev(e->c, e->cdev);
    e->ref = calloc(1, env_back);
}

static void env_close(struct env *e)
{
    rk_dev_close(e->dev);
    rk_dev_close(e->back);
    free(e->ref);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* n random operations (writes, reads checked against e->ref, flushes, FUA). */
static void random_io(struct env *e, int n, unsigned seed)
{
    uint8_t *buf = rk_buf_alloc(4 * 4096);
    srand(seed);
    for (int i = 0; i < n; i++) {
        int op = rand() % 10;
        uint64_t len = (uint64_t)(1 + rand() % 4) * 4096;
        uint64_t off = (uint64_t)(rand() % (BACK_SIZE / 4096 - 4)) * 4096;
        if (op < 5) {
            fill(buf, len, (unsigned)rand());
            uint32_t fl = op == 0 ? RK_WRITE_FUA : 0;
            assert_int_equal(rk_dev_write(e->dev, buf, len, off, fl), 0);
            memcpy(e->ref + off, buf, len);
        } else if (op < 9) {
            assert_int_equal(rk_dev_read(e->dev, buf, len, off), 0);
            assert_memory_equal(buf, e->ref + off, len);
        } else {
            assert_int_equal(rk_dev_flush(e->dev), 0);
        }
    }
    free(buf);
}

static void check_all(struct env *e, struct rk_dev *d)
{
    uint8_t *buf = rk_buf_alloc(BACK_SIZE);
    assert_int_equal(rk_dev_read(d, buf, BACK_SIZE, 0), 0);
    assert_memory_equal(buf, e->ref, BACK_SIZE);
    free(buf);
}

static void test_modes_switch_detach_attach(void **state)
{
    struct env e;
    env_open(&e, RK_CACHE_WRITEBACK, 32);
    char err[256];
    random_io(&e, 3000, 1);
    static const int modes[] = {RK_CACHE_WRITETHROUGH, RK_CACHE_WRITEAROUND, RK_CACHE_NONE,
                                RK_CACHE_WRITEBACK};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(rk_cache_set_mode(e.c, modes[k], err, sizeof(err)), 0);
        struct rk_cache_status st;
        rk_cache_status(e.c, &st);
        if (modes[k] != RK_CACHE_WRITEBACK)
            assert_int_equal(st.dirty, 0);
        random_io(&e, 2000, 10 + k);
    }
    assert_int_equal(rk_cache_detach(e.c, err, sizeof(err)), 0);
    check_all(&e, e.back); /* everything written back */
    random_io(&e, 500, 20);
    assert_int_equal(rk_cache_attach(e.c, "mem-cache", 0, err, sizeof(err)), -ENOENT);
    check_all(&e, e.dev);
    env_close(&e);
}

static void test_writeback_drain(void **state)
{
    struct env e;
    env_open(&e, RK_CACHE_WRITEBACK, 64);
    random_io(&e, 4000, 2);
    struct rk_cache_status st;
    rk_cache_status(e.c, &st);
    assert_true(st.write_hits > 0 && st.dirty > 0 && st.read_hits > 0);
    char err[256];
    assert_int_equal(rk_cache_set_mode(e.c, RK_CACHE_WRITETHROUGH, err, sizeof(err)), 0);
    check_all(&e, e.back);
    check_all(&e, e.dev);
    env_close(&e);
}

/* C09 at unit level: a clean cache fails -> no client error; a dirty one -> dirty blocks read
 * EIO (never the older backing data), others fine; recovery once the device works again. */
static void test_cache_device_fails(void **state)
{
    struct env e;
    char err[256];
    env_open(&e, RK_CACHE_WRITETHROUGH, 64);
    random_io(&e, 1000, 3);
    rk_fault_fail_all(e.cdev, true);
    random_io(&e, 1000, 4); /* no errors: passthrough */
    struct rk_cache_status st;
    rk_cache_status(e.c, &st);
    assert_int_equal(st.state, RK_CACHE_STATE_FAILED);
    check_all(&e, e.dev);
    env_close(&e);

    env_open(&e, RK_CACHE_WRITEBACK, 64);
    uint8_t *buf = rk_buf_alloc(CBS);
    fill(buf, CBS, 99);
    assert_int_equal(rk_dev_write(e.dev, buf, CBS, 10 * CBS, 0), 0);
    assert_int_equal(rk_dev_flush(e.dev), 0);
    rk_fault_fail_all(e.cdev, true);
    assert_int_equal(rk_dev_read(e.dev, buf, 4096, 10 * CBS + 4096), -EIO);
    assert_int_equal(rk_dev_read(e.dev, buf, 4096, 40 * CBS), 0); /* not cached: backing */
    assert_int_equal(rk_dev_write(e.dev, buf, 4096, 10 * CBS, 0), -EIO);
    assert_int_equal(rk_dev_write(e.dev, buf, 4096, 50 * CBS, 0), 0);
    rk_fault_fail_all(e.cdev, false);
    assert_int_equal(rk_cache_attach(e.c, "mem-cache", 0, err, sizeof(err)), 0);
    assert_int_equal(rk_dev_read(e.dev, buf, CBS, 10 * CBS), 0);
    uint8_t *want = malloc(CBS);
    fill(want, CBS, 99);
    assert_memory_equal(buf, want, CBS);
    free(want);
    free(buf);
    env_close(&e);
}

/* A read miss racing a bypassing write (writearound): readers keep filling the blocks a writer
 * keeps rewriting on the backing; afterwards every block reads the last write, never an older
 * copy a fill installed. */
struct race {
    struct env *e;
    int stop;
};

static void *race_reader(void *arg)
{
    struct race *r = arg;
    uint8_t *buf = rk_buf_alloc(CBS);
    unsigned seed = 5;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        uint64_t b = (uint64_t)(rand_r(&seed) % 16);
        assert_int_equal(rk_dev_read(r->e->dev, buf, CBS, b * CBS), 0);
    }
    free(buf);
    return NULL;
}

static void test_fill_races_bypass(void **state)
{
    struct env e;
    char err[256];
    env_open(&e, RK_CACHE_WRITEBACK, 64);
    assert_int_equal(rk_cache_set_mode(e.c, RK_CACHE_WRITEAROUND, err, sizeof(err)), 0);
    /* Slow cache writes widen the window between a fill's backing read and its mapping. */
    assert_int_equal(rk_fault_set_latency(e.cdev, 300), 0);
    struct race r = {.e = &e};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, race_reader, &r), 0);
    uint8_t *buf = rk_buf_alloc(CBS);
    for (int i = 0; i < 3000; i++) {
        uint64_t b = (uint64_t)(i * 7 % 16);
        fill(buf, CBS, (unsigned)i);
        assert_int_equal(rk_dev_write(e.dev, buf, CBS, b * CBS, 0), 0);
        memcpy(e.ref + b * CBS, buf, CBS);
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    rk_fault_set_latency(e.cdev, 0);
    struct rk_cache_status st;
    rk_cache_status(e.c, &st);
    assert_true(st.bypass[RK_CACHE_ADMIT] > 0 && st.bypass[RK_CACHE_BYPASS_MODE] > 0);
    for (int k = 0; k < 2; k++) /* the second pass reads cached copies */
        check_all(&e, e.dev);
    free(buf);
    env_close(&e);
}

/* Hits advance the sequential stream (policy.h: called for every request): 3 MiB of cached
 * blocks read in order, then the misses that follow are past the 4 MiB cutoff and bypass; the
 * hits of the stream are still served from the cache. */
static void test_sequential_hits_advance_stream(void **state)
{
    struct env e;
    env_back = 8 * 1024 * 1024;
    env_open(&e, RK_CACHE_WRITETHROUGH, 512);
    env_back = BACK_SIZE;
    const uint64_t hot = 3 * 1024 * 1024, rq = 64 * 1024;
    uint8_t *buf = rk_buf_alloc(rq);
    /* Backwards, one block at a time: cached, and no stream ends where the reads go on. */
    for (uint64_t o = hot; o > 0; o -= CBS) {
        fill(buf, CBS, (unsigned)o);
        assert_int_equal(rk_dev_write(e.dev, buf, CBS, o - CBS, 0), 0);
    }
    struct rk_cache_status st;
    rk_cache_status(e.c, &st);
    assert_int_equal(st.mapped, hot / CBS);
    uint64_t hits0 = st.read_hits;
    for (uint64_t o = 0; o < 5 * 1024 * 1024; o += rq)
        assert_int_equal(rk_dev_read(e.dev, buf, rq, o), 0);
    rk_cache_status(e.c, &st);
    assert_int_equal(st.read_hits - hits0, hot / CBS);        /* hits served from the cache */
    assert_true(st.bypass[RK_CACHE_BYPASS_SEQUENTIAL] >= 16); /* the misses past 4 MiB */
    free(buf);
    env_close(&e);
}

/* A cold partial-block write in writeback is not cached (no read of the rest of the block from
 * the backing): it reaches the backing at once, counted as unaligned; a whole block is cached. */
static void test_cold_partial_write_bypasses(void **state)
{
    struct env e;
    env_open(&e, RK_CACHE_WRITEBACK, 64);
    uint8_t *buf = rk_buf_alloc(CBS), *got = rk_buf_alloc(CBS);
    fill(buf, 4096, 7);
    assert_int_equal(rk_dev_write(e.dev, buf, 4096, 20 * CBS + 4096, 0), 0);
    struct rk_cache_status st;
    rk_cache_status(e.c, &st);
    assert_int_equal(st.mapped, 0);
    assert_int_equal(st.bypass[RK_CACHE_BYPASS_UNALIGNED], 1);
    assert_int_equal(rk_dev_read(e.back, got, 4096, 20 * CBS + 4096), 0);
    assert_memory_equal(got, buf, 4096);
    fill(buf, CBS, 8);
    assert_int_equal(rk_dev_write(e.dev, buf, CBS, 30 * CBS, 0), 0);
    rk_cache_status(e.c, &st);
    assert_int_equal(st.mapped, 1);
    assert_int_equal(st.dirty, 1);
    /* A partial write to the now cached block stays in the cache (dirty hit). */
    assert_int_equal(rk_dev_write(e.dev, buf, 4096, 30 * CBS, 0), 0);
    rk_cache_status(e.c, &st);
    assert_int_equal(st.bypass[RK_CACHE_BYPASS_UNALIGNED], 1);
    free(buf);
    free(got);
    env_close(&e);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_switch_detach_attach),
        cmocka_unit_test(test_writeback_drain),
        cmocka_unit_test(test_cache_device_fails),
        cmocka_unit_test(test_fill_races_bypass),
        cmocka_unit_test(test_sequential_hits_advance_stream),
        cmocka_unit_test(test_cold_partial_write_bypasses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
