/* The count-based SSD prediction of raidkit bench (run_model_mbs, src/bench/model.c) and the
 * emul member's gate agree that reads and writes share one rate budget (docs/BENCHMARKS.md "SSD
 * model"): a mix takes the read time plus the write time, not the longer of the two. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bench/run.h"
#include "member/emul_model.h"

static struct rk_emul_params ssd(void)
{
    struct rk_emul_params p = {.name = "t-ssd",
                               .kind = RK_EMUL_SSD,
                               .read_latency_us = 100,
                               .write_latency_us = 50,
                               .read_iops = 10000,
                               .write_iops = 5000,
                               .read_bw = 100000000,
                               .write_bw = 50000000,
                               .parallelism = 4};
    return p;
}

/* 1000 reads and 1000 writes of 4 KiB on one member: the gate needs 1000/10000 + 1000/5000 =
 * 0.3 s (the channels 0.068 s), so 8.192 MB in 0.3 s = 27.307 MB/s; with separate budgets it
 * was 8.192 / 0.2 = 40.96. */
static void test_model_mix_shares_budget(void **state)
{
    (void)state;
    struct run_ctx *x = calloc(1, sizeof(*x));
    struct run_counts a = {0}, b = {0};
    x->emul = ssd();
    x->have_emul = true;
    b.n = 1;
    b.r[0] = b.w[0] = 1000;
    b.rb[0] = b.wb[0] = 4096000;
    b.bytes = 8192000;
    assert_float_equal(run_model_mbs(x, &a, &b), 8.192 / 0.3, 1e-6);
    /* Reads alone: unchanged (the IOPS cap, 0.1 s). */
    b.w[0] = b.wb[0] = 0;
    b.bytes = 4096000;
    assert_float_equal(run_model_mbs(x, &a, &b), 4.096 / 0.1, 1e-6);
    free(x);
}

/* The served model: the same mix submitted at once leaves the gate at 0.3 s. */
static void test_emul_mix_shares_budget(void **state)
{
    (void)state;
    struct rk_emul_params p = ssd();
    struct emul_model m;
    assert_int_equal(emul_model_init(&m, &p, 1ull << 30), 0);
    for (int i = 0; i < 1000; i++) {
        emul_ssd_submit(&m, EMUL_DIR_READ, 4096, 0);
        emul_ssd_submit(&m, EMUL_DIR_WRITE, 4096, 0);
    }
    assert_int_equal(m.gate, 1000ull * 100000 + 1000ull * 200000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_mix_shares_budget),
        cmocka_unit_test(test_emul_mix_shares_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
