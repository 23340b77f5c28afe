/* Degraded-mode tests of the RAID engine: member write/read/flush errors through the
 * failing device of rk_test.h, missing slots at open, read repair, and rk_raid_fail_slot's refusal.
 */
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
#include "raidkit/raid.h"
#include "rk_test.h"

/* ---- a failing device (rk_test.h): forwards to a mem device, with switchable errors ---- */

static struct rk_dev *bad_open(uint64_t size)
{
    return rk_test_bad_open(&rk_test_bad_ops, size);
}

static struct rk_test_bad *bad_of(struct rk_dev *dev)
{
    return dev->priv;
}

/* ---- array fixture ---- */

struct events {
    int calls[RK_MAX_MEMBERS];
    int last_error;
};

static int on_failed(void *ctx, uint32_t slot, int error)
{
    struct events *e = ctx;
    e->calls[slot]++;
    e->last_error = error;
    return 0;
}

struct fixture {
    struct rk_raid_geom g;
    struct rk_dev *members[RK_MAX_MEMBERS];
    struct rk_dev *raid;
    struct events ev;
    uint8_t *data;
    uint64_t size;
};

#define DATA_OFF (64 * KiB)

static void fx_members(struct fixture *fx, int level, uint32_t n)
{
    memset(fx, 0, sizeof(*fx));
    rk_test_geom(&fx->g, level, n, 64 * KiB, DATA_OFF, 1 * MiB);
    for (uint32_t i = 0; i < n; i++)
        fx->members[i] = bad_open(DATA_OFF + 1 * MiB);
}

static int fx_start(struct fixture *fx, struct rk_dev **slots)
{
    struct rk_raid_events ev = {.ctx = &fx->ev, .member_failed = on_failed};
    int r = rk_raid_open(&fx->g, slots ? slots : fx->members, &ev, &fx->raid);
    if (r)
        return r;
    fx->size = fx->raid->size;
    fx->data = malloc(fx->size);
    assert_non_null(fx->data);
    return 0;
}

static void fx_open(struct fixture *fx, int level, uint32_t n)
{
    fx_members(fx, level, n);
    assert_int_equal(fx_start(fx, NULL), 0);
}

static void fx_close(struct fixture *fx)
{
    rk_dev_close(fx->raid);
    rk_test_close_members(fx->members, fx->g.members);
    free(fx->data);
}

/* Write a fresh pattern (tagged with gen) over the whole array in uneven pieces. */
static int fx_write_all(struct fixture *fx, unsigned gen)
{
    for (uint64_t i = 0; i < fx->size; i += 8)
        memcpy(fx->data + i, &(uint64_t){i * 2654435761u + gen}, 8);
    uint64_t off = 0, step = 192 * KiB;
    while (off < fx->size) {
        uint64_t len = fx->size - off < step ? fx->size - off : step;
        int r = rk_dev_write(fx->raid, fx->data + off, len, off, 0);
        if (r)
            return r;
        off += len;
    }
    return 0;
}

static void fx_check_all(struct fixture *fx)
{
    uint8_t *buf = malloc(fx->size);
    assert_non_null(buf);
    assert_int_equal(rk_dev_read(fx->raid, buf, fx->size, 0), 0);
    assert_memory_equal(buf, fx->data, fx->size);
    free(buf);
}

/* Read the array chunk by chunk, each chunk reps times in a row, comparing with fx->data. */
static void fx_read_chunks(struct fixture *fx, int reps)
{
    uint8_t buf[64 * KiB];
    for (uint64_t off = 0; off < fx->size; off += fx->g.chunk) {
        for (int i = 0; i < reps; i++) {
            assert_int_equal(rk_dev_read(fx->raid, buf, fx->g.chunk, off), 0);
            assert_memory_equal(buf, fx->data + off, fx->g.chunk);
        }
    }
}

