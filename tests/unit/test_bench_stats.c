/* Bench statistics on fixed inputs: mean, sample standard deviation, standard error, RSD and the
 * trial-extension rule (at least the minimum, more while RSD > limit, never beyond 4x). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bench/bench.h"

static void test_mean_sd_se(void **state)
{
    (void)state;
    const double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
    assert_true(fabs(bench_mean(v, 8) - 5.0) < 1e-12);
    /* Sum of squared deviations 32, n-1 = 7. */
    assert_true(fabs(bench_stddev(v, 8) - sqrt(32.0 / 7.0)) < 1e-12);
    assert_true(fabs(bench_stderr(v, 8) - sqrt(32.0 / 7.0) / sqrt(8.0)) < 1e-12);
    assert_true(fabs(bench_rsd(v, 8) - sqrt(32.0 / 7.0) / 5.0 * 100.0) < 1e-9);

    const double w[] = {100.0, 102.0, 98.0};
    assert_true(fabs(bench_mean(w, 3) - 100.0) < 1e-12);
    assert_true(fabs(bench_stddev(w, 3) - 2.0) < 1e-12);
    assert_true(fabs(bench_stderr(w, 3) - 2.0 / sqrt(3.0)) < 1e-12);
    assert_true(fabs(bench_rsd(w, 3) - 2.0) < 1e-12);
}

static void test_degenerate(void **state)
{
    (void)state;
    const double one[] = {42.0}, zeros[] = {0, 0, 0};
    assert_true(bench_mean(one, 0) == 0.0);
    assert_true(bench_mean(one, 1) == 42.0);
    assert_true(bench_stddev(one, 1) == 0.0);
    assert_true(bench_stderr(one, 1) == 0.0);
    assert_true(bench_rsd(zeros, 3) == 0.0);
}

static void test_extension_rule(void **state)
{
    (void)state;
    const double steady[] = {100, 101, 99, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100};
    const double noisy[] = {100, 150, 60, 120, 80, 140, 70, 110, 90, 130, 65, 125, 95, 100};
    /* Fewer than the minimum: always more. */
    assert_true(bench_need_more(steady, 0, 3, 3.5));
    assert_true(bench_need_more(steady, 2, 3, 3.5));
    /* RSD 1% after 3: done. */
    assert_false(bench_need_more(steady, 3, 3, 3.5));
    /* Noisy: more up to 4 x 3 = 12 trials, then stop whatever the RSD. */
    assert_true(bench_rsd(noisy, 3) > 3.5);
    assert_true(bench_need_more(noisy, 3, 3, 3.5));
    assert_true(bench_need_more(noisy, 11, 3, 3.5));
    assert_false(bench_need_more(noisy, 12, 3, 3.5));
    assert_false(bench_need_more(noisy, 13, 3, 3.5));
    /* The limit is strict: RSD exactly at the limit needs no more. {96.5, 100, 103.5}: sd 3.5,
     * mean 100. */
    const double edge[] = {96.5, 100, 103.5};
    assert_true(fabs(bench_rsd(edge, 3) - 3.5) < 1e-9);
    assert_false(bench_need_more(edge, 3, 3, 3.5 + 1e-9));
    /* A larger minimum scales the cap. */
    assert_true(bench_need_more(noisy, 13, 4, 3.5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mean_sd_se),
        cmocka_unit_test(test_degenerate),
        cmocka_unit_test(test_extension_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
