/* raid5/raid6 whose members all stopped answering (found by bench/torture/rk_torture, a power
 * cut of every member): no write may be acknowledged once more slots are gone than the parity
 * covers. Before the fix, the write after the one that failed the last slots returned 0 when the
 * slots of its data and parity were all failed (nothing reached a member). A write that needs
 * room in a full partial parity log after the members died must fail too: the log ring is
 * filled to every level from empty to past its capacity (seven 8 KiB entries) before the members
 * die, and alarm() turns a livelock (the retried reclaim of rk_torture's raid6 hang) into a
 * failure. Writes fail with every member request failing, and with only member writes failing. */
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

#define CHUNK (16u * 1024u)
#define DOFF  (1024u * 1024u)
#define DSIZE (1024u * 1024u)
#define PPL   (64u * 1024u) /* head + a 60 KiB ring: seven 8 KiB entries of 4 KiB writes */

static void run_dead(int level, uint32_t n)
{
    alarm(60); /* the bug was a livelock: fail the test instead of hanging the suite */
    for (int step = 0; step < 2 * 25; step++) {
        int mode = step % 2, fill = step / 2;
        struct rk_dev *mem[RK_MAX_MEMBERS], *f[RK_MAX_MEMBERS] = {0}, *raid = NULL;
        rk_test_mem_members(mem, n, DOFF + DSIZE, 4096);
        for (uint32_t i = 0; i < n; i++)
            assert_int_equal(rk_fault_open(mem[i], false, &f[i]), 0);
        struct rk_raid_geom g = {.ppl_offset = 512 * 1024, .ppl_size = PPL, .ppl_id = 9};
        rk_test_geom(&g, level, n, CHUNK, DOFF, DSIZE);
        assert_int_equal(rk_raid_open(&g, f, NULL, &raid), 0);
        assert_int_equal(rk_raid_log_start(raid, false), 0);
        uint8_t *buf = rk_buf_alloc(4096);
        memset(buf, 0x5a, 4096);
        /* The same block again and again: its stripe stays cached, so a write needs no read
         * and goes straight to the log. */
        for (int i = 0; i < fill; i++)
            assert_int_equal(rk_dev_write(raid, buf, 4096, 0, 0), 0);
        /* Every member write fails from now on (reads still work, so nothing stops a write
         * before it needs room in the log); fail_all: every request. */
        for (uint32_t i = 0; i < n; i++)
            if (mode)
                rk_fault_fail_all(f[i], true);
            else
                assert_int_equal(rk_fault_add_range(f[i], RK_FAULT_WRITE, 0, DOFF + DSIZE), 0);
        for (int i = 0; i < 3; i++)
            assert_int_not_equal(rk_dev_write(raid, buf, 4096, 0, 0), 0);
        rk_dev_close(raid);
        for (uint32_t i = 0; i < n; i++)
            rk_dev_close(f[i]);
        rk_test_close_members(mem, n);
        free(buf);
    }
    alarm(0);
}

static void test_dead_members_raid5(void **state)
{
    (void)state;
    run_dead(RK_LEVEL_RAID5, 3);
}

static void test_dead_members_raid6(void **state)
{
    (void)state;
    run_dead(RK_LEVEL_RAID6, 4);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_members_raid5),
        cmocka_unit_test(test_dead_members_raid6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
