/* Log entries a replay must not take for live, or must not miss (src/raid/raid5_ppl_replay.c,
 * raid5_ppl.c; docs/FORMAT.md "Partial parity log", "Replay"). A member that comes back into
 * its slot (rk_raid_add_member: re-add, or a replace with a disk that was in the array before)
 * carries the log it had when it left; a head that cannot be read says nothing about which of
 * its member's entries are retired; a retired entry's header that its ring position still holds
 * says nothing about the blocks after it, which the ring may have reused for live entries. */
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

#define CHUNK  RK_TEST_PPL_CHUNK
#define DOFF   RK_TEST_PPL_DOFF
#define DSIZE  RK_TEST_PPL_DSIZE
#define LOFF   RK_TEST_PPL_LOFF
#define LSIZE  RK_TEST_PPL_LSIZE
#define LOG_ID 79u
#define BLK    RK_PPL_BLOCK

/* raid5 over 3 (stripe 0: D0 slot 0, D1 slot 1, P slot 2), without the slots in absent. */
static int open_arr(struct rk_dev **mem, uint32_t absent, int mode, struct rk_dev **raid)
{
    return rk_test_ppl_open(RK_LEVEL_RAID5, 3, mem, absent, LOG_ID, mode, raid);
}

/* Stripe 0 (D0, D1) written whole and flushed through the array; shadow gets its content. */
static void write_stripe0(struct rk_dev **mem, uint8_t *shadow, uint64_t seed)
{
    struct rk_dev *raid;
    assert_int_equal(open_arr(mem, 0, 0, &raid), 0);
    rk_test_fill64(shadow, 2 * CHUNK, seed);
    assert_int_equal(rk_dev_write(raid, shadow, 2 * CHUNK, 0, RK_WRITE_FUA), 0);
    assert_int_equal(rk_dev_flush(raid), 0);
    rk_dev_close(raid);
}

/*
 * Slot 2's log after a lap of the ring: head retired 10; ring position 0 still holds the header
 * of entry 5 (retired; its 16 KiB of partial parity reached ring position 20K), because the
 * entry allocated there since (an earlier seq of this session) was not written yet when the
 * power went; entry 12, allocated right after it and written (FUA), is at ring position 4K:
 * stripe 0, chunk 0 modified over [0, 4K), PP = D1 there. Its data write reached D0, not P.
 * Replayed without D1, entry 12 must be found: P = PP ^ D0 gives D1 back. Skipping from entry
 * 5's header over its old length would miss it and rebuild D1 from the stale parity.
 */
static void test_scan_retired_span(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    uint8_t *shadow = rk_buf_alloc(2 * CHUNK), *got = rk_buf_alloc(2 * CHUNK);
    uint8_t *img = rk_buf_alloc(LSIZE), *pp = rk_buf_alloc(CHUNK), *neu = rk_buf_alloc(BLK);
    write_stripe0(mem, shadow, 31);

    memset(img, 0, LSIZE);
    struct rk_ppl_head h = {.id = LOG_ID, .retired = 10};
    rk_ppl_head_encode(&h, img);
    struct rk_ppl_entry old = {.id = LOG_ID, .seq = 5, .row = 3, .lo = 0, .len = CHUNK};
    old.flags = RK_PPL_HAS_P;
    old.nranges = 1;
    old.r[0] = (struct rk_ppl_range){0, 0, CHUNK};
    rk_test_fill64(pp, CHUNK, 32);
    rk_ppl_entry_encode(&old, img + BLK, pp);
    memcpy(img + 2 * BLK, pp, CHUNK); /* its payload: ring [4K, 20K) */
    struct rk_ppl_entry e = {.id = LOG_ID, .seq = 12, .row = 0, .lo = 0, .len = BLK};
    e.flags = RK_PPL_HAS_P;
    e.nranges = 1;
    e.r[0] = (struct rk_ppl_range){0, 0, BLK};
    rk_ppl_entry_encode(&e, img + 2 * BLK, shadow + CHUNK); /* PP: D1 over [0, 4K) */
    memcpy(img + 3 * BLK, shadow + CHUNK, BLK);
    assert_int_equal(rk_dev_write(mem[2], img, LSIZE, LOFF, 0), 0);
    rk_test_fill64(neu, BLK, 33); /* entry 12's data write: D0 only */
    assert_int_equal(rk_dev_write(mem[0], neu, BLK, DOFF, 0), 0);
    memcpy(shadow, neu, BLK);

    assert_int_equal(open_arr(mem, 1u << 1, RK_LOG_REPLAY, &raid), 0);
    assert_int_equal(rk_dev_read(raid, got, 2 * CHUNK, 0), 0);
    assert_memory_equal(got, shadow, 2 * CHUNK); /* D1 rebuilt from the replayed parity */
    rk_dev_close(raid);
    free(shadow);
    free(got);
    free(img);
    free(pp);
    free(neu);
    rk_test_close_members(mem, 3);
}

/*
 * Slot 2's head block is corrupt (a bad checksum: not a crash, the head is one 4 KiB FUA
 * write), and its ring still holds entry 3 of stripe 0, long retired: D0's first 4 KiB
 * written with PP = D1 as it was then. D1 has been written and flushed since (its entry
 * overwritten in the ring). Which entries of slot 2 are live cannot be told: a dirty start
 * without D1 must be refused (with every member there it recomputes from the data). Taken for
 * live, entry 3 would rebuild D1 as it was before: a flushed write lost.
 */
