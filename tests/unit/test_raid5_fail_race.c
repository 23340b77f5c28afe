/* raid5 with a partial parity log: a parity member fails while a write that chose it waits for
 * room in its full log ring (the CI failure of tests/integration/member_path_fio_verify.sh,
 * raid5 reaper: fio got EIO from a write while the array was only degraded). The write planned
 * with the parity slot writable, found its ring full behind an entry still in flight and waited;
 * meanwhile the slot failed, so the reclaim could not retire its ring (a failed slot's head is
 * never written) and ppl_alloc returned -EIO. A failed slot's parity is not written
 * (r5w_commit), so the write needs no entry there and must succeed.
 *
 * Deterministic: slot 0 holds back the data write of the ring's oldest entry (a gate), six more
 * writes fill the ring of parity slot 2, a seventh plans (its read seen) and waits for room,
 * then slot 2 starts failing every request and the gate opens. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "raidkit/device.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define CHUNK  (16u * 1024u)
#define SBYTES (2u * CHUNK) /* raid5 over 3: two data chunks a stripe */
#define DOFF   (1024u * 1024u)
#define DSIZE  (1024u * 1024u)
#define PPL    (64u * 1024u) /* head + a 60 KiB ring: seven 8 KiB entries of 4 KiB writes */

/* A member that can hold back its data-area writes (closed) and fail every request (fail). */
struct gate {
    struct rk_dev *inner;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool closed;
    int waiting; /* writes held back now */
    int reads;   /* reads seen */
    _Atomic int fail;
};

static int gate_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct gate *g = dev->priv;
    pthread_mutex_lock(&g->mu);
    g->reads++;
    pthread_mutex_unlock(&g->mu);
    return atomic_load(&g->fail) ? -EIO : rk_dev_read(g->inner, buf, len, off);
}

static int gate_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                      uint32_t flags)
{
    struct gate *g = dev->priv;
    pthread_mutex_lock(&g->mu);
    if (off >= DOFF && g->closed) {
        g->waiting++;
        pthread_cond_broadcast(&g->cv);
        while (g->closed)
            pthread_cond_wait(&g->cv, &g->mu);
        g->waiting--;
    }
    pthread_mutex_unlock(&g->mu);
    return atomic_load(&g->fail) ? -EIO : rk_dev_write(g->inner, buf, len, off, flags);
}

static int gate_flush(struct rk_dev *dev)
{
    struct gate *g = dev->priv;
    return atomic_load(&g->fail) ? -EIO : rk_dev_flush(g->inner);
}

static int gate_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct gate *g = dev->priv;
    return atomic_load(&g->fail) ? -EIO : rk_dev_discard(g->inner, len, off);
}

static int gate_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    struct gate *g = dev->priv;
    return atomic_load(&g->fail) ? -EIO : rk_dev_write_zeroes(g->inner, len, off, flags);
}

