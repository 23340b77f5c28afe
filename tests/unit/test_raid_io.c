/* I/O tests of the RAID engine over in-memory members: random reads and writes of every level
 * against a shadow buffer, write-zeroes/discard, and member placement checked with rk_raid_map. */
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

#include "core/util.h"
#include "raidkit/raid.h"
#include "rk_test.h"

struct fixture {
    struct rk_raid_geom g;
    struct rk_dev *members[RK_MAX_MEMBERS];
    struct rk_dev *raid;
    uint8_t *shadow;
    uint64_t size;
};

static void fx_open(struct fixture *fx, int level, uint32_t n, uint32_t chunk,
                    const uint64_t *data_sizes, uint32_t bs)
{
    memset(fx, 0, sizeof(*fx));
    rk_test_geom(&fx->g, level, n, chunk, 64 * KiB, 0);
    for (uint32_t i = 0; i < n; i++) {
        fx->g.data_size[i] = data_sizes[i];
        /* A little slack after the data area, as a real member would have. */
        assert_int_equal(rk_mem_open(fx->g.data_offset + data_sizes[i] + 8192, bs, &fx->members[i]),
                         0);
    }
    assert_int_equal(rk_raid_open(&fx->g, fx->members, NULL, &fx->raid), 0);
    fx->size = rk_raid_array_size(&fx->g);
    assert_int_equal(fx->raid->size, fx->size);
    assert_int_equal(fx->raid->block_size, bs);
    assert_int_equal(fx->raid->opt_io_size, chunk);
    fx->shadow = rk_test_zero_shadow(fx->size);
}

static void fx_close(struct fixture *fx)
{
    rk_dev_close(fx->raid);
    rk_test_close_members(fx->members, fx->g.members);
    free(fx->shadow);
}

static uint64_t rnd64(unsigned *seed)
{
    return (uint64_t)rand_r(seed) << 31 ^ (uint64_t)rand_r(seed);
}

/* Fast pseudo-random fill (xorshift64, seeded from the test's rand_r stream). */
static void fill(uint8_t *p, uint64_t len, unsigned *seed)
{
    rk_test_fill64(p, len, rnd64(seed) | 1);
}

/* Every copy of every array byte on the members equals the shadow. */
static void check_placement(struct fixture *fx, uint8_t *tmp)
{
    uint64_t off = 0;
    while (off < fx->size) {
        struct rk_raid_extent ext[RK_MAX_MEMBERS];
        uint64_t run;
        int n = rk_raid_map(&fx->g, off, ext, RK_MAX_MEMBERS, &run);
        assert_true(n >= 1);
        for (int k = 0; k < n; k++) {
            struct rk_dev *m = fx->members[ext[k].slot];
            assert_int_equal(rk_dev_read(m, tmp, run, fx->g.data_offset + ext[k].member_off), 0);
            if (memcmp(tmp, fx->shadow + off, run)) {
                print_error("copy %d of array offset %llu (slot %u) differs\n", k,
                            (unsigned long long)off, ext[k].slot);
                fail();
            }
        }
        off += run;
    }
}

/* Random writes, write-zeroes, discards and reads of random aligned lengths, then a full read
 * and a per-member placement check. */
