/* Scrub tests over in-memory members: a chunk corrupted behind the engine's back is counted,
 * repaired (raid1 by majority, raid10 from the first copy, raid6 by locating the bad chunk from
 * P and Q), a degraded raid6 still checks the parity it has, every mismatch is located, and a
 * second check finds nothing; levels without redundancy read everything and count read
 * errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "raid/raid_int.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define DOFF  (1 * MiB)
#define DSIZE (4 * MiB)

struct arr {
    struct rk_raid_geom g;
    struct rk_dev *mem[5], *use[5], *fault;
    struct rk_dev *raid;
    uint8_t *data;
};

static void arr_open(struct arr *a, int level, uint32_t n)
{
    memset(a, 0, sizeof(*a));
    rk_test_geom(&a->g, level, n, 64 * KiB, DOFF, DSIZE);
    rk_test_mem_members(a->mem, n, DOFF + DSIZE, 512);
    for (uint32_t i = 0; i < n; i++)
        a->use[i] = a->mem[i];
    assert_int_equal(rk_fault_open(a->mem[n - 1], false, &a->fault), 0);
    a->use[n - 1] = a->fault;
    assert_int_equal(rk_raid_open(&a->g, a->use, NULL, &a->raid), 0);
    a->data = malloc(a->raid->size);
    for (uint64_t i = 0; i < a->raid->size; i++)
        a->data[i] = (uint8_t)(i * 131 + (i >> 12));
    assert_int_equal(rk_dev_write(a->raid, a->data, a->raid->size, 0, 0), 0);
}

static void arr_close(struct arr *a)
{
    rk_dev_close(a->raid);
    rk_dev_close(a->fault);
    rk_test_close_members(a->mem, a->g.members);
    free(a->data);
}

static void scrub(struct arr *a, bool repair, uint64_t want_mm, uint64_t want_err)
{
    struct rk_raid_progress p;
    assert_int_equal(rk_raid_scrub_start(a->raid, repair, 0), 0);
    assert_int_equal(rk_raid_job_wait(a->raid), 0);
    assert_int_equal(rk_raid_progress(a->raid, &p), 0);
    assert_true(p.scrubbed);
    assert_int_equal(p.last_mismatches, want_mm);
    assert_int_equal(p.last_repaired, repair ? want_mm : 0);
    assert_int_equal(p.last_errors, want_err);
    assert_true(p.last_finished > 0);
}

/* Corrupt 4 KiB of slot's data area at moff behind the engine's back (byte v). */
static void corrupt_with(struct arr *a, uint32_t slot, uint64_t moff, uint8_t v)
{
    uint8_t junk[4096];
    memset(junk, v, sizeof(junk));
    assert_int_equal(rk_dev_write(a->mem[slot], junk, sizeof(junk), DOFF + moff, 0), 0);
}

/* Corrupt 4 KiB of slot's data area at moff behind the engine's back. */
static void corrupt(struct arr *a, uint32_t slot, uint64_t moff)
{
    uint8_t junk[4096];
    memset(junk, 0x5a, sizeof(junk));
    assert_int_equal(rk_dev_write(a->mem[slot], junk, sizeof(junk), DOFF + moff, 0), 0);
}

static void test_raid1_scrub_repair(void **state)
{
    (void)state;
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID1, 3);
    scrub(&a, false, 0, 0);
    corrupt(&a, 1, 2 * MiB + 4 * KiB);
    corrupt(&a, 2, 1 * MiB); /* another chunk */
    scrub(&a, false, 2, 0);
    scrub(&a, true, 2, 0);
    scrub(&a, false, 0, 0);
    /* Repair wrote the first copy over the others: each member holds the data again. */
    uint8_t *buf = malloc(DSIZE);
    for (uint32_t s = 0; s < 3; s++) {
        assert_int_equal(rk_dev_read(a.mem[s], buf, DSIZE, DOFF), 0);
        assert_memory_equal(buf, a.data, DSIZE);
    }
    free(buf);
    arr_close(&a);
}

