/* The count-based SSD prediction of raidkit bench (run_model_mbs, src/bench/model.c) and the
 * emul member's gate agree that reads and writes share one rate budget (docs/BENCHMARKS.md "SSD
 * model"): a mix takes the read time plus the write time, not the longer of the two. The HDD
 * simulation (run_model_sim): layout, log, a mirror's read choice and the write-intent bitmap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bench/model_sim_int.h"
#include "bench/run.h"
#include "member/emul_model.h"
#include "raidkit/raid.h"

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

/* The simulated prediction (run_model_sim): at queue depth 1 a request takes latency + len/bw
 * (100 us + 4096/100 MB/s = 140.96 us: 29.06 MB/s), far below the count bound's IOPS cap
 * (40.96 MB/s); at depth 64 the gate binds and both give the cap. */
static void test_sim_depth(void **state)
{
    (void)state;
    struct rk_emul_params p = ssd();
    struct run_counts a = {0}, b = {0};
    b.n = 1;
    b.r[0] = b.ops = 1000;
    b.rb[0] = b.bytes = 4096000;
    struct run_sim_in in = {.p = &p, .level = RK_LEVEL_LINEAR, .iodepth = 1};
    assert_float_equal(run_model_sim(&in, &a, &b), 4096 / 140.96, 0.01);
    in.iodepth = 64;
    assert_float_equal(run_model_sim(&in, &a, &b), 40.96, 0.05);
}

/* Four members, one read each per request: raid0 (any member, drawn at random) at depth 4 leaves
 * members idle that a raid1 read (the least busy copy) keeps busy; raid1 reaches 4 x the IOPS
 * cap, raid0 less. A raid1 write goes to all four (the cap of one member). */
static void test_sim_members(void **state)
{
    (void)state;
    struct rk_emul_params p = ssd();
    p.parallelism = 1;
    p.read_latency_us = 1000; /* 1 ms service: 1000 IOPS per member at most */
    struct run_counts a = {0}, b = {0};
    b.n = 4;
    for (int i = 0; i < 4; i++) {
        b.r[i] = 250;
        b.rb[i] = 250 * 4096;
    }
    b.ops = 1000;
    b.bytes = 4096000;
    struct run_sim_in in = {.p = &p, .level = RK_LEVEL_RAID1, .iodepth = 4};
    double mirror = run_model_sim(&in, &a, &b);
    assert_float_equal(mirror, 4 * 4.096 / 1.0410, 0.05); /* 4 x 1 / (1 ms + 41 us) */
    in.level = RK_LEVEL_RAID0;
    double stripe = run_model_sim(&in, &a, &b);
    assert_true(stripe < 0.85 * mirror);
    memset(&b, 0, sizeof(b));
    b.n = 4;
    for (int i = 0; i < 4; i++) {
        b.w[i] = 1000;
        b.wb[i] = 1000 * 4096;
    }
    b.ops = 1000;
    b.bytes = 4096000;
    in.level = RK_LEVEL_RAID1;
    in.iodepth = 64;
    assert_float_equal(run_model_sim(&in, &a, &b), 4096 * 5000 / 1e6, 0.05);
}

/* HDD (hdd-7200, built-in): one member, depth 1, random 16 KiB reads over 32 MiB cost command
 * overhead (1450 us) + a short seek (>= 800 us) + on average half a revolution (4167 us) +
 * transfer (131 us): about 6.5 ms, 2.5 MB/s; a sequential read skips the seek and is faster; a
 * mixed 50/50 job gets a figure (every request makes member I/O). */
static void test_sim_hdd(void **state)
{
    (void)state;
    const struct rk_emul_params *p = &emul_builtin_profiles[1];
    assert_int_equal(p->kind, RK_EMUL_HDD);
    struct run_counts a = {0}, b = {0};
    b.n = 1;
    b.r[0] = b.ops = 1000;
    b.rb[0] = b.bytes = 16384000;
    struct run_sim_in in = {.p = p, .level = RK_LEVEL_LINEAR, .iodepth = 1, .span = 32 << 20};
    double rnd = run_model_sim(&in, &a, &b);
    assert_true(rnd > 2.0 && rnd < 3.0);
    in.seq = true;
    assert_true(run_model_sim(&in, &a, &b) > 1.2 * rnd);
    in.seq = false;
    b.r[0] = b.w[0] = 500;
    b.rb[0] = b.wb[0] = 8192000;
    in.rfrac = 0.5;
    double mix = run_model_sim(&in, &a, &b);
    assert_true(mix > rnd && mix < 10 * rnd); /* cached writes are fast, reads are not */
}

/* HDD raid5 sequential writes (hdd-7200, 4 members, 64 KiB chunk, 16 KiB writes at depth 32):
 * the counts of a trial with a partial parity log (per request 0.5 reads, 1 data write, 0.8 FUA
 * log writes). Writes of one stripe row run one at a time (a row is 12 requests), so the row
 * locks alone cost most of the depth; with the log, each entry is a FUA write in the log region,
 * through its member's ring, before the stripe's writes: slower again. */
static double sim_r5_write(struct rk_raid_geom *g, uint64_t fua)
{
    struct run_counts a = {0}, b = {0};
    b.n = 4;
    b.ops = 4000;
    b.bytes = b.ops * 16384;
    for (int i = 0; i < 4; i++) {
        b.r[i] = 500;
        b.rb[i] = 500 * 16384;
        b.w[i] = 1000 + fua;
        b.wb[i] = 1000 * 32768 + fua * 16384;
        b.fw[i] = fua;
        b.fwb[i] = fua * 16384;
    }
    struct run_sim_in in = {.p = &emul_builtin_profiles[1],
                            .level = RK_LEVEL_RAID5,
                            .iodepth = 32,
                            .span = 32 << 20,
                            .seq = true,
                            .geom = g};
    return run_model_sim(&in, &a, &b);
}