static void run_random(struct fixture *fx, unsigned seed, int ops)
{
    const uint64_t maxlen = 3 * MiB;
    uint32_t bs = fx->raid->block_size;
    uint8_t *buf = malloc(maxlen), *tmp = malloc(fx->size > maxlen ? fx->size : maxlen);
    assert_non_null(buf);
    assert_non_null(tmp);
    for (int i = 0; i < ops; i++) {
        uint64_t blocks = fx->size / bs;
        uint64_t len = (1 + rnd64(&seed) % (maxlen / bs)) * bs;
        /* Favour short requests, so many land inside one chunk too. */
        if (rand_r(&seed) % 2)
            len = (1 + rnd64(&seed) % 64) * bs;
        if (len > fx->size)
            len = fx->size;
        uint64_t off = (rnd64(&seed) % (blocks - len / bs + 1)) * bs;
        int op = rand_r(&seed) % 10;
        if (op < 5) {
            fill(buf, len, &seed);
            assert_int_equal(rk_dev_write(fx->raid, buf, len, off, op == 0 ? RK_WRITE_FUA : 0), 0);
            memcpy(fx->shadow + off, buf, len);
        } else if (op == 5) {
            assert_int_equal(rk_dev_write_zeroes(fx->raid, len, off, 0), 0);
            memset(fx->shadow + off, 0, len);
        } else if (op == 6) {
            /* Members are mem devices, whose discard reads back zeros. */
            assert_int_equal(rk_dev_discard(fx->raid, len, off), 0);
            memset(fx->shadow + off, 0, len);
        } else {
            memset(buf, 0xa5, len);
            assert_int_equal(rk_dev_read(fx->raid, buf, len, off), 0);
            assert_memory_equal(buf, fx->shadow + off, len);
        }
        if (i % 16 == 0)
            assert_int_equal(rk_dev_flush(fx->raid), 0);
    }
    assert_int_equal(rk_dev_read(fx->raid, tmp, fx->size, 0), 0);
    assert_memory_equal(tmp, fx->shadow, fx->size);
    check_placement(fx, tmp);
    /* Out-of-range requests are refused by the wrappers before reaching the engine. */
    assert_int_equal(rk_dev_read(fx->raid, buf, bs, fx->size), -EINVAL);
    assert_int_equal(rk_dev_write(fx->raid, buf, bs, fx->size, 0), -ENOSPC);
    free(buf);
    free(tmp);
}

static void test_linear(void **state)
{
    struct fixture fx;
    const uint64_t sz[] = {1 * MiB, 3 * MiB, 512 * KiB};
    fx_open(&fx, RK_LEVEL_LINEAR, 3, 64 * KiB, sz, 512);
    assert_int_equal(fx.size, 4608 * KiB);
    run_random(&fx, 1, 300);
    fx_close(&fx);
}

static void test_raid0(void **state)
{
    struct fixture fx;
    const uint64_t one[] = {2 * MiB};
    fx_open(&fx, RK_LEVEL_RAID0, 1, 64 * KiB, one, 512);
    run_random(&fx, 2, 100);
    fx_close(&fx);

    const uint64_t unequal[] = {1 * MiB, 1 * MiB, 2 * MiB, 2 * MiB};
    fx_open(&fx, RK_LEVEL_RAID0, 4, 64 * KiB, unequal, 512);
    assert_int_equal(fx.size, 6 * MiB);
    run_random(&fx, 3, 300);
    fx_close(&fx);

    const uint64_t many[] = {1 * MiB, 768 * KiB, 2 * MiB, 1 * MiB, 1280 * KiB};
    fx_open(&fx, RK_LEVEL_RAID0, 5, 4 * KiB, many, 4096);
    run_random(&fx, 4, 300);
    fx_close(&fx);
}

static void test_raid1(void **state)
{
    struct fixture fx;
    const uint64_t two[] = {4 * MiB, 4 * MiB};
    fx_open(&fx, RK_LEVEL_RAID1, 2, 64 * KiB, two, 512);
    run_random(&fx, 5, 300);
    fx_close(&fx);

    const uint64_t three[] = {2 * MiB, 3 * MiB, 2 * MiB + 64 * KiB};
    fx_open(&fx, RK_LEVEL_RAID1, 3, 4 * KiB, three, 512);
    assert_int_equal(fx.size, 2 * MiB);
    run_random(&fx, 6, 300);
    fx_close(&fx);
}

/* Large raid1 reads are spread over the mirrors chunk by chunk. */
static void test_raid1_read_balance(void **state)
{
    struct fixture fx;
    const uint64_t two[] = {4 * MiB, 4 * MiB};
    fx_open(&fx, RK_LEVEL_RAID1, 2, 64 * KiB, two, 512);
    uint8_t *buf = malloc(1 * MiB);
    assert_non_null(buf);
    assert_int_equal(rk_dev_read(fx.raid, buf, 1 * MiB, 0), 0);
    uint64_t a = fx.members[0]->stats.read_bytes, b = fx.members[1]->stats.read_bytes;
    assert_int_equal(a + b, 1 * MiB);
    assert_int_equal(a, 512 * KiB);
    /* Each mirror gets one contiguous half, not every other chunk. */
    assert_int_equal(fx.members[0]->stats.reads, 1);
    assert_int_equal(fx.members[1]->stats.reads, 1);
    free(buf);
    fx_close(&fx);
}

