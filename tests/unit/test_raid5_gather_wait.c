/*
 * Stripe gathering when every entry is in use (src/raid/raid5_gather.c r5g_take): a stream's
 * write into a new stripe waits for an entry that is being written out to be freed, instead of
 * writing out a held stripe the stream is still filling (which costs reads and a partial-stripe
 * write: on an emulated HDD, 16 KiB sequential raid5 writes ran 6-12x slower that way).
 *
 * raid5 of 4 memory members behind a gate that can hold every member write. Stripes 1..8 each
 * get a held entry (stripe 1 all but its last piece, the others their first piece); the gate
 * closes; stripe 1's last piece makes it whole, and its write-out stops at the gate (WRITING);
 * a piece starting stripe 9 then needs an entry. It must wait for stripe 1's, not write out
 * stripe 2 ("memory bound"). The data and parity are checked after the gate opens.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "raid/parity.h"
#include "raidkit/raid.h"
#include "rk_test.h"
#include "rk_test_bm.h"

#define DOFF  (8 * KiB)
#define CHUNK (64 * KiB)
#define WR    (16 * KiB)
#define N     4u
#define ROWS  16u

struct gate {
    struct rk_dev *inner; /* first: rk_test_fwd */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool closed;
    int waiting; /* writes stopped at the gate now */
};

static int gate_write(struct rk_dev *d, const void *buf, uint64_t len, uint64_t off, uint32_t fl)
{
    struct gate *g = d->priv;
    pthread_mutex_lock(&g->lock);
    g->waiting++;
    pthread_cond_broadcast(&g->cond);
    while (g->closed)
        pthread_cond_wait(&g->cond, &g->lock);
    g->waiting--;
    pthread_mutex_unlock(&g->lock);
    return rk_dev_write(g->inner, buf, len, off, fl);
}

static const struct rk_dev_ops gate_ops = {.read = rk_test_fwd_read,
                                           .write = gate_write,
                                           .flush = rk_test_fwd_flush,
                                           .close = rk_test_fwd_close};

static void gate_set(struct gate **g, bool closed)
{
    for (uint32_t i = 0; i < N; i++) {
        pthread_mutex_lock(&g[i]->lock);
        g[i]->closed = closed;
        pthread_cond_broadcast(&g[i]->cond);
        pthread_mutex_unlock(&g[i]->lock);
    }
}

static int gate_waiting(struct gate **g)
{
    int n = 0;
    for (uint32_t i = 0; i < N; i++) {
        pthread_mutex_lock(&g[i]->lock);
        n += g[i]->waiting;
        pthread_mutex_unlock(&g[i]->lock);
    }
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Every stripe's parity matches its data on the member contents (raid5: parity member
 * N - 1 - row % N, data chunks after it). */
static void check_parity(struct rk_dev **mem)
{
    char *blk[N], *p = malloc(CHUNK);
    for (uint32_t i = 0; i < N; i++)
        blk[i] = malloc(CHUNK);
    for (uint64_t s = 0; s < ROWS; s++) {
        uint32_t pd = N - 1 - (uint32_t)(s % N);
        void *data[N - 1];
        for (uint32_t i = 0; i < N; i++)
            assert_int_equal(rk_dev_read(mem[i], blk[i], CHUNK, DOFF + s * CHUNK), 0);
        for (uint32_t k = 0; k < N - 1; k++)
            data[k] = blk[(pd + 1 + k) % N];
        rk_parity_ref_pq((int)N - 1, CHUNK, data, p, NULL);
        assert_memory_equal(p, blk[pd], CHUNK);
    }
    for (uint32_t i = 0; i < N; i++)
        free(blk[i]);
    free(p);
}

struct writer {
    pthread_t t;
    struct rk_dev *raid;
    const char *buf;
    uint64_t off;
    int ret;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    w->ret = rk_dev_write(w->raid, w->buf, WR, w->off, 0);
    return NULL;
}

static void writer_start(struct writer *w, struct rk_dev *raid, const char *buf, uint64_t off)
{
    *w = (struct writer){.raid = raid, .buf = buf, .off = off, .ret = -1};
    assert_int_equal(pthread_create(&w->t, NULL, writer_main, w), 0);
}