static void gate_close(struct rk_dev *dev)
{
    struct gate *g = dev->priv;
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

static const struct rk_dev_ops gate_ops = {
    .kind = "gate",
    .read = gate_read,
    .write = gate_write,
    .flush = gate_flush,
    .discard = gate_discard,
    .write_zeroes = gate_write_zeroes,
    .close = gate_close,
};

static struct rk_dev *gate_open(struct rk_dev *inner, struct gate **out)
{
    struct gate *g = calloc(1, sizeof(*g));
    assert_non_null(g);
    g->inner = inner;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    *out = g;
    return rk_test_wrap(&gate_ops, g, inner, "gate");
}

/* Wait (up to 10 s) until *v, read under g->mu, reaches want. */
static void gate_wait_for(struct gate *g, const int *v, int want)
{
    for (int i = 0; i < 10000; i++) {
        pthread_mutex_lock(&g->mu);
        int now = *v;
        pthread_mutex_unlock(&g->mu);
        if (now >= want)
            return;
        usleep(1000);
    }
    fail_msg("gate: waited 10 s for %d", want);
}

struct writer {
    struct rk_dev *raid;
    uint64_t off;
    uint8_t pat;
    int ret;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    uint8_t *buf = rk_buf_alloc(4096);
    memset(buf, w->pat, 4096);
    w->ret = rk_dev_write(w->raid, buf, 4096, w->off, 0);
    free(buf);
    return NULL;
}

/* Array offset of the first block of data chunk k of row (raid5 over 3). */
static uint64_t at(uint64_t row, uint32_t k)
{
    return row * SBYTES + (uint64_t)k * CHUNK;
}

static void test_parity_fails_while_waiting_for_ring(void **state)
{
    (void)state;
    alarm(60);
    struct rk_dev *mem[3], *m[3], *raid = NULL;
    struct gate *g0, *g2;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    m[0] = gate_open(mem[0], &g0);
    m[1] = mem[1];
    m[2] = gate_open(mem[2], &g2);
    struct rk_raid_geom geo = {.ppl_offset = 512 * 1024, .ppl_size = PPL, .ppl_id = 9};
    rk_test_geom(&geo, RK_LEVEL_RAID5, 3, CHUNK, DOFF, DSIZE);
    assert_int_equal(rk_raid_open(&geo, m, NULL, &raid), 0);
    assert_int_equal(rk_raid_log_start(raid, false), 0);

    /* Rows 0, 3, 6, ... have their parity on slot 2 and data chunks 0, 1 on slots 0, 1. The
     * oldest entry of slot 2's ring: a write to slot 0, held back by the gate. */
    pthread_mutex_lock(&g0->mu);
    g0->closed = true;
    pthread_mutex_unlock(&g0->mu);
    struct writer a = {.raid = raid, .off = at(0, 0), .pat = 0xa0}, c;
    pthread_t ta, tc;
    assert_int_equal(pthread_create(&ta, NULL, writer_main, &a), 0);
    gate_wait_for(g0, &g0->waiting, 1);
    /* Six more entries (slot 1's data, not held): the ring holds 7 of its 7. */
    uint8_t *buf = rk_buf_alloc(4096), *got = rk_buf_alloc(4096);
    for (uint64_t i = 1; i <= 6; i++) {
        memset(buf, (int)(0xb0 + i), 4096);
        assert_int_equal(rk_dev_write(raid, buf, 4096, at(3 * i, 1), 0), 0);
    }
    /* The eighth plans with slot 2 writable (a reconstruct-write: it reads chunk 0 of its row,
     * on slot 0), then waits for room. */
    pthread_mutex_lock(&g0->mu);
    int reads = g0->reads;
    pthread_mutex_unlock(&g0->mu);
    c = (struct writer){.raid = raid, .off = at(21, 1), .pat = 0xc0};
    assert_int_equal(pthread_create(&tc, NULL, writer_main, &c), 0);
    gate_wait_for(g0, &g0->reads, reads + 1);
    usleep(100 * 1000); /* from its read to its wait in the log is CPU work only */
    /* Slot 2 fails every request from now on; the oldest entry completes. */
    atomic_store(&g2->fail, 1);
    pthread_mutex_lock(&g0->mu);
    g0->closed = false;
    pthread_cond_broadcast(&g0->cv);
    pthread_mutex_unlock(&g0->mu);
    pthread_join(ta, NULL);
    pthread_join(tc, NULL);
    assert_int_equal(a.ret, 0);
    assert_int_equal(c.ret, 0); /* before the fix: -EIO, with only slot 2 failed */

    /* Degraded, everything reads back, and later writes work. */
    struct writer *all[2] = {&a, &c};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rk_dev_read(raid, got, 4096, all[i]->off), 0);
        memset(buf, all[i]->pat, 4096);
        assert_memory_equal(got, buf, 4096);
    }
    for (uint64_t i = 1; i <= 6; i++) {
        assert_int_equal(rk_dev_read(raid, got, 4096, at(3 * i, 1)), 0);
        memset(buf, (int)(0xb0 + i), 4096);
        assert_memory_equal(got, buf, 4096);
    }
    memset(buf, 0xd0, 4096);
    assert_int_equal(rk_dev_write(raid, buf, 4096, at(24, 0), 0), 0);
    assert_int_equal(rk_dev_read(raid, got, 4096, at(24, 0)), 0);
    assert_memory_equal(got, buf, 4096);
    rk_dev_close(raid);
    rk_dev_close(m[0]);
    rk_dev_close(m[2]);
    rk_test_close_members(mem, 3);
    free(buf);
    free(got);
    alarm(0);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    setenv("RAIDKIT_RAID5_GATHER_US", "0", 1); /* every write goes to the members at once */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity_fails_while_waiting_for_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