static void test_raid10_scrub_repair(void **state)
{
    (void)state;
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID10, 3);
    scrub(&a, false, 0, 0);
    /* Row 32 of slot 2 is position 98: chunk 49, copies on slots 2 and 0. The reference is
     * slot 0 (slot order), so repair must fix slot 2, not copy the damage over. */
    corrupt(&a, 2, 32 * 64 * KiB);
    scrub(&a, false, 1, 0);
    scrub(&a, true, 1, 0);
    scrub(&a, false, 0, 0);
    uint8_t *buf = malloc(a.raid->size);
    assert_int_equal(rk_raid_fail_slot(a.raid, 0), 0);
    assert_int_equal(rk_dev_read(a.raid, buf, a.raid->size, 0), 0);
    assert_memory_equal(buf, a.data, a.raid->size);
    free(buf);
    arr_close(&a);
}

static void test_scrub_read_errors(void **state)
{
    (void)state;
    struct arr a;
    /* raid0: nothing to compare; an unreadable range is counted, nothing else. */
    arr_open(&a, RK_LEVEL_RAID0, 2);
    scrub(&a, false, 0, 0);
    assert_int_equal(rk_fault_add_range(a.fault, RK_FAULT_READ, DOFF + 2 * MiB, 4096), 0);
    scrub(&a, false, 0, 1);
    arr_close(&a);
    /* raid1: a copy that cannot be read is rewritten by repair (not a mismatch). */
    arr_open(&a, RK_LEVEL_RAID1, 2);
    assert_int_equal(rk_fault_add_range(a.fault, RK_FAULT_READ, DOFF + 2 * MiB, 4096), 0);
    scrub(&a, false, 0, 0);
    arr_close(&a);
}

static void test_scrub_busy(void **state)
{
    (void)state;
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID1, 2);
    assert_int_equal(rk_raid_scrub_start(a.raid, false, 1 * MiB), 0);
    assert_int_equal(rk_raid_scrub_start(a.raid, false, 0), -EBUSY);
    rk_raid_job_stop(a.raid);
    struct rk_raid_progress p;
    rk_raid_progress(a.raid, &p);
    assert_int_equal(p.state, RK_JOB_FAILED);
    assert_int_equal(p.error, -EINTR);
    assert_false(p.scrubbed);
    arr_close(&a);
}

/* The only mismatch location of the last scrub. */
static struct rk_raid_mismatch one_mismatch(struct arr *a)
{
    struct rk_raid_mismatch m[RK_RAID_MISMATCH_MAX];
    assert_int_equal(rk_raid_scrub_mismatches(a->raid, true, m, RK_RAID_MISMATCH_MAX), 1);
    return m[0];
}

/* Scrub and check the last result's counters (repaired given, not implied). */
static void scrub_counts(struct arr *a, bool repair, uint64_t want_mm, uint64_t want_rep)
{
    struct rk_raid_progress p;
    assert_int_equal(rk_raid_scrub_start(a->raid, repair, 0), 0);
    assert_int_equal(rk_raid_job_wait(a->raid), 0);
    assert_int_equal(rk_raid_progress(a->raid, &p), 0);
    assert_int_equal(p.last_mismatches, want_mm);
    assert_int_equal(p.last_repaired, want_rep);
}

static void slot_read(struct arr *a, uint32_t slot, uint64_t moff, uint64_t len, uint8_t *out)
{
    assert_int_equal(rk_dev_read(a->mem[slot], out, len, DOFF + moff), 0);
}

/* raid6 of 5, 64 KiB chunks: stripe 1 has P on slot 3, Q on slot 4 and data chunk 0 on slot 0
 * (array chunk 3), data 1 on slot 1. */
#define R6_ROW 1
#define R6_OFF (R6_ROW * 64 * KiB + 8 * KiB)

/* "degraded raid6 scrub finds a corrupt chunk": with Q, P or a data chunk gone, the parity
 * left still shows the corrupted data chunk. A user's repair cannot tell which chunk is wrong
 * and leaves the stripe as it is (rewriting the parity from the corrupted data would make the
 * corruption consistent: P and Q could not locate it once the member is back); a resync (its
 * mismatches are interrupted writes) rewrites the parity compared from the data, as md's raid6
 * sync does, and leaves the data. */
