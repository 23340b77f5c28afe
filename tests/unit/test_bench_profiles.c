/* Calibration of the bench device profiles at queue depth 1 (the seed003 suite's reading of seed
 * 003): the SSD profile bench/profiles/mushkin-ssd-2015.ini against the seed's "120GB Mushkin
 * SSD" row and the built-in hdd-7200 against its "Seagate ST500DM002-1BD14" row, through the same
 * model functions the emul member uses, on a fake clock (docs/BENCHMARKS.md "Calibration"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "member/emul_model.h"
#include "raidkit/emul.h"

#define SEC 1000000000ull

struct qd_loop {
    int to_issue;      /* completions not yet answered by a new request */
    uint64_t bs, done; /* bytes completed inside the measured window */
    uint64_t now, from;
};

static void qd_done(void *arg, void *ctx)
{
    (void)ctx;
    struct qd_loop *l = arg;
    l->to_issue++;
    if (l->now >= l->from)
        l->done += l->bs;
}

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void load(const char *name_or_file, struct rk_emul_params *p)
{
    char path[512], err[256];
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    if (strstr(name_or_file, ".ini")) {
        snprintf(path, sizeof(path), "%s/bench/profiles/%s", src ? src : ".", name_or_file);
        name_or_file = path;
    }
    if (rk_emul_profile_load(name_or_file, p, err, sizeof(err)))
        fail_msg("%s: %s", name_or_file, err);
}

/* MB/s (10^6) of fio with `depth` requests in flight over a 1 GiB file: 2 s ramp, `secs` s. */
static double run_qd(const char *prof, int dir, bool random, int depth, int secs)
{
    struct rk_emul_params p;
    load(prof, &p);
    static struct emul_model m;
    assert_int_equal(emul_model_init(&m, &p, p.capacity ? p.capacity : 2ull << 30), 0);
    const uint64_t bs = 4096, blocks = (1ull << 30) / bs, ramp = 2 * SEC;
    const uint64_t end = ramp + (uint64_t)secs * SEC;
    uint64_t rs = 7, next = 0;
    struct qd_loop l = {.to_issue = depth, .bs = bs, .from = UINT64_MAX};
    static struct emul_hq h;
    memset(&h, 0, sizeof(h));
    uint64_t slot[64] = {0}; /* SSD: completion time of each in-flight request */
    for (;;) {
        if (p.kind == RK_EMUL_SSD) {
            int k = 0;
            for (int i = 1; i < depth; i++)
                k = slot[i] < slot[k] ? i : k;
            if (slot[k] > end)
                break;
            if (slot[k] >= ramp)
                l.done += bs;
            slot[k] = emul_ssd_submit(&m, dir, bs, slot[k]);
            continue;
        }
        if (l.to_issue > 0) {
            l.to_issue--;
            uint64_t off = random ? mix(&rs) % blocks * bs : next;
            next = (next + bs) % (blocks * bs);
            struct emul_hreq r = {.off = off, .len = bs, .dir = (uint8_t)dir};
            assert_int_equal(emul_hq_add(&m, &h, &r, false, NULL, l.now, qd_done, &l), 0);
            continue;
        }
        l.from = ramp;
        if (!h.busy || h.busy_until > end)
            break;
        l.now = h.busy_until;
        emul_hq_advance(&m, &h, l.now, qd_done, &l);
    }
    return (double)l.done / secs / 1e6;
}

static double row(const char *prof, const char *what, double got, double seed)
{
    double e = (got - seed) / seed * 100;
    printf("calibration QD1 %-22s %-9s model %7.2f MB/s  seed %7.2f  error %+6.1f%%\n", prof, what,
           got, seed, e);
    return e;
}

static void test_mushkin_qd1(void **state)
{
    (void)state;
    const char *f = "mushkin-ssd-2015.ini";
    /* Seed 003, 120GB Mushkin SSD, fio 2.1.13 4K direct. */
    assert_true(fabs(row(f, "randread", run_qd(f, 0, true, 1, 10), 48.09)) <= 10);
    assert_true(fabs(row(f, "randwrite", run_qd(f, 1, true, 1, 10), 139.76)) <= 10);
    assert_true(fabs(row(f, "write", run_qd(f, 1, false, 1, 10), 144.11)) <= 10);
    /* The SSD model has one read service time for random and sequential reads: the seed's
     * sequential read (84.88, the drive's read-ahead) is the documented miss. */
    double e = row(f, "read", run_qd(f, 0, false, 1, 10), 84.88);
    assert_true(e < -40 && e > -46);
    /* Deeper queues (uncalibrated): the IOPS caps rule. */
    printf("QD64 %s randread %.2f randwrite %.2f MB/s\n", f, run_qd(f, 0, true, 64, 5),
           run_qd(f, 1, true, 64, 5));
}

static void test_hdd7200_qd1(void **state)
{
    (void)state;
    /* Seed 003, Seagate ST500DM002-1BD14; hdd-7200 was calibrated at QD64 (test_emul). */
    assert_true(fabs(row("hdd-7200", "randwrite", run_qd("hdd-7200", 1, true, 1, 20), 1.47)) <= 10);
    assert_true(fabs(row("hdd-7200", "read", run_qd("hdd-7200", 0, false, 1, 20), 2.75)) <= 10);
    assert_true(fabs(row("hdd-7200", "write", run_qd("hdd-7200", 1, false, 1, 20), 107.0)) <= 10);
    printf("hdd-7200 QD1 randread %.2f MB/s (no seed row)\n", run_qd("hdd-7200", 0, true, 1, 20));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mushkin_qd1),
        cmocka_unit_test(test_hdd7200_qd1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
