/* Rebuild tests over in-memory members: raid1/raid10 rebuilt while another thread writes (then
 * only the rebuilt member serves), checkpoint + resume, unreadable source ranges, lost source. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define DOFF  (1 * MiB)
#define DSIZE (8 * MiB)

struct fx {
    struct rk_raid_geom g;
    struct rk_dev *mem[RK_MAX_MEMBERS]; /* owned */
    struct rk_dev *use[RK_MAX_MEMBERS]; /* what the engine gets (mem or a fault wrapper) */
    struct rk_dev *fault0;              /* fault wrapper of slot 0 (owns mem[0]) or NULL */
    struct rk_dev *fresh;               /* the replacement */
    struct rk_dev *raid;
    uint8_t *shadow;
    /* events */
    _Atomic uint64_t ckpt;
    _Atomic int nckpt, done_calls, done_result;
};

static void ev_ckpt(void *ctx, uint32_t slot, uint64_t off)
{
    struct fx *f = ctx;
    (void)slot;
    f->ckpt = off;
    f->nckpt++;
}

static void ev_done(void *ctx, uint32_t slot, int result)
{
    struct fx *f = ctx;
    (void)slot;
    f->done_result = result;
    f->done_calls++;
}

static struct fx *fx_open(int level, uint32_t n, bool fault0)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    rk_test_geom(&f->g, level, n, 64 * KiB, DOFF, DSIZE);
    rk_test_mem_members(f->mem, n, DOFF + DSIZE, 512);
    for (uint32_t i = 0; i < n; i++)
        f->use[i] = f->mem[i];
    if (fault0) {
        assert_int_equal(rk_fault_open(f->mem[0], true, &f->fault0), 0);
        f->use[0] = f->fault0;
    }
    assert_int_equal(rk_mem_open(DOFF + DSIZE, 512, &f->fresh), 0);
    struct rk_raid_events ev = {.ctx = f, .rebuild_checkpoint = ev_ckpt, .rebuild_done = ev_done};
    assert_int_equal(rk_raid_open(&f->g, f->use, &ev, &f->raid), 0);
    f->shadow = rk_test_pattern_shadow(f->raid, 7);
    return f;
}

static void fx_close(struct fx *f)
{
    rk_dev_close(f->raid);
    for (uint32_t i = 0; i < f->g.members; i++)
        if (!(i == 0 && f->fault0))
            rk_dev_close(f->mem[i]);
    rk_dev_close(f->fault0);
    rk_dev_close(f->fresh);
    free(f->shadow);
    free(f);
}

static void fx_check(struct fx *f)
{
    uint8_t *got = malloc(f->raid->size);
    assert_non_null(got);
    assert_int_equal(rk_dev_read(f->raid, got, f->raid->size, 0), 0);
    for (uint64_t o = 0; o < f->raid->size; o += 4096)
        if (memcmp(got + o, f->shadow + o, 4096))
            fail_msg("array data differs at offset %llu", (unsigned long long)o);
    free(got);
}

/* Writer thread: random writes (fixed seed) mirrored into the shadow until the job ends. */
struct writer {
    struct fx *f;
    int writes;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct fx *f = w->f;
    uint64_t s = 12345;
    uint8_t *buf = malloc(64 * KiB);
    struct rk_raid_progress p;
    do {
        uint64_t len = (1 + rk_test_xorshift(&s) % 16) * 4 * KiB;
        uint64_t off = rk_test_xorshift(&s) % ((f->raid->size - len) / 4096) * 4096;
        rk_test_fill_xorshift(buf, len, rk_test_xorshift(&s));
        if (rk_dev_write(f->raid, buf, len, off, 0) == 0)
            memcpy(f->shadow + off, buf, len);
        w->writes++;
        rk_raid_progress(f->raid, &p);
    } while (p.state == RK_JOB_RUNNING || w->writes < 20);
    free(buf);
    return NULL;
}

