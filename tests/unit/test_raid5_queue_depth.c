/* raid5 small writes on slow members are bounded by the members, not by the stripe buffer
 * pool: 40 concurrent 4 KiB writes to 40 different stripes all reach their read-modify-write
 * reads at once. With a pool of 16 buffers (the old STRIPE_POOL_MAX) at most 16 writes were in
 * flight, so on emulated SSDs raid5 4K random writes at qd 32 were capped at 16 and every extra
 * step of a write (the partial parity log's entry) cost throughput one for one.
 *
 * Each member read waits until every writer's read of its round waits or 5 s passed, and the
 * most reads that waited at the same time is recorded. These members have no submit op, so a
 * write's two reads run one after the other (a round of first reads, then one of second reads)
 * and at most one read per write waits: 40 with enough buffers, at most 16 with 16. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "raidkit/device.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define N       4u
#define CHUNK   (64u * 1024u)
#define SBYTES  (3u * CHUNK) /* raid5 over 4: three data chunks a stripe */
#define DOFF    (1024u * 1024u)
#define DSIZE   (8u * 1024u * 1024u)
#define WRITERS 40

/* Shared by the members: the reads waiting now and the most that ever waited together. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv; /* on CLOCK_MONOTONIC (main) */
static int waiting, most;
static int arrived; /* member reads since armed: a round is WRITERS of them */
static bool armed;

struct slow {
    struct rk_dev *inner;
};

static int slow_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct slow *s = dev->priv;
    pthread_mutex_lock(&mu);
    if (armed && off >= DOFF) {
        /* The round ends when its last read arrives, counted by arrivals, not by the reads
         * still waiting: a released read leaving (or starting its next round) must not hold
         * the others of its round back until the timeout. */
        int round_end = (arrived / WRITERS + 1) * WRITERS;
        arrived++;
        waiting++;
        most = waiting > most ? waiting : most;
        pthread_cond_broadcast(&cv);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 5; /* all of them arrive well before: the wait ends when they do */
        while (arrived < round_end && armed)
            if (pthread_cond_timedwait(&cv, &mu, &until))
                break;
        waiting--;
    }
    pthread_mutex_unlock(&mu);
    return rk_dev_read(s->inner, buf, len, off);
}

static int slow_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                      uint32_t flags)
{
    struct slow *s = dev->priv;
    return rk_dev_write(s->inner, buf, len, off, flags);
}

static int slow_flush(struct rk_dev *dev)
{
    struct slow *s = dev->priv;
    return rk_dev_flush(s->inner);
}

static void slow_close(struct rk_dev *dev)
{
    free(dev->priv);
}

static const struct rk_dev_ops slow_ops = {
    .kind = "slow",
    .read = slow_read,
    .write = slow_write,
    .flush = slow_flush,
    .close = slow_close,
};

struct writer {
    struct rk_dev *raid;
    uint64_t off;
    int ret;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    uint8_t *buf = rk_buf_alloc(4096);
    memset(buf, (int)(w->off / SBYTES) + 1, 4096);
    w->ret = rk_dev_write(w->raid, buf, 4096, w->off, 0);
    free(buf);
    return NULL;
}

static void run(int level_log)
{
    alarm(60);
    struct rk_dev *mem[N], *m[N], *raid = NULL;
    rk_test_mem_members(mem, N, DOFF + DSIZE, 4096);
    for (uint32_t i = 0; i < N; i++) {
        struct slow *s = calloc(1, sizeof(*s));
        assert_non_null(s);
        s->inner = mem[i];
        m[i] = rk_test_wrap(&slow_ops, s, mem[i], "slow");
    }
    struct rk_raid_geom geo = {0};
    if (level_log)
        geo = (struct rk_raid_geom){.ppl_offset = 512 * 1024, .ppl_size = 512 * 1024, .ppl_id = 5};
    rk_test_geom(&geo, RK_LEVEL_RAID5, N, CHUNK, DOFF, DSIZE);
    assert_int_equal(rk_raid_open(&geo, m, NULL, &raid), 0);
    if (level_log)
        assert_int_equal(rk_raid_log_start(raid, false), 0);
    pthread_mutex_lock(&mu);
    armed = true;
    waiting = most = arrived = 0;
    pthread_mutex_unlock(&mu);
    pthread_t th[WRITERS];
    struct writer w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        /* One 4 KiB write into the first data chunk of stripe i: a read-modify-write reads
         * that chunk and the parity (2 member reads). */
        w[i] = (struct writer){.raid = raid, .off = (uint64_t)i * SBYTES};
        assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_lock(&mu);
    armed = false;
    int seen = most;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(w[i].ret, 0);
    print_message("most member reads waiting together: %d of %d\n", seen, WRITERS);
    assert_true(seen >= 32); /* as many writes in flight as the default worker threads */
    uint8_t *got = rk_buf_alloc(4096), *want = rk_buf_alloc(4096);
    for (int i = 0; i < WRITERS; i++) {
        assert_int_equal(rk_dev_read(raid, got, 4096, w[i].off), 0);
        memset(want, (int)(w[i].off / SBYTES) + 1, 4096);
        assert_memory_equal(got, want, 4096);
    }
    free(got);
    free(want);
    rk_dev_close(raid);
    for (uint32_t i = 0; i < N; i++)
        rk_dev_close(m[i]);
    rk_test_close_members(mem, N);
}

static void test_queue_depth(void **state)
{
    (void)state;
    run(0);
}

static void test_queue_depth_ppl(void **state)
{
    (void)state;
    run(1);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &ca);
    pthread_condattr_destroy(&ca);
    /* Small writes go to the members at once (no gathering hold). */
    setenv("RAIDKIT_RAID5_GATHER_US", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_depth),
        cmocka_unit_test(test_queue_depth_ppl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