static void test_raid10(void **state)
{
    struct fixture fx;
    for (uint32_t n = 2; n <= 5; n++) {
        uint64_t sz[5] = {2 * MiB, 2 * MiB + 128 * KiB, 2 * MiB, 3 * MiB, 2 * MiB};
        fx_open(&fx, RK_LEVEL_RAID10, n, n == 3 ? 4 * KiB : 64 * KiB, sz, 512);
        assert_int_equal(fx.size, 2 * MiB * n / 2);
        run_random(&fx, 10 + n, 200);
        fx_close(&fx);
    }
}

/* C08: a 4096-byte member makes the array's block size 4096; 512-byte I/O is refused. */
static void test_mixed_block_sizes(void **state)
{
    struct rk_raid_geom g = {.level = RK_LEVEL_RAID1,
                             .members = 2,
                             .chunk = 64 * KiB,
                             .data_offset = 64 * KiB,
                             .data_size = {1 * MiB, 1 * MiB}};
    struct rk_dev *m[2], *raid;
    assert_int_equal(rk_mem_open(2 * MiB, 512, &m[0]), 0);
    assert_int_equal(rk_mem_open(2 * MiB, 4096, &m[1]), 0);
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
    assert_int_equal(raid->block_size, 4096);
    uint8_t buf[8192];
    memset(buf, 7, sizeof(buf));
    assert_int_equal(rk_dev_write(raid, buf, 512, 0, 0), -EINVAL);
    assert_int_equal(rk_dev_write(raid, buf, 4096, 4096, 0), 0);
    memset(buf, 0, sizeof(buf));
    assert_int_equal(rk_dev_read(raid, buf, 4096, 4096), 0);
    assert_int_equal(buf[100], 7);
    rk_dev_close(raid);
    rk_dev_close(m[0]);
    rk_dev_close(m[1]);
}

static void test_open_errors(void **state)
{
    struct rk_raid_geom g = {.level = RK_LEVEL_RAID0,
                             .members = 2,
                             .chunk = 64 * KiB,
                             .data_offset = 64 * KiB,
                             .data_size = {1 * MiB, 1 * MiB}};
    struct rk_dev *m[2], *raid = NULL;
    assert_int_equal(rk_mem_open(1 * MiB + 64 * KiB, 512, &m[0]), 0);
    assert_int_equal(rk_mem_open(1 * MiB, 512, &m[1]), 0); /* too small for its data area */
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), -EINVAL);
    g.data_size[1] = 512 * KiB;
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
    assert_int_equal(raid->size, 1536 * KiB);
    assert_int_equal(rk_raid_geometry(raid)->data_size[1], 512 * KiB);
    assert_int_equal(rk_raid_slot_state(raid, 1), RK_SLOT_ACTIVE);
    assert_int_equal(rk_raid_slot_state(raid, 2), -EINVAL);
    assert_int_equal(rk_raid_fail_slot(raid, 0), -EBUSY);
    assert_int_equal(rk_raid_fail_slot(raid, 5), -EINVAL);
    assert_null(rk_raid_geometry(m[0]));
    assert_int_equal(rk_raid_slot_state(m[0], 0), -EINVAL);
    rk_dev_close(raid);
    g.chunk = 1000;
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), -EINVAL);
    g.chunk = 64 * KiB;
    struct rk_dev *missing[2] = {m[0], NULL};
    assert_int_equal(rk_raid_open(&g, missing, NULL, &raid), -ENODEV);
    rk_dev_close(m[0]);
    rk_dev_close(m[1]);
}

/* ---- an asynchronous member: a mem device whose requests complete on a worker thread ---- */

/* Submitted and not yet completed member requests over all async devices, the most seen at
 * once, and how many a worker waits for (up to 2 s) before completing anything. */
static _Atomic int async_outstanding, async_max;
static _Atomic int async_hold;
static _Atomic bool async_released; /* the hold count was reached once: stop holding */

struct async_dev {
    struct rk_dev *inner;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct rk_io *head, *tail; /* queue linked through member_priv */
    bool stop;
};