static void rebuild_under_writes(int level, uint32_t n, const uint32_t *fail_after, int nfail)
{
    struct fx *f = fx_open(level, n, false);
    assert_int_equal(rk_raid_fail_slot(f->raid, 1), 0);
    assert_int_equal(rk_raid_add_member(f->raid, 1, f->fresh), 0);
    assert_int_equal(rk_raid_slot_state(f->raid, 1), RK_SLOT_REBUILDING);
    /* A second replace while this one runs is refused. */
    assert_int_equal(rk_raid_rebuild_start(f->raid, 1, 0, 8 * MiB), 0);
    assert_int_equal(rk_raid_add_member(f->raid, 1, f->fresh), -EBUSY);
    assert_int_equal(rk_raid_scrub_start(f->raid, false, 0), -EBUSY);
    struct writer w = {.f = f};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
    assert_int_equal(rk_raid_job_wait(f->raid), 0);
    pthread_join(t, NULL);
    assert_true(w.writes >= 20);
    assert_int_equal(rk_raid_slot_state(f->raid, 1), RK_SLOT_ACTIVE);
    assert_int_equal(f->done_calls, 1);
    assert_int_equal(f->done_result, 0);
    /* Only the rebuilt member (with the others that are left) serves now. */
    for (int i = 0; i < nfail; i++)
        assert_int_equal(rk_raid_fail_slot(f->raid, fail_after[i]), 0);
    fx_check(f);
    fx_close(f);
}

static void test_raid1_rebuild_under_writes(void **state)
{
    (void)state;
    static const uint32_t fails[] = {0};
    rebuild_under_writes(RK_LEVEL_RAID1, 2, fails, 1);
}

static void test_raid10_rebuild_under_writes(void **state)
{
    (void)state;
    /* pairs (0,1) (2,3): with 0 and 2 failed, slot 1 holds half of the array alone. */
    static const uint32_t fails[] = {0, 2};
    rebuild_under_writes(RK_LEVEL_RAID10, 4, fails, 2);
}

static void test_raid10_odd_rebuild(void **state)
{
    (void)state;
    /* 3 members: slot 1 shares chunks with slots 0 and 2; rebuild it, then fail 0 (slot 1 and
     * 2 must then hold everything between them). */
    static const uint32_t fails[] = {0};
    rebuild_under_writes(RK_LEVEL_RAID10, 3, fails, 1);
}

static void test_checkpoint_resume(void **state)
{
    (void)state;
    struct fx *f = fx_open(RK_LEVEL_RAID1, 2, false);
    assert_int_equal(rk_raid_fail_slot(f->raid, 1), 0);
    assert_int_equal(rk_raid_add_member(f->raid, 1, f->fresh), 0);
    assert_int_equal(rk_raid_rebuild_start(f->raid, 1, 0, 2 * MiB), 0);
    usleep(1300 * 1000);
    rk_raid_job_stop(f->raid);
    uint64_t ck = f->ckpt;
    assert_int_equal(f->done_result, -EINTR);
    assert_true(f->nckpt >= 2); /* one timed, one at the stop */
    assert_true(ck > 0 && ck < DSIZE);
    assert_int_equal(ck % f->g.chunk, 0);
    assert_int_equal(rk_raid_slot_state(f->raid, 1), RK_SLOT_REBUILDING);
    /* Everything below the checkpoint is on the new member already. */
    uint8_t *a = malloc(ck), *b = malloc(ck);
    assert_int_equal(rk_dev_read(f->fresh, a, ck, DOFF), 0);
    assert_int_equal(rk_dev_read(f->mem[0], b, ck, DOFF), 0);
    assert_memory_equal(a, b, ck);
    free(a);
    free(b);
    /* Resume from the checkpoint. */
    assert_int_equal(rk_raid_rebuild_start(f->raid, 1, ck, 0), 0);
    struct rk_raid_progress p;
    assert_int_equal(rk_raid_progress(f->raid, &p), 0);
    assert_int_equal(p.start, ck);
    assert_int_equal(rk_raid_job_wait(f->raid), 0);
    assert_int_equal(f->done_result, 0);
    assert_int_equal(rk_raid_slot_state(f->raid, 1), RK_SLOT_ACTIVE);
    assert_int_equal(rk_raid_fail_slot(f->raid, 0), 0);
    fx_check(f);
    fx_close(f);
}