/* Every copy on a slot in mask holds the expected data (read the inner devices directly). */
static void fx_check_members(struct fixture *fx, uint32_t mask)
{
    uint8_t buf[64 * KiB];
    for (uint64_t off = 0; off < fx->size;) {
        struct rk_raid_extent ext[RK_MAX_MEMBERS];
        uint64_t run;
        int n = rk_raid_map(&fx->g, off, ext, RK_MAX_MEMBERS, &run);
        for (int k = 0; k < n; k++) {
            if (!(mask & (1u << ext[k].slot)))
                continue;
            struct rk_dev *inner = bad_of(fx->members[ext[k].slot])->inner;
            assert_int_equal(rk_dev_read(inner, buf, run, DATA_OFF + ext[k].member_off), 0);
            assert_memory_equal(buf, fx->data + off, run);
        }
        off += run;
    }
}

static const struct {
    int level;
    uint32_t n;
} redundant[] = {
    {RK_LEVEL_RAID1, 2},  {RK_LEVEL_RAID1, 3},  {RK_LEVEL_RAID10, 2},
    {RK_LEVEL_RAID10, 3}, {RK_LEVEL_RAID10, 4},
};
#define NREDUNDANT (sizeof(redundant) / sizeof(redundant[0]))

/* A write error fails the slot once, the write still succeeds, data stays intact, and the
 * failed member is never touched again. */
static void test_write_error_each_member(void **state)
{
    for (size_t c = 0; c < NREDUNDANT; c++) {
        for (uint32_t victim = 0; victim < redundant[c].n; victim++) {
            struct fixture fx;
            fx_open(&fx, redundant[c].level, redundant[c].n);
            assert_int_equal(fx_write_all(&fx, 1), 0);
            bad_of(fx.members[victim])->fail_writes = 1;
            assert_int_equal(fx_write_all(&fx, 2), 0);
            for (uint32_t s = 0; s < fx.g.members; s++) {
                assert_int_equal(rk_raid_slot_state(fx.raid, s),
                                 s == victim ? RK_SLOT_FAILED : RK_SLOT_ACTIVE);
                assert_int_equal(fx.ev.calls[s], s == victim ? 1 : 0);
            }
            assert_int_equal(fx.ev.last_error, -EIO);
            int reads = bad_of(fx.members[victim])->reads;
            int writes = bad_of(fx.members[victim])->writes;
            fx_check_all(&fx);
            assert_int_equal(fx_write_all(&fx, 3), 0);
            assert_int_equal(rk_dev_write_zeroes(fx.raid, 128 * KiB, 64 * KiB, 0), 0);
            memset(fx.data + 64 * KiB, 0, 128 * KiB);
            assert_int_equal(rk_dev_flush(fx.raid), 0);
            fx_check_all(&fx);
            fx_check_members(&fx, ~(1u << victim));
            assert_int_equal(bad_of(fx.members[victim])->reads, reads);
            assert_int_equal(bad_of(fx.members[victim])->writes, writes);
            assert_int_equal(fx.ev.calls[victim], 1);
            /* Failing it again is a no-op; another failure would lose data. */
            assert_int_equal(rk_raid_fail_slot(fx.raid, victim), 0);
            assert_int_equal(fx.ev.calls[victim], 1);
            fx_close(&fx);
        }
    }
}

/* A NULL slot at open is missing: never used, data served from the other copies. */
static void test_missing_at_open(void **state)
{
    for (size_t c = 0; c < NREDUNDANT; c++) {
        for (uint32_t victim = 0; victim < redundant[c].n; victim++) {
            struct fixture fx;
            fx_members(&fx, redundant[c].level, redundant[c].n);
            struct rk_dev *slots[RK_MAX_MEMBERS];
            memcpy(slots, fx.members, sizeof(slots));
            slots[victim] = NULL;
            assert_int_equal(fx_start(&fx, slots), 0);
            assert_int_equal(rk_raid_slot_state(fx.raid, victim), RK_SLOT_MISSING);
            assert_int_equal(fx_write_all(&fx, 1), 0);
            assert_int_equal(rk_dev_flush(fx.raid), 0);
            fx_check_all(&fx);
            fx_check_members(&fx, ~(1u << victim));
            assert_int_equal(bad_of(fx.members[victim])->writes, 0);
            assert_int_equal(bad_of(fx.members[victim])->reads, 0);
            assert_int_equal(fx.ev.calls[victim], 0);
            assert_int_equal(rk_raid_fail_slot(fx.raid, victim), 0);
            fx_close(&fx);
        }
    }
}