static void test_scan_bad_head(void **state)
{
    (void)state;
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    uint8_t *shadow = rk_buf_alloc(2 * CHUNK), *got = rk_buf_alloc(2 * CHUNK);
    uint8_t *img = rk_buf_alloc(LSIZE), *old = rk_buf_alloc(BLK);
    write_stripe0(mem, shadow, 34);
    memcpy(old, shadow + CHUNK, BLK); /* D1 [0, 4K) before its last write */
    rk_test_fill64(shadow + CHUNK, BLK, 35);
    assert_int_equal(open_arr(mem, 0, 0, &raid), 0);
    assert_int_equal(rk_dev_write(raid, shadow + CHUNK, BLK, CHUNK, 0), 0);
    assert_int_equal(rk_dev_flush(raid), 0);
    rk_dev_close(raid);

    memset(img, 0, LSIZE);
    struct rk_ppl_head h = {.id = LOG_ID, .retired = 10};
    rk_ppl_head_encode(&h, img);
    img[100] ^= 1; /* corrupt: its checksum no longer matches */
    struct rk_ppl_entry e = {.id = LOG_ID, .seq = 3, .row = 0, .lo = 0, .len = BLK};
    e.flags = RK_PPL_HAS_P;
    e.nranges = 1;
    e.r[0] = (struct rk_ppl_range){0, 0, BLK};
    rk_ppl_entry_encode(&e, img + BLK, old);
    memcpy(img + 2 * BLK, old, BLK);
    assert_int_equal(rk_dev_write(mem[2], img, LSIZE, LOFF, 0), 0);

    assert_int_equal(open_arr(mem, 1u << 1, RK_LOG_REPLAY, &raid), -EUCLEAN);
    rk_dev_close(raid);
    assert_int_equal(open_arr(mem, 0, RK_LOG_REPLAY, &raid), 0); /* from the data */
    rk_dev_close(raid);
    assert_int_equal(open_arr(mem, 1u << 1, 0, &raid), 0);
    assert_int_equal(rk_dev_read(raid, got, 2 * CHUNK, 0), 0);
    assert_memory_equal(got, shadow, 2 * CHUNK);
    rk_dev_close(raid);
    free(shadow);
    free(got);
    free(img);
    free(old);
    rk_test_close_members(mem, 3);
}

/*
 * Stripe 0 written and flushed; a partial write of D0's first 4 KiB logs entry X on slot 2 (P's
 * member), and slot 2 fails before any flush retires X. While it is away D1's first 4 KiB is
 * written and flushed (no parity to update, no entry). Slot 2 comes back (the same member:
 * re-add, or a new device over it) and is rebuilt: P = D0 ^ D1 again. Then the power goes, and
 * the array restarts without D1: X must not count as live. Replayed, its partial parity (D1 as
 * it was before it left) would make D1 read its old content: a flushed write lost.
 */
static void run_rejoin(bool same_dev)
{
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    uint8_t *shadow = rk_buf_alloc(2 * CHUNK), *got = rk_buf_alloc(2 * CHUNK);
    write_stripe0(mem, shadow, 41);
    assert_int_equal(open_arr(mem, 0, 0, &raid), 0);
    rk_test_fill64(shadow, BLK, 42); /* X: D0 [0, 4K), logged on slot 2 */
    assert_int_equal(rk_dev_write(raid, shadow, BLK, 0, 0), 0);
    assert_int_equal(rk_raid_fail_slot(raid, 2), 0);
    rk_test_fill64(shadow + CHUNK, BLK, 43); /* D1 [0, 4K) while slot 2 is away */
    assert_int_equal(rk_dev_write(raid, shadow + CHUNK, BLK, CHUNK, 0), 0);
    assert_int_equal(rk_dev_flush(raid), 0);
    struct rk_dev *back = mem[2];
    if (!same_dev) { /* the member opened again: another device over the same content */
        rk_test_mem_members(&back, 1, DOFF + DSIZE, 4096);
        uint8_t *img = rk_buf_alloc(DOFF + DSIZE);
        assert_int_equal(rk_dev_read(mem[2], img, DOFF + DSIZE, 0), 0);
        assert_int_equal(rk_dev_write(back, img, DOFF + DSIZE, 0, 0), 0);
        free(img);
    }
    assert_int_equal(rk_raid_add_member(raid, 2, back), 0);
    assert_int_equal(rk_raid_rebuild_start(raid, 2, 0, 0), 0);
    assert_int_equal(rk_raid_job_wait(raid), 0);
    assert_int_equal(rk_raid_slot_state(raid, 2), RK_SLOT_ACTIVE);
    rk_dev_close(raid); /* the power cut: no flush retires anything */

    struct rk_dev *after[RK_MAX_MEMBERS] = {mem[0], mem[1], back};
    assert_int_equal(open_arr(after, 1u << 1, RK_LOG_REPLAY, &raid), 0); /* nothing live */
    assert_int_equal(rk_dev_read(raid, got, 2 * CHUNK, 0), 0);
    assert_memory_equal(got, shadow, 2 * CHUNK); /* D1 from P: its flushed content */
    rk_dev_close(raid);
    if (!same_dev)
        rk_test_close_members(&back, 1);
    free(shadow);
    free(got);
    rk_test_close_members(mem, 3);
}

static void test_rejoin_same_device(void **state)
{
    (void)state;
    run_rejoin(true);
}

static void test_rejoin_new_device(void **state)
{
    (void)state;
    run_rejoin(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_retired_span),
        cmocka_unit_test(test_scan_bad_head),
        cmocka_unit_test(test_rejoin_same_device),
        cmocka_unit_test(test_rejoin_new_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
