/* A member added into a raid5/raid6 slot whose partial parity log head cannot be written: its
 * log is adopted as it joins (r5_ppl_join, raid5_ppl.c; before, by the first write whose parity
 * goes to that slot), the head write fails with EIO and fails the slot, and rk_raid_add_member
 * says so. Writes then complete without that parity. An earlier version retried the adoption
 * forever in the writer (the slot stayed in its entry's slot list); alarm() turns such a
 * livelock into a test failure. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
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

#define CHUNK   (16u * 1024u)
#define DOFF    (1024u * 1024u)
#define DSIZE   (1024u * 1024u)
#define PPL_OFF (512u * 1024u)

/* level over n members; slot p (stripe 0's P) starts missing and gets a member whose log head
 * block fails every write: refused with EIO, slot FAILED; a 4 KiB write into stripe 0 must
 * still complete. */
static void run_adopt_fail(int level, uint32_t n, uint32_t p)
{
    alarm(30); /* the bug was an endless adoption loop: fail instead of hanging the suite */
    struct rk_dev *mem[RK_MAX_MEMBERS], *m[RK_MAX_MEMBERS] = {0}, *raid = NULL, *f = NULL;
    rk_test_mem_members(mem, n, DOFF + DSIZE, 4096);
    for (uint32_t i = 0; i < n; i++)
        m[i] = i == p ? NULL : mem[i];
    struct rk_raid_geom g = {.ppl_offset = PPL_OFF, .ppl_size = 256 * 1024, .ppl_id = 5};
    rk_test_geom(&g, level, n, CHUNK, DOFF, DSIZE);
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
    assert_int_equal(rk_raid_log_start(raid, 0), 0);
    assert_int_equal(rk_fault_open(mem[p], false, &f), 0);
    assert_int_equal(rk_fault_add_range(f, RK_FAULT_WRITE, PPL_OFF, 4096), 0);
    assert_int_equal(rk_raid_add_member(raid, p, f), -EIO);
    assert_int_equal(rk_raid_slot_state(raid, p), RK_SLOT_FAILED);

    uint8_t *buf = rk_buf_alloc(4096), *got = rk_buf_alloc(4096);
    for (int i = 0; i < 3; i++) {
        rk_test_fill64(buf, 4096, (uint64_t)i + 1);
        assert_int_equal(rk_dev_write(raid, buf, 4096, 0, 0), 0);
        assert_int_equal(rk_dev_read(raid, got, 4096, 0), 0);
        assert_memory_equal(got, buf, 4096);
    }
    assert_int_equal(rk_raid_slot_state(raid, p), RK_SLOT_FAILED);
    rk_dev_close(raid);
    rk_dev_close(f);
    rk_test_close_members(mem, n);
    free(buf);
    free(got);
    alarm(0);
}

static void test_ppl_adopt_fail_raid5(void **state)
{
    (void)state;
    run_adopt_fail(RK_LEVEL_RAID5, 3, 2); /* stripe 0: P on slot n-1 */
}

static void test_ppl_adopt_fail_raid6(void **state)
{
    (void)state;
    run_adopt_fail(RK_LEVEL_RAID6, 4, 3); /* stripe 0: P on slot n-1, Q on slot 0 */
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ppl_adopt_fail_raid5),
        cmocka_unit_test(test_ppl_adopt_fail_raid6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
