/* Scrub tests over in-memory members: a chunk corrupted behind the engine's back is counted,
 * repaired from the first live copy, and a second check finds nothing (raid1, raid10); levels
 * without redundancy read everything and count read errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define DOFF  (1 * MiB)
#define DSIZE (4 * MiB)

struct arr {
    struct rk_raid_geom g;
    struct rk_dev *mem[4], *use[4], *fault;
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

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raid1_scrub_repair),
        cmocka_unit_test(test_raid10_scrub_repair),
        cmocka_unit_test(test_scrub_read_errors),
        cmocka_unit_test(test_scrub_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
