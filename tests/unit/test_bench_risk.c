/* Risk formulas (src/bench/risk.c) against worked examples computed by hand (docs/BENCHMARKS.md
 * "Risk"): the classic MTTDL approximations when rebuilds are short, and the unrecoverable-read
 * exposure of a RAID 5 rebuild that made "RAID 5 is dead" a saying. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bench/risk.h"

#define TB 1e12

static void assert_rel(double got, double want, double tol)
{
    if (!(fabs(got - want) <= tol * fabs(want))) {
        print_error("got %.6g want %.6g (rel tol %g)\n", got, want, tol);
        fail();
    }
}

/* 4 x 2 TB, AFR 2 %, URE 1e-14, rebuild 100 MB/s. lambda = -ln(0.98)/8766 = 2.30467e-6 /h;
 * T = 2e12 / 1e8 s = 5.5556 h. */
static const struct bench_risk_params disks = {
    .member_bytes = 2 * TB, .afr = 0.02, .ure_per_bit = 1e-14, .rebuild_bps = 100e6};

static void test_raid5_worked(void **state)
{
    (void)state;
    struct bench_risk_shape s;
    struct bench_risk k;
    assert_int_equal(bench_risk_shape_of("raid5", 4, disks.member_bytes, &s), 0);
    assert_int_equal(s.tolerate, 1);
    assert_int_equal(s.at_risk[0], 3);
    assert_int_equal(bench_risk_compute(&s, &disks, &k), 0);
    double lambda = 2.30467e-6, t = 5.5556;
    /* Second failure: 1 - exp(-3 lambda T) = 3.8410e-5. URE: 3 members x 2 TB x 8 bits = 4.8e13
     * bits, 1 - exp(-0.48) = 0.38122. */
    double q = 3.8410e-5, ure = 0.38122, loss = 1 - (1 - q) * (1 - ure);
    assert_rel(k.rebuild_hours, t, 1e-4);
    assert_rel(k.p_loss_rebuild, loss, 1e-4);
    assert_rel(k.mttdl_hours, 1 / (4 * lambda * loss), 1e-4); /* 2.845e5 h = 32.5 years */
    assert_rel(k.mttdl_hours / RISK_HOURS_YEAR, 32.46, 2e-3);

    /* Without read errors, the textbook MTTDL = mu / (n (n-1) lambda^2) within 0.01 %. */
    struct bench_risk_params no_ure = disks;
    no_ure.ure_per_bit = 0;
    assert_int_equal(bench_risk_compute(&s, &no_ure, &k), 0);
    assert_rel(k.mttdl_hours, (1 / t) / (4 * 3 * lambda * lambda), 1e-4);
}

static void test_raid6_and_mirrors(void **state)
{
    (void)state;
    double lambda = -log(0.98) / RISK_HOURS_YEAR, t = 2e12 / 100e6 / 3600;
    struct bench_risk_params no_ure = disks;
    no_ure.ure_per_bit = 0;
    struct bench_risk_shape s;
    struct bench_risk k;
    /* raid6 over 6: mu^2 / (n (n-1) (n-2) lambda^3). */
    assert_int_equal(bench_risk_shape_of("raid6", 6, disks.member_bytes, &s), 0);
    assert_int_equal(bench_risk_compute(&s, &no_ure, &k), 0);
    assert_rel(k.mttdl_hours, 1 / (t * t * 6 * 5 * 4 * pow(lambda, 3)), 1e-3);
    /* raid6 with read errors: the URE only counts once both parities are in use, so the loss
     * probability is q1 * (1 - (1 - q2)(1 - p_ure)) with 4 members read. */
    assert_int_equal(bench_risk_compute(&s, &disks, &k), 0);
    double q1 = -expm1(-5 * lambda * t), q2 = -expm1(-4 * lambda * t);
    double pure = -expm1(-8 * 4 * 2 * TB * 1e-14);
    assert_rel(k.p_loss_rebuild, q1 * (1 - (1 - q2) * (1 - pure)), 1e-9);

    /* 3-way mirror: mu^2 / (3 * 2 * 1 * lambda^3). */
    assert_int_equal(bench_risk_shape_of("raid1", 3, disks.member_bytes, &s), 0);
    assert_int_equal(s.tolerate, 2);
    assert_int_equal(bench_risk_compute(&s, &no_ure, &k), 0);
    assert_rel(k.mttdl_hours, 1 / (t * t * 6 * pow(lambda, 3)), 1e-3);

    /* raid10 near-2 over 4: one partner per member, mu / (n lambda^2); over 5: both neighbours
     * share chunks, twice the exposure. btrfs raid10 over 4: any second member, 3x. */
    assert_int_equal(bench_risk_shape_of("raid10", 4, disks.member_bytes, &s), 0);
    assert_int_equal(s.at_risk[0], 1);
    assert_int_equal(bench_risk_compute(&s, &no_ure, &k), 0);
    double r10 = k.mttdl_hours;
    assert_rel(r10, 1 / (t * 4 * lambda * lambda), 1e-4);
    assert_int_equal(bench_risk_shape_of("raid10", 5, disks.member_bytes, &s), 0);
    assert_int_equal(s.at_risk[0], 2);
    assert_int_equal(bench_risk_shape_of("btrfs-raid10", 4, disks.member_bytes, &s), 0);
    assert_int_equal(s.at_risk[0], 3);
    assert_int_equal(bench_risk_compute(&s, &no_ure, &k), 0);
    assert_rel(k.mttdl_hours, r10 / 3, 1e-4);
}