static void test_raid6_degraded_scrub(void **state)
{
    (void)state;
    static const uint32_t gone[] = {4, 3, 1}; /* Q, P, data 1 of stripe 1 */
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
        struct arr a;
        arr_open(&a, RK_LEVEL_RAID6, 5);
        corrupt(&a, 0, R6_OFF);
        assert_int_equal(rk_raid_fail_slot(a.raid, gone[i]), 0);
        scrub_counts(&a, false, 1, 0);
        struct rk_raid_mismatch m = one_mismatch(&a);
        assert_int_equal(m.kind, RK_MM_DEGRADED);
        assert_int_equal(m.fixed, RK_FIX_NONE);
        uint32_t par = gone[i] == 4 ? 3 : 4; /* the parity compared */
        assert_int_equal(m.slot, par);
        assert_int_equal(m.member_off, R6_OFF);
        assert_int_equal(m.len, 4096);
        uint8_t before[4096], after[4096], pbefore[4096], pafter[4096];
        slot_read(&a, 0, R6_OFF, sizeof(before), before);
        slot_read(&a, par, R6_OFF, sizeof(pbefore), pbefore);
        scrub_counts(&a, true, 1, 0); /* scrub --repair: found, not repaired */
        assert_int_equal(one_mismatch(&a).fixed, RK_FIX_NONE);
        slot_read(&a, par, R6_OFF, sizeof(pafter), pafter);
        assert_memory_equal(pbefore, pafter, sizeof(pafter));
        scrub_counts(&a, false, 1, 0); /* still there for when the member is back */
        /* The resync's mode rewrites the parity compared; the data is untouched. */
        struct raid_priv *r = a.raid->priv;
        uint64_t mm = 0;
        assert_int_equal(r->l.lvl->scrub(r, R6_ROW * 64 * KiB, 64 * KiB,
                                         RAID_SCRUB_REPAIR | RAID_SCRUB_RESYNC, &mm),
                         0);
        assert_int_equal(mm, 1);
        slot_read(&a, 0, R6_OFF, sizeof(after), after);
        assert_memory_equal(before, after, sizeof(after));
        scrub_counts(&a, false, 0, 0);
        arr_close(&a);
    }
}

/* "raid6 repair fixes the right chunk": a corrupted data chunk is located from P and Q and
 * rewritten (parity untouched); a corrupted P or Q is rewritten alone; two corrupted chunks
 * in one stripe cannot be located: parity is rewritten from the data, and said so. */
static void test_raid6_repair_locates(void **state)
{
    (void)state;
    struct arr a;
    uint8_t *p0 = malloc(64 * KiB), *q0 = malloc(64 * KiB), *buf = malloc(64 * KiB);
    arr_open(&a, RK_LEVEL_RAID6, 5);
    slot_read(&a, 3, R6_ROW * 64 * KiB, 64 * KiB, p0);
    slot_read(&a, 4, R6_ROW * 64 * KiB, 64 * KiB, q0);
    corrupt(&a, 0, R6_OFF);
    scrub_counts(&a, false, 1, 0);
    struct rk_raid_mismatch m = one_mismatch(&a);
    assert_int_equal(m.kind, RK_MM_LOCATED);
    assert_int_equal(m.fixed, RK_FIX_NONE);
    assert_int_equal(m.slot, 0);
    assert_int_equal(m.member_off, R6_OFF);
    assert_int_equal(m.len, 4096);
    assert_int_equal(m.array_off, 3 * 64 * KiB + 8 * KiB);
    scrub_counts(&a, true, 1, 1);
    m = one_mismatch(&a);
    assert_int_equal(m.slot, 0);
    assert_int_equal(m.fixed, RK_FIX_DATA);
    slot_read(&a, 0, R6_OFF, 4096, buf);
    assert_memory_equal(buf, a.data + 3 * 64 * KiB + 8 * KiB, 4096);
    slot_read(&a, 3, R6_ROW * 64 * KiB, 64 * KiB, buf);
    assert_memory_equal(buf, p0, 64 * KiB);
    slot_read(&a, 4, R6_ROW * 64 * KiB, 64 * KiB, buf);
    assert_memory_equal(buf, q0, 64 * KiB);
    scrub_counts(&a, false, 0, 0);

    /* P alone, then Q alone. */
    for (uint32_t ps = 3; ps <= 4; ps++) {
        corrupt(&a, ps, R6_OFF);
        scrub_counts(&a, true, 1, 1);
        m = one_mismatch(&a);
        assert_int_equal(m.kind, RK_MM_LOCATED);
        assert_int_equal(m.fixed, RK_FIX_PARITY);
        assert_int_equal(m.slot, ps);
        assert_int_equal(m.array_off, RK_RAID_NO_ARRAY_OFF);
        slot_read(&a, ps, R6_ROW * 64 * KiB, 64 * KiB, buf);
        assert_memory_equal(buf, ps == 3 ? p0 : q0, 64 * KiB);
    }

    /* Two data chunks, different sectors of the stripe: each located and fixed on its own. */
    corrupt(&a, 0, R6_OFF);
    corrupt(&a, 1, R6_OFF + 16 * KiB);
    scrub_counts(&a, true, 1, 1);
    struct rk_raid_mismatch two[RK_RAID_MISMATCH_MAX];
    assert_int_equal(rk_raid_scrub_mismatches(a.raid, true, two, RK_RAID_MISMATCH_MAX), 2);
    assert_int_equal(two[0].slot, 0);
    assert_int_equal(two[0].fixed, RK_FIX_DATA);
    assert_int_equal(two[1].slot, 1);
    assert_int_equal(two[1].member_off, R6_OFF + 16 * KiB);
    assert_int_equal(two[1].array_off, 4 * 64 * KiB + 24 * KiB);
    assert_int_equal(two[1].fixed, RK_FIX_DATA);
    slot_read(&a, 1, R6_OFF + 16 * KiB, 4096, buf);
    assert_memory_equal(buf, a.data + 4 * 64 * KiB + 24 * KiB, 4096);
    slot_read(&a, 3, R6_ROW * 64 * KiB, 64 * KiB, buf);
    assert_memory_equal(buf, p0, 64 * KiB);
    scrub_counts(&a, false, 0, 0);

    /* Two data chunks, same sector: unlocated, parity follows the data. */
    corrupt_with(&a, 0, R6_OFF, 0x11);
    corrupt_with(&a, 1, R6_OFF, 0x77);
    scrub_counts(&a, true, 1, 1);
    m = one_mismatch(&a);
    assert_int_equal(m.kind, RK_MM_UNLOCATED);
    assert_int_equal(m.fixed, RK_FIX_PARITY);
    scrub_counts(&a, false, 0, 0);
    free(p0);
    free(q0);
    free(buf);
    arr_close(&a);
}