/* An unreadable range on one copy: the read returns good data from another copy and the bad
 * copy is rewritten; the slot stays active. */
static void test_read_error_repair(void **state)
{
    for (size_t c = 0; c < NREDUNDANT; c++) {
        for (uint32_t victim = 0; victim < redundant[c].n; victim++) {
            struct fixture fx;
            fx_open(&fx, redundant[c].level, redundant[c].n);
            assert_int_equal(fx_write_all(&fx, 1), 0);
            struct rk_test_bad *b = bad_of(fx.members[victim]);
            /* Garbage under the unreadable range, so only a rewrite can make it right. */
            uint8_t junk[8192];
            memset(junk, 0xee, sizeof(junk));
            assert_int_equal(rk_dev_write(b->inner, junk, sizeof(junk), DATA_OFF + 4096, 0), 0);
            b->bad_lo = DATA_OFF + 4096;
            b->bad_hi = DATA_OFF + 4096 + sizeof(junk);
            /* Read each chunk several times in a row: the round-robin tie break among idle
             * mirrors then reaches every copy, the victim's included. */
            fx_read_chunks(&fx, 4);
            fx_check_all(&fx);
            assert_int_equal(b->bad_hi, 0); /* healed by the rewrite */
            fx_check_members(&fx, ~0u);
            for (uint32_t s = 0; s < fx.g.members; s++) {
                assert_int_equal(rk_raid_slot_state(fx.raid, s), RK_SLOT_ACTIVE);
                assert_int_equal(fx.ev.calls[s], 0);
            }
            fx_close(&fx);
        }
    }
}

/* Read error and the rewrite fails too: the slot is failed (once), data still correct. */
static void test_read_error_rewrite_fails(void **state)
{
    for (size_t c = 0; c < NREDUNDANT; c++) {
        uint32_t victim = redundant[c].n - 1;
        struct fixture fx;
        fx_open(&fx, redundant[c].level, redundant[c].n);
        assert_int_equal(fx_write_all(&fx, 1), 0);
        struct rk_test_bad *b = bad_of(fx.members[victim]);
        b->bad_lo = DATA_OFF;
        b->bad_hi = DATA_OFF + 1 * MiB;
        b->fail_writes = 1;
        fx_read_chunks(&fx, 4);
        fx_check_all(&fx);
        assert_int_equal(rk_raid_slot_state(fx.raid, victim), RK_SLOT_FAILED);
        assert_int_equal(fx.ev.calls[victim], 1);
        fx_close(&fx);
    }
}

/* Every copy unreadable: -EIO, and no slot is failed for it. */
static void test_read_error_all_copies(void **state)
{
    struct fixture fx;
    fx_open(&fx, RK_LEVEL_RAID1, 2);
    assert_int_equal(fx_write_all(&fx, 1), 0);
    for (int i = 0; i < 2; i++) {
        bad_of(fx.members[i])->bad_lo = DATA_OFF + 8192;
        bad_of(fx.members[i])->bad_hi = DATA_OFF + 12288;
    }
    uint8_t buf[64 * KiB];
    assert_int_equal(rk_dev_read(fx.raid, buf, sizeof(buf), 0), -EIO);
    assert_int_equal(rk_dev_read(fx.raid, buf, 4096, 64 * KiB), 0);
    assert_int_equal(rk_raid_slot_state(fx.raid, 0), RK_SLOT_ACTIVE);
    assert_int_equal(rk_raid_slot_state(fx.raid, 1), RK_SLOT_ACTIVE);
    fx_close(&fx);
}