static int async_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct async_dev *a = dev->priv;
    return rk_dev_read(a->inner, buf, len, off);
}

static int async_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                       uint32_t flags)
{
    struct async_dev *a = dev->priv;
    return rk_dev_write(a->inner, buf, len, off, flags);
}

static int async_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct async_dev *a = dev->priv;
    return rk_dev_discard(a->inner, len, off);
}

static int async_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    struct async_dev *a = dev->priv;
    return rk_dev_write_zeroes(a->inner, len, off, flags);
}

static int async_run(struct async_dev *a, struct rk_io *io)
{
    switch (io->op) {
    case RK_OP_READ:
        return rk_dev_read(a->inner, io->buf, io->len, io->off);
    case RK_OP_WRITE:
        return rk_dev_write(a->inner, io->buf, io->len, io->off, io->flags);
    case RK_OP_FLUSH:
        return rk_dev_flush(a->inner);
    case RK_OP_DISCARD:
        return rk_dev_discard(a->inner, io->len, io->off);
    case RK_OP_WRITE_ZEROES:
        return rk_dev_write_zeroes(a->inner, io->len, io->off, io->flags);
    }
    return -EINVAL;
}

static void *async_main(void *arg)
{
    struct async_dev *a = arg;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->head && !a->stop)
            pthread_cond_wait(&a->cond, &a->lock);
        if (!a->head)
            break;
        struct rk_io *io = a->head;
        a->head = io->member_priv;
        if (!a->head)
            a->tail = NULL;
        pthread_mutex_unlock(&a->lock);
        for (int i = 0; i < 2000 && !async_released; i++) {
            if (async_outstanding >= async_hold)
                async_released = true;
            else
                usleep(1000);
        }
        int r = async_run(a, io);
        async_outstanding--;
        rk_io_complete(io, r);
        pthread_mutex_lock(&a->lock);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

static void async_submit(struct rk_dev *dev, struct rk_io *io)
{
    struct async_dev *a = dev->priv;
    int now = ++async_outstanding;
    int max = async_max;
    while (now > max && !atomic_compare_exchange_weak(&async_max, &max, now))
        ;
    io->member_priv = NULL;
    pthread_mutex_lock(&a->lock);
    if (a->tail)
        a->tail->member_priv = io;
    else
        a->head = io;
    a->tail = io;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
}

static void async_close(struct rk_dev *dev)
{
    struct async_dev *a = dev->priv;
    pthread_mutex_lock(&a->lock);
    a->stop = true;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->thread, NULL);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->cond);
    rk_dev_close(a->inner);
    free(a);
}

static const struct rk_dev_ops async_ops = {
    .kind = "async",
    .read = async_read,
    .write = async_write,
    .discard = async_discard,
    .write_zeroes = async_write_zeroes,
    .submit = async_submit,
    .close = async_close,
};

static struct rk_dev *async_open(uint64_t size)
{
    struct async_dev *a = calloc(1, sizeof(*a));
    assert_non_null(a);
    assert_int_equal(rk_mem_open(size, 512, &a->inner), 0);
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->cond, NULL);
    assert_int_equal(pthread_create(&a->thread, NULL, async_main, a), 0);
    return rk_test_wrap(&async_ops, a, a->inner, "async");
}

/* Replace the fixture's members by async ones (same geometry) and reopen the array. */
static void fx_make_async(struct fixture *fx)
{
    rk_dev_close(fx->raid);
    for (uint32_t i = 0; i < fx->g.members; i++) {
        uint64_t size = fx->members[i]->size;
        rk_dev_close(fx->members[i]);
        fx->members[i] = async_open(size);
    }
    assert_int_equal(rk_raid_open(&fx->g, fx->members, NULL, &fx->raid), 0);
}

/* The member I/O of one request is in flight at the same time: a worker holds its completion
 * until the expected number of member requests is outstanding (a serial engine would never get
 * there and the counts below would stay at 1). rk_io_run executes the last io of a round in the
 * caller's thread, so one fewer than the round's ios is outstanding on the async members. */
