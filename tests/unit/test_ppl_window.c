/* Log windows of the partial parity log (src/raid/raid5_ppl_full.c; docs/FORMAT.md "Partial
 * parity log", ordering step 1): a sequential stream of whole-stripe writes logs one
 * header-only entry per window of rows ahead of it instead of one per request, a member flush
 * closes the window, and a partial-stripe write inside a window cuts its row out, so that a
 * later whole-stripe write of that row logs a newer entry (else the replay would take the
 * partial write's stale partial parity as the stripe's latest write). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "raid/raid5_ppl.h"
#include "raidkit/device.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define CHUNK  (16u * 1024u)
#define STRIPE (2u * CHUNK) /* raid5 over 3 */
#define DOFF   (1024u * 1024u)
#define DSIZE  (1024u * 1024u)
#define LOFF   (512u * 1024u)
#define LSIZE  (512u * 1024u)
#define ROWS   (DSIZE / CHUNK)

static int open_arr(struct rk_dev **mem, uint32_t absent, int mode, struct rk_dev **raid)
{
    return rk_test_ppl_open(RK_LEVEL_RAID5, 3, mem, absent, 78, mode, raid);
}

/* The whole-stripe entries in the members' logs, by seq (one per seq: copies merged). */
struct fulls {
    int n;
    uint64_t seq[64], row[64];
    uint32_t nrows[64];
};

static void scan_fulls(struct rk_dev **mem, struct fulls *f)
{
    uint8_t *buf = rk_buf_alloc(LSIZE);
    struct rk_ppl_limits lim = {.id = 78, .chunk = CHUNK, .nd = 2, .np = 1, .rows = ROWS};
    f->n = 0;
    for (uint32_t s = 0; s < 3; s++) {
        assert_int_equal(rk_dev_read(mem[s], buf, LSIZE, LOFF), 0);
        for (uint64_t pos = RK_PPL_BLOCK; pos < LSIZE; pos += RK_PPL_BLOCK) {
            struct rk_ppl_entry e;
            char err[256];
            lim.room = LSIZE - pos;
            if (rk_ppl_entry_decode(buf + pos, &lim, &e, err, sizeof(err)) ||
                e.flags != RK_PPL_FULL)
                continue;
            bool seen = false;
            for (int i = 0; i < f->n; i++)
                seen |= f->seq[i] == e.seq;
            if (!seen && f->n < 64) {
                f->seq[f->n] = e.seq;
                f->row[f->n] = e.row;
                f->nrows[f->n++] = e.nrows;
            }
        }
    }
    free(buf);
}

/* 16 sequential two-row writes: the first logs its own rows, the second opens a window to the
 * array's end, the other 14 log nothing. After a FLUSH the stream opens a new window. */
static void test_stream_logs_one_window(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    assert_int_equal(open_arr(mem, 0, 0, &raid), 0);
    uint8_t *buf = rk_buf_alloc(2 * STRIPE);
    for (uint64_t i = 0; i < 16; i++) {
        rk_test_fill64(buf, 2 * STRIPE, 100 + i);
        assert_int_equal(rk_dev_write(raid, buf, 2 * STRIPE, i * 2 * STRIPE, 0), 0);
    }
    struct fulls f;
    scan_fulls(mem, &f);
    assert_int_equal(f.n, 2);
    assert_true(f.row[0] == 0 || f.row[1] == 0);
    int w = f.row[0] == 2 ? 0 : 1;
    assert_int_equal(f.row[w], 2);
    assert_int_equal(f.nrows[w], ROWS - 2); /* 32 MiB of data, clipped to the array */
    assert_int_equal(rk_dev_flush(raid), 0);
    rk_test_fill64(buf, 2 * STRIPE, 200);
    assert_int_equal(rk_dev_write(raid, buf, 2 * STRIPE, 32 * STRIPE, 0), 0);
    scan_fulls(mem, &f);
    bool again = false; /* the window closed at the flush: a new one from row 32 */
    for (int i = 0; i < f.n; i++)
        again |= f.row[i] == 32 && f.nrows[i] == ROWS - 32;
    assert_true(again);
    rk_dev_close(raid);
    free(buf);
    rk_test_close_members(mem, 3);
}