static void test_no_redundancy(void **state)
{
    (void)state;
    struct bench_risk_shape s;
    struct bench_risk k;
    double lambda = -log(0.98) / RISK_HOURS_YEAR;
    /* raid0 over 4: the first failure loses data, MTTDL = 1 / (4 lambda) = 12.4 years, and the
     * chance of a loss in 5 years is 1 - 0.98^20 = 33.2 %. */
    assert_int_equal(bench_risk_shape_of("raid0", 4, disks.member_bytes, &s), 0);
    assert_int_equal(s.tolerate, 0);
    assert_int_equal(bench_risk_compute(&s, &disks, &k), 0);
    assert_rel(k.mttdl_hours, 1 / (4 * lambda), 1e-9);
    assert_rel(k.p_loss_5y, 1 - pow(0.98, 20), 1e-9);
    assert_true(k.p_loss_rebuild == 1 && k.rebuild_hours == 0);
    assert_int_equal(bench_risk_shape_of("single", 1, disks.member_bytes, &s), 0);
    assert_int_equal(bench_risk_shape_of("linear", 3, disks.member_bytes, &s), 0);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct bench_risk_shape s;
    struct bench_risk k;
    assert_int_equal(bench_risk_shape_of("raid5", 2, TB, &s), -EINVAL);
    assert_int_equal(bench_risk_shape_of("raid6", 3, TB, &s), -EINVAL);
    assert_int_equal(bench_risk_shape_of("raid1", 1, TB, &s), -EINVAL);
    assert_int_equal(bench_risk_shape_of("single", 2, TB, &s), -EINVAL);
    assert_int_equal(bench_risk_shape_of("raid7", 4, TB, &s), -EINVAL);
    assert_int_equal(bench_risk_shape_of("raid5", 4, 0, &s), -EINVAL);
    assert_int_equal(bench_risk_shape_of("raid5", 4, TB, &s), 0);
    struct bench_risk_params p = disks;
    p.afr = 0;
    assert_int_equal(bench_risk_compute(&s, &p, &k), -EINVAL);
    p.afr = 1;
    assert_int_equal(bench_risk_compute(&s, &p, &k), -EINVAL);
    p = disks;
    p.rebuild_bps = 0;
    assert_int_equal(bench_risk_compute(&s, &p, &k), -EINVAL);
}

static void test_from_model(void **state)
{
    (void)state;
    struct rk_emul_params hdd = {.kind = RK_EMUL_HDD,
                                 .capacity = 500107862016ull,
                                 .outer_bw = 125000000,
                                 .inner_bw = 60000000};
    struct bench_risk_params p;
    bench_risk_params_from_model(&hdd, 1e9, &p);
    assert_rel(p.member_bytes, 500107862016.0, 1e-12);
    assert_rel(p.afr, 0.015, 1e-12);
    assert_rel(p.ure_per_bit, 1e-14, 1e-12);
    assert_rel(p.rebuild_bps, 92.5e6, 1e-12);
    struct rk_emul_params ssd = {.kind = RK_EMUL_SSD,
                                 .read_bw = 500000000,
                                 .write_bw = 300000000,
                                 .afr_ppm = 4000,
                                 .ure_exp = 17};
    bench_risk_params_from_model(&ssd, 1e9, &p);
    assert_rel(p.member_bytes, 1e9, 1e-12);
    assert_rel(p.afr, 0.004, 1e-12);
    assert_rel(p.ure_per_bit, 1e-17, 1e-9);
    assert_rel(p.rebuild_bps, 300e6, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raid5_worked),  cmocka_unit_test(test_raid6_and_mirrors),
        cmocka_unit_test(test_no_redundancy), cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_from_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