/* Writes that reach no copy fail with -EIO. */
static void test_write_error_all_copies(void **state)
{
    struct fixture fx;
    fx_open(&fx, RK_LEVEL_RAID1, 2);
    bad_of(fx.members[0])->fail_writes = 1;
    bad_of(fx.members[1])->fail_writes = 1;
    uint8_t buf[4096] = {1};
    assert_int_equal(rk_dev_write(fx.raid, buf, sizeof(buf), 0, 0), -EIO);
    assert_int_equal(fx.ev.calls[0], 1);
    assert_int_equal(fx.ev.calls[1], 1);
    assert_int_equal(rk_dev_write(fx.raid, buf, sizeof(buf), 0, 0), -EIO);
    assert_int_equal(rk_dev_read(fx.raid, buf, sizeof(buf), 0), -EIO);
    fx_close(&fx);

    /* raid10 over 4: losing both members of one pair fails only that pair's chunks. */
    fx_open(&fx, RK_LEVEL_RAID10, 4);
    bad_of(fx.members[2])->fail_writes = 1;
    bad_of(fx.members[3])->fail_writes = 1;
    assert_int_equal(rk_dev_write(fx.raid, buf, sizeof(buf), 0, 0), 0);           /* chunk 0: 0,1 */
    assert_int_equal(rk_dev_write(fx.raid, buf, sizeof(buf), 64 * KiB, 0), -EIO); /* 2,3 */
    assert_int_equal(rk_raid_slot_state(fx.raid, 2), RK_SLOT_FAILED);
    assert_int_equal(rk_raid_slot_state(fx.raid, 3), RK_SLOT_FAILED);
    fx_close(&fx);
}

/* raid0/linear have no redundancy: a member error is -EIO; a write error is still reported. */
static void test_nonredundant_errors(void **state)
{
    int levels[] = {RK_LEVEL_RAID0, RK_LEVEL_LINEAR};
    for (int li = 0; li < 2; li++) {
        struct fixture fx;
        fx_open(&fx, levels[li], 2);
        assert_int_equal(fx_write_all(&fx, 1), 0);
        bad_of(fx.members[1])->bad_lo = DATA_OFF;
        bad_of(fx.members[1])->bad_hi = DATA_OFF + 4096;
        uint8_t *buf = malloc(fx.size);
        assert_int_equal(rk_dev_read(fx.raid, buf, fx.size, 0), -EIO);
        assert_int_equal(fx.ev.calls[1], 0);
        bad_of(fx.members[0])->fail_writes = 1;
        assert_int_equal(rk_dev_write(fx.raid, buf, 4096, 0, 0), -EIO);
        assert_int_equal(fx.ev.calls[0], 1);
        assert_int_equal(rk_raid_fail_slot(fx.raid, 1), -EBUSY);
        free(buf);
        fx_close(&fx);
    }
}

/* FUA reaches every copy; a failing discard is ignored (advisory) and fails no slot. */
static void test_fua_and_discard(void **state)
{
    struct fixture fx;
    fx_open(&fx, RK_LEVEL_RAID1, 3);
    uint8_t buf[8192];
    memset(buf, 9, sizeof(buf));
    assert_int_equal(rk_dev_write(fx.raid, buf, sizeof(buf), 4096, RK_WRITE_FUA), 0);
    for (uint32_t s = 0; s < 3; s++)
        assert_int_equal(bad_of(fx.members[s])->fua_writes, 1);
    assert_int_equal(rk_dev_write(fx.raid, buf, sizeof(buf), 4096, 0), 0);
    assert_int_equal(bad_of(fx.members[0])->fua_writes, 1);
    bad_of(fx.members[1])->fail_writes = 1;
    assert_int_equal(rk_dev_discard(fx.raid, 128 * KiB, 0), 0);
    for (uint32_t s = 0; s < 3; s++) {
        assert_int_equal(bad_of(fx.members[s])->discards, 1);
        assert_int_equal(rk_raid_slot_state(fx.raid, s), RK_SLOT_ACTIVE);
    }
    assert_int_equal(fx.ev.calls[1], 0);
    fx_close(&fx);
}

static void test_flush_error(void **state)
{
    struct fixture fx;
    fx_open(&fx, RK_LEVEL_RAID1, 3);
    bad_of(fx.members[1])->fail_flush = 1;
    assert_int_equal(rk_dev_flush(fx.raid), 0);
    assert_int_equal(rk_raid_slot_state(fx.raid, 1), RK_SLOT_FAILED);
    assert_int_equal(fx.ev.calls[1], 1);
    assert_int_equal(rk_dev_flush(fx.raid), 0);
    assert_int_equal(fx.ev.calls[1], 1);
    fx_close(&fx);
}