/* A live partial entry ahead of the stream (row 10, no FLUSH since) ends the window before it:
 * at replay a whole-stripe entry supersedes the older entries of its rows, and that partial
 * write's partial parity is what makes its stripe consistent after a crash while it runs. */
static void test_window_stops_at_live_partial(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    assert_int_equal(open_arr(mem, 0, 0, &raid), 0);
    uint8_t *buf = rk_buf_alloc(2 * STRIPE);
    rk_test_fill64(buf, 4096, 600);
    assert_int_equal(rk_dev_write(raid, buf, 4096, 10 * STRIPE + 8192, 0), 0);
    for (uint64_t i = 0; i < 3; i++) {
        rk_test_fill64(buf, 2 * STRIPE, 601 + i);
        assert_int_equal(rk_dev_write(raid, buf, 2 * STRIPE, i * 2 * STRIPE, 0), 0);
    }
    struct fulls f;
    scan_fulls(mem, &f);
    bool clipped = false, past = false;
    for (int i = 0; i < f.n; i++) {
        clipped |= f.row[i] == 2 && f.nrows[i] == 8; /* rows [2, 10) */
        past |= f.row[i] <= 10 && f.row[i] + f.nrows[i] > 10;
    }
    assert_true(clipped);
    assert_false(past);
    rk_dev_close(raid);
    free(buf);
    rk_test_close_members(mem, 3);
}

/*
 * Rows 0-1, then 2-3 (opens a window over rows 2..63), a partial write of row 5's first chunk,
 * then rows 4-7 whole: the last write must not run under the window (its entry is older than
 * the partial write's). Restarted dirty without each member in turn, the start is refused (the
 * newest entry of row 5 is a whole-stripe one, which a missing chunk cannot prove) or proven;
 * either way every chunk then reads what was written last. Under the window instead, the replay
 * would rebuild row 5's parity from the partial write's stale partial parity and a missing
 * chunk would read its content from before the whole-stripe write.
 */
static void run_cut(uint32_t absent)
{
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    assert_int_equal(open_arr(mem, 0, 0, &raid), 0);
    uint8_t *shadow = rk_buf_alloc(8 * STRIPE), *got = rk_buf_alloc(8 * STRIPE);
    rk_test_fill64(shadow, 8 * STRIPE, 300 + absent);
    assert_int_equal(rk_dev_write(raid, shadow, 2 * STRIPE, 0, RK_WRITE_FUA), 0);
    assert_int_equal(rk_dev_write(raid, shadow + 2 * STRIPE, 2 * STRIPE, 2 * STRIPE, 0), 0);
    rk_test_fill64(shadow + 5 * STRIPE + 4096, 4096, 400 + absent);
    assert_int_equal(rk_dev_write(raid, shadow + 5 * STRIPE + 4096, 4096, 5 * STRIPE + 4096, 0), 0);
    rk_test_fill64(shadow + 4 * STRIPE, 4 * STRIPE, 500 + absent);
    assert_int_equal(rk_dev_write(raid, shadow + 4 * STRIPE, 4 * STRIPE, 4 * STRIPE, 0), 0);
    rk_dev_close(raid); /* the "crash": nothing marks the log clean */

    int ret = open_arr(mem, 1u << absent, RK_LOG_REPLAY, &raid);
    if (ret == -EUCLEAN) {
        rk_dev_close(raid);
        ret = open_arr(mem, 1u << absent, RK_LOG_REPLAY | RK_LOG_FORCE, &raid);
    }
    assert_int_equal(ret, 0);
    assert_int_equal(rk_dev_read(raid, got, 8 * STRIPE, 0), 0);
    assert_memory_equal(got, shadow, 8 * STRIPE);
    rk_dev_close(raid);
    free(shadow);
    free(got);
    rk_test_close_members(mem, 3);
}

static void test_partial_cuts_window(void **state)
{
    (void)state;
    for (uint32_t s = 0; s < 3; s++)
        run_cut(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_logs_one_window),
        cmocka_unit_test(test_window_stops_at_live_partial),
        cmocka_unit_test(test_partial_cuts_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