static void test_parallel_members(void **state)
{
    struct fixture fx;
    const uint64_t sz[] = {2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB};
    fx_open(&fx, RK_LEVEL_RAID0, 4, 64 * KiB, sz, 512);
    fx_make_async(&fx);
    uint8_t *buf = malloc(1 * MiB);
    assert_non_null(buf);
    memset(buf, 3, 1 * MiB);

    async_max = 0;
    async_released = false;
    async_hold = 15; /* 1 MiB over 64 KiB chunks: 16 member writes, 15 submitted */
    assert_int_equal(rk_dev_write(fx.raid, buf, 1 * MiB, 0, 0), 0);
    assert_int_equal(async_max, 15);

    async_max = 0;
    async_released = false;
    async_hold = 3;
    assert_int_equal(rk_dev_flush(fx.raid), 0);
    assert_int_equal(async_max, 3);
    async_hold = 0;
    fx_close(&fx);

    /* raid1 write: every mirror at once; read: one share per mirror at once. */
    fx_open(&fx, RK_LEVEL_RAID1, 3, 64 * KiB, sz, 512);
    fx_make_async(&fx);
    async_max = 0;
    async_released = false;
    async_hold = 2;
    assert_int_equal(rk_dev_write(fx.raid, buf, 1 * MiB, 0, 0), 0);
    assert_int_equal(async_max, 2);
    async_max = 0;
    async_released = false;
    assert_int_equal(rk_dev_read(fx.raid, buf, 1 * MiB, 0), 0);
    assert_int_equal(async_max, 2);
    async_hold = 0;
    free(buf);
    fx_close(&fx);
}

/* The random workload over members that complete on other threads, out of order. */
static void test_async_members(void **state)
{
    static const int levels[] = {RK_LEVEL_LINEAR, RK_LEVEL_RAID0, RK_LEVEL_RAID1, RK_LEVEL_RAID10};
    for (int li = 0; li < 4; li++) {
        struct fixture fx;
        const uint64_t sz[] = {1 * MiB, 2 * MiB, 1536 * KiB};
        fx_open(&fx, levels[li], 3, 16 * KiB, sz, 512);
        fx_make_async(&fx);
        run_random(&fx, 40u + (unsigned)li, 150);
        fx_close(&fx);
    }
}

/* Many threads on disjoint regions at once; the result must equal what each wrote. */
struct worker {
    struct rk_dev *raid;
    uint64_t base, span;
    unsigned seed;
    int errors;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    uint8_t *buf = malloc(256 * KiB), *rd = malloc(256 * KiB);
    for (int i = 0; i < 100 && buf && rd; i++) {
        uint64_t len = (1 + rand_r(&w->seed) % 64) * 4 * KiB;
        uint64_t off = w->base + (rand_r(&w->seed) % ((w->span - len) / 4096 + 1)) * 4096;
        memset(buf, (int)(off / 4096 + (uint64_t)i), len);
        if (rk_dev_write(w->raid, buf, len, off, 0) || rk_dev_read(w->raid, rd, len, off) ||
            memcmp(buf, rd, len))
            w->errors++;
    }
    free(buf);
    free(rd);
    return NULL;
}

static void test_concurrent(void **state)
{
    static const int levels[] = {RK_LEVEL_RAID0, RK_LEVEL_RAID1, RK_LEVEL_RAID10};
    for (int li = 0; li < 3; li++) {
        struct fixture fx;
        const uint64_t sz[] = {4 * MiB, 4 * MiB, 4 * MiB};
        fx_open(&fx, levels[li], 3, 16 * KiB, sz, 512);
        struct worker w[4];
        pthread_t t[4];
        for (int i = 0; i < 4; i++) {
            w[i] = (struct worker){.raid = fx.raid,
                                   .base = fx.size / 4 * (uint64_t)i,
                                   .span = fx.size / 4,
                                   .seed = 100u + (unsigned)i};
            assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(t[i], NULL);
            assert_int_equal(w[i].errors, 0);
        }
        fx_close(&fx);
    }
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_raid0),
        cmocka_unit_test(test_raid1),
        cmocka_unit_test(test_raid1_read_balance),
        cmocka_unit_test(test_raid10),
        cmocka_unit_test(test_mixed_block_sizes),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_parallel_members),
        cmocka_unit_test(test_async_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
