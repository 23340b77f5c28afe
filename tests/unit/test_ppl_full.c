/* The raid5/raid6 partial parity log, issue 8 item 4 follow-ups (docs/FORMAT.md "Partial parity
 * log"): a whole-stripe write logs a header-only entry that supersedes the older partial-parity
 * entries of its stripe (their partial parity is stale after it), entries retire at FLUSH, and
 * raid6 rebuilds Q when only P's entry of a write is readable. */
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

#define CHUNK (16u * 1024u)
#define DOFF  (1024u * 1024u)
#define DSIZE (1024u * 1024u)
#define LOFF  (512u * 1024u)
#define LSIZE (512u * 1024u)

/* Open level's array over mem without the slots in absent; start its log with mode. Returns
 * what rk_raid_log_start gave (the array in *raid either way). */
static int open_arr(int level, uint32_t n, struct rk_dev **mem, uint32_t absent, int mode,
                    struct rk_dev **raid)
{
    return rk_test_ppl_open(level, n, mem, absent, 77, mode, raid);
}

/*
 * raid5 over 3 (stripe 0: D0 slot 0, D1 slot 1, P slot 2): a partial write of D0 (its entry
 * holds D1's content as partial parity), then a whole-stripe write of stripe 0 that changes D1.
 * Restarted dirty without D1's member, the replay must never apply the stale partial parity
 * over the newer stripe (D1 would read its content from before the whole-stripe write, or
 * XOR garbage). flush_between: a FLUSH after the whole-stripe write (everything durable: the
 * start is safe and D1 reads its new content); otherwise the whole-stripe write may be torn, so
 * the start is refused, and with force D1 reads what the untouched parity gives (new here).
 */
static void run_full_after_partial(bool flush_after)
{
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    assert_int_equal(open_arr(RK_LEVEL_RAID5, 3, mem, 0, 0, &raid), 0);
    uint8_t *shadow = rk_buf_alloc(2 * CHUNK), *got = rk_buf_alloc(CHUNK);
    rk_test_fill64(shadow, 2 * CHUNK, 1);
    assert_int_equal(rk_dev_write(raid, shadow, 2 * CHUNK, 0, RK_WRITE_FUA), 0);
    rk_test_fill64(shadow + 4096, 4096, 2); /* partial: D0 [4K, 8K) */
    assert_int_equal(rk_dev_write(raid, shadow + 4096, 4096, 4096, 0), 0);
    rk_test_fill64(shadow, 2 * CHUNK, 3); /* whole stripe 0: D1 changes */
    assert_int_equal(rk_dev_write(raid, shadow, 2 * CHUNK, 0, 0), 0);
    if (flush_after)
        assert_int_equal(rk_dev_flush(raid), 0);
    rk_dev_close(raid); /* the "crash": nothing marks the log clean */

    int ret = open_arr(RK_LEVEL_RAID5, 3, mem, 1u << 1, RK_LOG_REPLAY, &raid);
    if (!flush_after) {
        assert_int_equal(ret, -EUCLEAN); /* the whole-stripe write may be torn */
        rk_dev_close(raid);
        ret = open_arr(RK_LEVEL_RAID5, 3, mem, 1u << 1, RK_LOG_REPLAY | RK_LOG_FORCE, &raid);
    }
    assert_int_equal(ret, 0);
    assert_int_equal(rk_dev_read(raid, got, CHUNK, CHUNK), 0); /* D1, reconstructed */
    assert_memory_equal(got, shadow + CHUNK, CHUNK);
    assert_int_equal(rk_dev_read(raid, got, CHUNK, 0), 0);
    assert_memory_equal(got, shadow, CHUNK);
    rk_dev_close(raid);
    free(shadow);
    free(got);
    rk_test_close_members(mem, 3);
}

static void test_full_after_partial_flushed(void **state)
{
    (void)state;
    run_full_after_partial(true);
}

static void test_full_after_partial_torn(void **state)
{
    (void)state;
    run_full_after_partial(false);
}

/* The whole-stripe write left a header-only entry (RK_PPL_FULL, no payload) on P's member. */
static void test_full_entry_logged(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    assert_int_equal(open_arr(RK_LEVEL_RAID5, 3, mem, 0, 0, &raid), 0);
    uint8_t *buf = rk_buf_alloc(LSIZE);
    rk_test_fill64(buf, 4 * CHUNK, 5); /* stripes 0 and 1 */
    assert_int_equal(rk_dev_write(raid, buf, 4 * CHUNK, 0, 0), 0);
    rk_dev_close(raid);
    struct rk_ppl_limits lim = {.id = 77, .chunk = CHUNK, .nd = 2, .np = 1, .rows = DSIZE / CHUNK};
    int full = 0;
    for (uint32_t s = 0; s < 3; s++) {
        assert_int_equal(rk_dev_read(mem[s], buf, LSIZE, LOFF), 0);
        for (uint64_t pos = RK_PPL_BLOCK; pos < LSIZE; pos += RK_PPL_BLOCK) {
            struct rk_ppl_entry e;
            char err[256];
            lim.room = LSIZE - pos;
            if (rk_ppl_entry_decode(buf + pos, &lim, &e, err, sizeof(err)) == 0 &&
                e.flags == RK_PPL_FULL) {
                assert_int_equal(rk_ppl_entry_bytes(&e), RK_PPL_BLOCK);
                assert_true(e.row <= 1 && e.row + e.nrows <= 2);
                full++;
            }
        }
    }
    assert_true(full >= 2); /* on the parity member of each row (slots 2 and 1) */
    free(buf);
    rk_test_close_members(mem, 3);
}