/* raid1 with 3 copies repairs by majority, even when the first copy is the bad one; three
 * different copies are a tie (the first copy wins); 2 copies: unknown which one is right. */
static void test_raid1_majority(void **state)
{
    (void)state;
    struct arr a;
    uint8_t *buf = malloc(DSIZE);
    arr_open(&a, RK_LEVEL_RAID1, 3);
    corrupt(&a, 0, 1 * MiB);
    scrub_counts(&a, true, 1, 1);
    struct rk_raid_mismatch m = one_mismatch(&a);
    assert_int_equal(m.kind, RK_MM_MAJORITY);
    assert_int_equal(m.fixed, RK_FIX_COPY);
    assert_int_equal(m.slot, 0);
    assert_int_equal(m.array_off, 1 * MiB);
    for (uint32_t s = 0; s < 3; s++) {
        slot_read(&a, s, 0, DSIZE, buf);
        assert_memory_equal(buf, a.data, DSIZE);
    }
    corrupt_with(&a, 1, 2 * MiB, 0x11);
    corrupt_with(&a, 2, 2 * MiB, 0x22);
    scrub_counts(&a, true, 1, 1);
    m = one_mismatch(&a);
    assert_int_equal(m.kind, RK_MM_TIE);
    assert_int_equal(m.slot, 1);
    for (uint32_t s = 0; s < 3; s++) {
        slot_read(&a, s, 0, DSIZE, buf);
        assert_memory_equal(buf, a.data, DSIZE);
    }
    arr_close(&a);

    arr_open(&a, RK_LEVEL_RAID1, 2);
    corrupt(&a, 1, 1 * MiB);
    scrub_counts(&a, false, 1, 0);
    m = one_mismatch(&a);
    assert_int_equal(m.kind, RK_MM_UNKNOWN_COPY);
    assert_int_equal(m.slot, 1);
    assert_int_equal(m.len, 64 * KiB);
    arr_close(&a);
    free(buf);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raid1_scrub_repair),   cmocka_unit_test(test_raid10_scrub_repair),
        cmocka_unit_test(test_scrub_read_errors),    cmocka_unit_test(test_scrub_busy),
        cmocka_unit_test(test_raid6_degraded_scrub), cmocka_unit_test(test_raid6_repair_locates),
        cmocka_unit_test(test_raid1_majority),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
