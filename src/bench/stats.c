/* raidkit bench statistics: mean, sample standard deviation, standard error, relative standard
 * deviation and the trial-extension rule (docs/BENCHMARKS.md "The harness"), as pure functions
 * over trial values. */
#include <math.h>

#include "bench/bench.h"

double bench_mean(const double *v, int n)
{
    if (n <= 0)
        return 0.0;
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

double bench_stddev(const double *v, int n)
{
    if (n < 2)
        return 0.0;
    double m = bench_mean(v, n), s = 0.0;
    for (int i = 0; i < n; i++)
        s += (v[i] - m) * (v[i] - m);
    return sqrt(s / (n - 1));
}

double bench_stderr(const double *v, int n)
{
    if (n < 2)
        return 0.0;
    return bench_stddev(v, n) / sqrt((double)n);
}

double bench_rsd(const double *v, int n)
{
    double m = bench_mean(v, n);
    if (m == 0.0)
        return 0.0;
    return bench_stddev(v, n) / fabs(m) * 100.0;
}

bool bench_need_more(const double *v, int n, int min_trials, double rsd_limit)
{
    if (min_trials < 1)
        min_trials = 1;
    if (n < min_trials)
        return true;
    /* Noisy results get more trials, but never more than 4x the minimum. */
    if (n >= 4 * min_trials || n >= BENCH_MAX_TRIALS)
        return false;
    return bench_rsd(v, n) > rsd_limit;
}

double bench_hit_pct(uint64_t hits, uint64_t misses)
{
    if (hits + misses == 0)
        return -1.0;
    return (double)hits * 100.0 / (double)(hits + misses);
}