/* Damage every valid entry of row 0 in slot s's log (its checksum then fails). */
static int damage_entries(struct rk_dev *m, uint32_t np)
{
    uint8_t *buf = rk_buf_alloc(LSIZE);
    struct rk_ppl_limits lim = {.id = 77, .chunk = CHUNK, .nd = 2, .np = np, .rows = DSIZE / CHUNK};
    int n = 0;
    assert_int_equal(rk_dev_read(m, buf, LSIZE, LOFF), 0);
    for (uint64_t pos = RK_PPL_BLOCK; pos < LSIZE; pos += RK_PPL_BLOCK) {
        struct rk_ppl_entry e;
        char err[256];
        lim.room = LSIZE - pos;
        if (rk_ppl_entry_decode(buf + pos, &lim, &e, err, sizeof(err)) == 0 && e.row == 0) {
            buf[pos + 30] ^= 0x55;
            n++;
        }
    }
    assert_int_equal(rk_dev_write(m, buf, LSIZE, LOFF, 0), 0);
    free(buf);
    return n;
}

/*
 * raid6 over 4 (stripe 0: Q slot 0, D0 slot 1, D1 slot 2, P slot 3): a 4K write of D0 whose
 * parity writes never landed (old P and Q put back), and Q's log entry unreadable. Restarted
 * dirty without D1's member: P is rebuilt from its entry, and Q, whose entry is gone, is
 * recomputed from the data with D1 as P gives it (never left stale): then a start with only Q
 * and D0 reads D1 right.
 */
static void test_raid6_q_entry_lost(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 4, DOFF + DSIZE, 4096);
    assert_int_equal(open_arr(RK_LEVEL_RAID6, 4, mem, 0, 0, &raid), 0);
    uint8_t *shadow = rk_buf_alloc(2 * CHUNK), *got = rk_buf_alloc(CHUNK);
    uint8_t *oldp = rk_buf_alloc(CHUNK), *oldq = rk_buf_alloc(CHUNK);
    rk_test_fill64(shadow, 2 * CHUNK, 7);
    assert_int_equal(rk_dev_write(raid, shadow, 2 * CHUNK, 0, RK_WRITE_FUA), 0);
    assert_int_equal(rk_dev_read(mem[3], oldp, CHUNK, DOFF), 0);
    assert_int_equal(rk_dev_read(mem[0], oldq, CHUNK, DOFF), 0);
    rk_test_fill64(shadow + 4096, 4096, 8);
    assert_int_equal(rk_dev_write(raid, shadow + 4096, 4096, 4096, 0), 0);
    rk_dev_close(raid);
    assert_int_equal(rk_dev_write(mem[3], oldp, CHUNK, DOFF, 0), 0);
    assert_int_equal(rk_dev_write(mem[0], oldq, CHUNK, DOFF, 0), 0);
    assert_true(damage_entries(mem[0], 2) >= 1); /* Q's entry of the write */

    assert_int_equal(open_arr(RK_LEVEL_RAID6, 4, mem, 1u << 2, RK_LOG_REPLAY, &raid), 0);
    assert_int_equal(rk_dev_read(raid, got, CHUNK, CHUNK), 0);
    assert_memory_equal(got, shadow + CHUNK, CHUNK);
    rk_dev_close(raid);
    /* Only Q and D0 (clean start, no replay): D1 comes from Q alone. */
    assert_int_equal(open_arr(RK_LEVEL_RAID6, 4, mem, (1u << 2) | (1u << 3), 0, &raid), 0);
    assert_int_equal(rk_dev_read(raid, got, CHUNK, CHUNK), 0);
    assert_memory_equal(got, shadow + CHUNK, CHUNK);
    assert_int_equal(rk_dev_read(raid, got, 4096, 4096), 0);
    assert_memory_equal(got, shadow + 4096, 4096);
    rk_dev_close(raid);
    free(shadow);
    free(got);
    free(oldp);
    free(oldq);
    rk_test_close_members(mem, 4);
}

/* Same with D0 and D1 both gone (P and Q left) and Q's entry unreadable: the write modified a
 * missing chunk, and P and Q may hold different versions of it; Q cannot be recomputed (no data
 * chunk left to derive it from P), so the start is refused, never trusted. */
static void test_raid6_q_entry_lost_refused(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 4, DOFF + DSIZE, 4096);
    assert_int_equal(open_arr(RK_LEVEL_RAID6, 4, mem, 0, 0, &raid), 0);
    uint8_t *b = rk_buf_alloc(2 * CHUNK);
    rk_test_fill64(b, 2 * CHUNK, 9);
    assert_int_equal(rk_dev_write(raid, b, 2 * CHUNK, 0, RK_WRITE_FUA), 0);
    rk_test_fill64(b, 4096, 10); /* D1 [0, 4K) */
    assert_int_equal(rk_dev_write(raid, b, 4096, CHUNK, 0), 0);
    rk_dev_close(raid);
    assert_true(damage_entries(mem[0], 2) >= 1);
    assert_int_equal(open_arr(RK_LEVEL_RAID6, 4, mem, (1u << 1) | (1u << 2), RK_LOG_REPLAY, &raid),
                     -EUCLEAN);
    rk_dev_close(raid);
    free(b);
    rk_test_close_members(mem, 4);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    setenv("RAIDKIT_RAID5_GATHER_US", "30000000", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_after_partial_flushed),
        cmocka_unit_test(test_full_after_partial_torn),
        cmocka_unit_test(test_full_entry_logged),
        cmocka_unit_test(test_raid6_q_entry_lost),
        cmocka_unit_test(test_raid6_q_entry_lost_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
