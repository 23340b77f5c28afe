/* The risk half of "which level for my disks?": mean time to data loss and the probability of
 * losing data during one rebuild, for an array shape and a member's failure figures. Pure
 * arithmetic (no I/O, no state); the formulas and their assumptions are in docs/BENCHMARKS.md
 * "Risk". */
#ifndef RK_BENCH_RISK_H
#define RK_BENCH_RISK_H

#include <stdbool.h>
#include <stddef.h>

#include "raidkit/emul.h"

#define RISK_MAX_TOLERATE 31     /* failures a shape can survive (a 32-way mirror) */
#define RISK_HOURS_YEAR   8766.0 /* 365.25 days */

/* The failure figures of one member. */
struct bench_risk_params {
    double member_bytes; /* bytes of one member: the whole disk a rebuild reads or writes */
    double afr;          /* annual failure rate, fraction per year (0.015 = 1.5 %) */
    double ure_per_bit;  /* unrecoverable read errors per bit read (1e-14) */
    double rebuild_bps;  /* bytes per second one member's rebuild moves */
};

/*
 * How an array loses data. members: n. tolerate: f, the failures it survives in the worst case
 * (0 for single, linear, raid0). at_risk[k-1] for k = 1..f: with k members failed and their
 * rebuild running, how many of the survivors would take the array one failure closer to loss
 * if they failed too (raid5: n-1; raid10 near-2 with n even: 1, the partner). read_bytes: what
 * a rebuild reads from the survivors when no redundancy is left (k = f), the exposure to
 * unrecoverable read errors.
 */
struct bench_risk_shape {
    int members;
    int tolerate;
    int at_risk[RISK_MAX_TOLERATE];
    double read_bytes;
};

/* What bench_risk_compute gives. */
struct bench_risk {
    double rebuild_hours; /* member_bytes / rebuild_bps / 3600; 0 when tolerate is 0 */
    /* Probability that data is lost between the first failure and the end of its rebuild: more
     * failures exhaust the redundancy, or an unrecoverable read error hits while none is left.
     * 1 when tolerate is 0 (the first failure loses data). */
    double p_loss_rebuild;
    double mttdl_hours; /* mean time to data loss */
    double p_loss_5y;   /* 1 - exp(-5 years / MTTDL) */
};

/*
 * The shape of an array. level: "single", "linear", "raid0", "raid1" (an n-way mirror),
 * "raid10" (md near layout, 2 copies), "raid5", "raid6", or a native btrfs profile
 * "btrfs-single|raid0|raid1|raid10|raid5|raid6" (btrfs spreads the copies of chunks over all
 * members, so after one failure any second one may hit a chunk's other copy). members >= 1
 * (raid1/raid10 >= 2, raid5 >= 3, raid6 >= 4). member_bytes: one member's size. Returns 0, or
 * -EINVAL for an unknown level or a member count the level does not take.
 */
int bench_risk_shape_of(const char *level, int members, double member_bytes,
                        struct bench_risk_shape *out);

/*
 * Risk of shape s with member figures p. Per hour: lambda = -ln(1 - afr) / 8766; T =
 * rebuild_hours. With k members failed, q_k = 1 - exp(-at_risk[k-1] * lambda * T) is the chance
 * that one more fails before the rebuild ends; P(f) = 1 - (1 - q_f)(1 - p_ure) with p_ure = 1 -
 * exp(-8 * read_bytes * ure_per_bit), P(k) = q_k * P(k + 1) for k < f; p_loss_rebuild = P(1);
 * MTTDL = 1 / (n * lambda * P(1)) (1 / (n * lambda) for f = 0). Returns 0, or -EINVAL when a
 * figure is out of range (afr not in (0,1), member_bytes or rebuild_bps not > 0, ure_per_bit
 * < 0).
 */
int bench_risk_compute(const struct bench_risk_shape *s, const struct bench_risk_params *p,
                       struct bench_risk *out);

/*
 * Member figures from a device model: member_bytes = the profile's capacity (fallback_bytes
 * when it has none); afr = afr_ppm / 1e6; ure_per_bit = 10^-ure_exp; the model's own rebuild
 * rate: the HDD's mean media rate (outer_bw + inner_bw) / 2 over the whole disk, the SSD's
 * min(read_bw, write_bw). Profile fields at 0 take the documented defaults: HDD 15000 ppm and
 * 10^-14, SSD 10000 ppm and 10^-16 (docs/BENCHMARKS.md "Risk").
 */
void bench_risk_params_from_model(const struct rk_emul_params *m, double fallback_bytes,
                                  struct bench_risk_params *out);

#endif