static void test_new_stripe_waits_for_write_out(void **state)
{
    (void)state;
    setenv("RAIDKIT_RAID5_GATHER_US", "30000000", 1); /* no hold ends during the test */
    struct gate *g[N];
    struct rk_dev *mem[N], *m[N], *raid;
    rk_test_mem_members(mem, N, DOFF + ROWS * CHUNK, 512);
    for (uint32_t i = 0; i < N; i++) {
        g[i] = calloc(1, sizeof(*g[i]));
        assert_non_null(g[i]);
        g[i]->inner = mem[i];
        pthread_mutex_init(&g[i]->lock, NULL);
        pthread_cond_init(&g[i]->cond, NULL);
        m[i] = rk_test_wrap(&gate_ops, g[i], mem[i], "gate");
    }
    struct rk_raid_geom geo = {0};
    rk_test_geom(&geo, RK_LEVEL_RAID5, N, CHUNK, DOFF, ROWS * CHUNK);
    assert_int_equal(rk_raid_open(&geo, m, NULL, &raid), 0);
    struct rk_raid_gather_stats gs;
    assert_int_equal(rk_raid_gather_stats(raid, &gs), 0);
    assert_int_equal(gs.entries, 8);
    uint64_t sb = (N - 1) * CHUNK, per = sb / WR;
    unsigned seed = 1707;
    char *buf = malloc(sb * ROWS), *want = calloc(1, sb * ROWS), *back = malloc(sb * ROWS);
    rk_test_fill_rand_r((unsigned char *)buf, sb * ROWS, &seed);
#define PIECE(s, i) ((s)*sb + (i)*WR)
#define PUT(off)                                                                                   \
    do {                                                                                           \
        assert_int_equal(rk_dev_write(raid, buf + (off), WR, (off), 0), 0);                        \
        memcpy(want + (off), buf + (off), WR);                                                     \
    } while (0)
    /* A stream's piece into a new stripe starts an entry only when it starts where a recent
     * write ended (or a few lengths after): the last piece of each stripe goes first. */
    for (uint64_t i = 0; i < per; i++)
        PUT(PIECE(1, i)); /* stripe 1: its first piece goes to the members, the rest held */
    for (uint64_t i = 0; i < per - 1; i++)
        PUT(PIECE(2, i)); /* stripe 2 but its last piece */
    PUT(PIECE(3, 0));
    for (uint64_t st = 4; st <= 8; st++) {
        PUT(PIECE(st - 1, per - 1));
        PUT(PIECE(st, 0));
    }
    PUT(PIECE(8, per - 1));
    assert_int_equal(rk_raid_gather_stats(raid, &gs), 0);
    assert_int_equal(gs.held_now, 8);
    gate_set(g, true);
    struct writer a, b;
    writer_start(&a, raid, buf + PIECE(2, per - 1), PIECE(2, per - 1)); /* stripe 2 whole */
    memcpy(want + PIECE(2, per - 1), buf + PIECE(2, per - 1), WR);
    for (int t = 0; t < 2000 && gate_waiting(g) < 1; t++)
        sleep_ms(5);
    assert_true(gate_waiting(g) >= 1);                      /* its write-out at the gate: WRITING */
    writer_start(&b, raid, buf + PIECE(9, 0), PIECE(9, 0)); /* starts stripe 9: no entry free */
    memcpy(want + PIECE(9, 0), buf + PIECE(9, 0), WR);
    sleep_ms(300);
    assert_int_equal(rk_raid_gather_stats(raid, &gs), 0);
    assert_int_equal(gs.out_memory, 0); /* it waits: stripe 1 was not written out in parts */
    gate_set(g, false);
    pthread_join(a.t, NULL);
    pthread_join(b.t, NULL);
    assert_int_equal(a.ret, 0);
    assert_int_equal(b.ret, 0);
    assert_int_equal(rk_raid_gather_stats(raid, &gs), 0);
    assert_int_equal(gs.out_memory, 0);
    assert_int_equal(rk_dev_flush(raid), 0);
    assert_int_equal(rk_dev_read(raid, back, 10 * sb, 0), 0);
    assert_memory_equal(back, want, 10 * sb);
#undef PUT
#undef PIECE
    rk_dev_close(raid);
    check_parity(mem);
    for (uint32_t i = 0; i < N; i++)
        rk_dev_close(m[i]);
    free(buf);
    free(want);
    free(back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_stripe_waits_for_write_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