static void test_unreadable_source_range(void **state)
{
    (void)state;
    struct fx *f = fx_open(RK_LEVEL_RAID1, 2, true);
    uint64_t bad = 3 * MiB + 8 * KiB; /* data-area offset of the unreadable 4 KiB */
    assert_int_equal(rk_fault_add_range(f->fault0, RK_FAULT_READ, DOFF + bad, 4096), 0);
    assert_int_equal(rk_raid_fail_slot(f->raid, 1), 0);
    assert_int_equal(rk_raid_add_member(f->raid, 1, f->fresh), 0);
    assert_int_equal(rk_raid_rebuild_start(f->raid, 1, 0, 0), 0);
    assert_int_equal(rk_raid_job_wait(f->raid), 0);
    assert_int_equal(rk_raid_slot_state(f->raid, 1), RK_SLOT_ACTIVE);
    struct rk_raid_bad_range br[4];
    assert_int_equal(rk_raid_bad_ranges(f->raid, br, 4), 1);
    assert_int_equal(br[0].slot, 1);
    assert_int_equal(br[0].member_off, 3 * MiB);
    assert_int_equal(br[0].len, 64 * KiB);
    struct rk_raid_progress p;
    rk_raid_progress(f->raid, &p);
    assert_int_equal(p.bad_ranges, 1);
    /* The unreadable sectors: EIO, never the new member's zeros; many times, same answer. */
    uint8_t buf[4096];
    for (int i = 0; i < 20; i++)
        assert_int_equal(rk_dev_read(f->raid, buf, 4096, bad), -EIO);
    /* The rest of that chunk still reads from the source; the rest of the array is intact. */
    assert_int_equal(rk_dev_read(f->raid, buf, 4096, 3 * MiB), 0);
    assert_memory_equal(buf, f->shadow + 3 * MiB, 4096);
    rk_fault_clear(f->fault0);
    fx_check(f);
    fx_close(f);
}

static void test_source_lost_midway(void **state)
{
    (void)state;
    struct fx *f = fx_open(RK_LEVEL_RAID1, 2, true);
    assert_int_equal(rk_raid_fail_slot(f->raid, 1), 0);
    assert_int_equal(rk_raid_add_member(f->raid, 1, f->fresh), 0);
    assert_int_equal(rk_raid_rebuild_start(f->raid, 1, 0, 8 * MiB), 0);
    usleep(300 * 1000);
    rk_fault_fail_all(f->fault0, true);
    int r = rk_raid_job_wait(f->raid);
    assert_int_equal(r, -ENODEV);
    assert_int_equal(f->done_result, -ENODEV);
    /* Never promoted: the half-built member must not serve. */
    assert_int_equal(rk_raid_slot_state(f->raid, 1), RK_SLOT_REBUILDING);
    uint8_t buf[4096];
    assert_int_equal(rk_dev_read(f->raid, buf, 4096, 0), -EIO);
    assert_int_equal(rk_dev_read(f->raid, buf, 4096, 6 * MiB), -EIO);
    /* Offline: a write that reaches only the half-built member is not acknowledged. */
    memset(buf, 1, sizeof(buf));
    assert_int_equal(rk_dev_write(f->raid, buf, 4096, 0, 0), -EIO);
    assert_int_equal(rk_raid_slot_state(f->raid, 0), RK_SLOT_FAILED);
    fx_close(f);
}

static void test_replace_refusals(void **state)
{
    (void)state;
    struct fx *f = fx_open(RK_LEVEL_RAID1, 2, false);
    struct rk_dev *small;
    assert_int_equal(rk_mem_open(DOFF + DSIZE - 64 * KiB, 512, &small), 0);
    /* Active slot, bad slot, too small, level without redundancy. */
    assert_int_equal(rk_raid_add_member(f->raid, 1, f->fresh), -EBUSY);
    assert_int_equal(rk_raid_add_member(f->raid, 2, f->fresh), -EINVAL);
    assert_int_equal(rk_raid_fail_slot(f->raid, 1), 0);
    assert_int_equal(rk_raid_add_member(f->raid, 1, small), -EINVAL);
    assert_int_equal(rk_raid_rebuild_start(f->raid, 1, 0, 0), -EBUSY); /* not rebuilding */
    assert_int_equal(rk_raid_slot_state(f->raid, 1), RK_SLOT_FAILED);
    rk_dev_close(small);
    fx_close(f);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raid1_rebuild_under_writes),
        cmocka_unit_test(test_raid10_rebuild_under_writes),
        cmocka_unit_test(test_raid10_odd_rebuild),
        cmocka_unit_test(test_checkpoint_resume),
        cmocka_unit_test(test_unreadable_source_range),
        cmocka_unit_test(test_source_lost_midway),
        cmocka_unit_test(test_replace_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