static void test_sim_hdd_log(void **state)
{
    (void)state;
    struct rk_raid_geom g = {.level = RK_LEVEL_RAID5,
                             .members = 4,
                             .chunk = 65536,
                             .data_offset = 1 << 20,
                             .ppl_offset = 512 << 10,
                             .ppl_size = 512 << 10,
                             .ppl_id = 1};
    for (int i = 0; i < 4; i++)
        g.data_size[i] = 64 << 20;
    double free_rows = sim_r5_write(NULL, 800); /* no layout: no row locks, no log phase */
    struct rk_raid_geom nolog = g;
    nolog.ppl_size = 0;
    double locked = sim_r5_write(&nolog, 800); /* row locks; FUA writes stay in the mix */
    double logged = sim_r5_write(&g, 800);
    assert_true(free_rows > 0 && locked > 0 && logged > 0);
    assert_true(locked < 0.8 * free_rows);
    assert_true(logged < 0.8 * locked);
    /* without FUA writes the log changes nothing */
    assert_float_equal(sim_r5_write(&g, 0), sim_r5_write(&nolog, 0), 1e-9);
}

/* A mirror's read goes to the copy with the fewest requests outstanding, as the array counts
 * them (src/raid/copies_rw.c: the member's inflight). A write the drive's cache acknowledged is
 * not outstanding, though it waits in the drive's queue for the media: counting it (as the
 * simulation did until 2026-12-07) sent a sequential 50/50 stream's reads in long runs to
 * one copy, where the array spreads them (raid1 over 4 hdd-7200: model 21.6 MB/s, emulation
 * 12.3). */
static void test_sim_mirror_read_outstanding(void **state)
{
    (void)state;
    struct run_sim_in in = {.p = &emul_builtin_profiles[1], .level = RK_LEVEL_RAID1};
    struct emul_hq *hq = calloc(2, sizeof(*hq));
    assert_non_null(hq);
    struct sim s = {.in = &in, .n = 2, .hq = hq};
    hq[0].n = 6; /* six cached writes waiting for the media, nothing outstanding */
    hq[0].cached = 6;
    hq[1].n = 1; /* one read queued, one under the head */
    hq[1].busy = true;
    for (int k = 0; k < 4; k++)
        assert_int_equal(sim_mirror_read(&s, 0, true), 0);
    hq[0].cached = 3; /* three of the six are reads: now the busier copy */
    for (int k = 0; k < 4; k++)
        assert_int_equal(sim_mirror_read(&s, 0, true), 1);
    free(hq);
}

/* raid1 over 4 hdd-7200, sequential 16 KiB 50/50 at depth 32 on 32 MiB, with the counts of a
 * trial on a new array (2026-12-07, bench/suites/validate-seq-rw.ini): per member 193 reads and
 * 770 data writes; 195 bits set (64 KiB regions: every region the stream entered). The array of
 * that trial wrote the bitmap's area (4 KiB, FUA) 61 times, once per region, and the writes
 * stalled behind those FUA writes at the start of the disk (12.3 MB/s). Since the stream
 * look-ahead (src/raid/bitmap.c bm_ahead) the same 195 bits take 6 area writes: 3 as the stream
 * starts, then one per 65-region window, the counts below. The simulation follows it: the
 * bitmap then costs the stream little. Without the look-ahead in the simulation every region
 * entered still stalls (about 12 MB/s, below the bound asserted). */
static double sim_r1_rw(bool bitmap)
{
    struct rk_raid_geom g = {
        .level = RK_LEVEL_RAID1, .members = 4, .chunk = 65536, .data_offset = 1 << 20};
    struct run_counts a = {0}, b = {0};
    b.n = 4;
    b.ops = 1540;
    b.bytes = b.ops * 16384;
    for (int i = 0; i < 4; i++) {
        g.data_size[i] = 96 << 20;
        b.r[i] = 193;
        b.rb[i] = 193 * 16384;
        b.w[i] = 770 + 6;
        b.wb[i] = 770 * 16384 + 6 * 4096;
        b.fw[i] = 6;
        b.fwb[i] = 6 * 4096;
    }
    if (bitmap) {
        b.bm_region = 65536;
        b.bm_off = 8192;
        b.bm_size = 4096;
        b.bm_bits = 195;
        b.bm_sets = 6;
    }
    struct run_sim_in in = {.p = &emul_builtin_profiles[1],
                            .level = RK_LEVEL_RAID1,
                            .iodepth = 32,
                            .span = 32 << 20,
                            .seq = true,
                            .rfrac = 0.5,
                            .geom = &g};
    return run_model_sim(&in, &a, &b);
}

static void test_sim_hdd_bitmap(void **state)
{
    (void)state;
    double without = sim_r1_rw(false), with = sim_r1_rw(true);
    assert_true(without > 0 && with > 0);
    assert_true(with <= without);
    assert_true(with > 0.95 * without);
    assert_true(with > 14.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_mix_shares_budget),
        cmocka_unit_test(test_emul_mix_shares_budget),
        cmocka_unit_test(test_sim_depth),
        cmocka_unit_test(test_sim_members),
        cmocka_unit_test(test_sim_hdd),
        cmocka_unit_test(test_sim_hdd_log),
        cmocka_unit_test(test_sim_mirror_read_outstanding),
        cmocka_unit_test(test_sim_hdd_bitmap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