/* Open refuses with -ENODEV when the missing slots leave data unreachable. */
static void test_enodev(void **state)
{
    static const struct {
        int level;
        uint32_t n;
        uint32_t missing; /* mask */
        int expect;
    } cases[] = {
        {RK_LEVEL_RAID1, 2, 0x3, -ENODEV},  {RK_LEVEL_RAID1, 3, 0x3, 0},
        {RK_LEVEL_RAID1, 3, 0x7, -ENODEV},  {RK_LEVEL_RAID10, 2, 0x1, 0},
        {RK_LEVEL_RAID10, 2, 0x3, -ENODEV}, {RK_LEVEL_RAID10, 3, 0x5, -ENODEV},
        {RK_LEVEL_RAID10, 4, 0x5, 0},       {RK_LEVEL_RAID10, 4, 0x3, -ENODEV},
        {RK_LEVEL_RAID10, 4, 0x6, 0},       {RK_LEVEL_RAID10, 4, 0x9, 0},
        {RK_LEVEL_RAID10, 5, 0x5, 0},       {RK_LEVEL_RAID10, 5, 0x11, -ENODEV},
        {RK_LEVEL_RAID10, 6, 0x15, 0},      {RK_LEVEL_RAID0, 2, 0x2, -ENODEV},
        {RK_LEVEL_LINEAR, 3, 0x4, -ENODEV},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct fixture fx;
        fx_members(&fx, cases[c].level, cases[c].n);
        struct rk_dev *slots[RK_MAX_MEMBERS] = {0};
        for (uint32_t i = 0; i < cases[c].n; i++)
            slots[i] = (cases[c].missing & (1u << i)) ? NULL : fx.members[i];
        int r = fx_start(&fx, slots);
        if (r != cases[c].expect)
            print_error("case %zu: got %d\n", c, r);
        assert_int_equal(r, cases[c].expect);
        if (!r) {
            assert_int_equal(fx_write_all(&fx, 5), 0);
            fx_check_all(&fx);
        }
        fx_close(&fx);
    }
}

static void test_fail_slot(void **state)
{
    struct fixture fx;
    fx_open(&fx, RK_LEVEL_RAID1, 2);
    assert_int_equal(fx_write_all(&fx, 1), 0);
    assert_int_equal(rk_raid_fail_slot(fx.raid, 0), 0);
    assert_int_equal(fx.ev.calls[0], 1);
    assert_int_equal(rk_raid_fail_slot(fx.raid, 1), -EBUSY);
    assert_int_equal(rk_raid_slot_state(fx.raid, 1), RK_SLOT_ACTIVE);
    assert_int_equal(fx.ev.calls[1], 0);
    assert_int_equal(rk_raid_fail_slot(fx.raid, 0), 0);
    assert_int_equal(fx.ev.calls[0], 1);
    assert_int_equal(rk_raid_fail_slot(fx.raid, 2), -EINVAL);
    fx_check_all(&fx);
    fx_close(&fx);

    fx_open(&fx, RK_LEVEL_RAID10, 4);
    assert_int_equal(fx_write_all(&fx, 1), 0);
    assert_int_equal(rk_raid_fail_slot(fx.raid, 0), 0);
    assert_int_equal(rk_raid_fail_slot(fx.raid, 1), -EBUSY);
    assert_int_equal(rk_raid_fail_slot(fx.raid, 3), 0);
    assert_int_equal(rk_raid_fail_slot(fx.raid, 2), -EBUSY);
    fx_check_all(&fx);
    fx_check_members(&fx, 0x6);
    fx_close(&fx);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_error_each_member),
        cmocka_unit_test(test_missing_at_open),
        cmocka_unit_test(test_read_error_repair),
        cmocka_unit_test(test_read_error_rewrite_fails),
        cmocka_unit_test(test_read_error_all_copies),
        cmocka_unit_test(test_write_error_all_copies),
        cmocka_unit_test(test_nonredundant_errors),
        cmocka_unit_test(test_fua_and_discard),
        cmocka_unit_test(test_flush_error),
        cmocka_unit_test(test_enodev),
        cmocka_unit_test(test_fail_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
