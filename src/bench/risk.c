/* Mean time to data loss and the probability of loss during a rebuild (risk.h; the formulas and
 * their assumptions in docs/BENCHMARKS.md "Risk"). */
#include "bench/risk.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* Defaults for profiles without the fields (docs/BENCHMARKS.md "Risk"). */
#define RISK_HDD_AFR_PPM 15000u
#define RISK_HDD_URE_EXP 14u
#define RISK_SSD_AFR_PPM 10000u
#define RISK_SSD_URE_EXP 16u

/* A shape that survives `tolerate` failures with at_risk(k) = start - k survivors that matter. */
static void risk_countdown(struct bench_risk_shape *s, int tolerate, int start)
{
    s->tolerate = tolerate;
    for (int k = 1; k <= tolerate; k++)
        s->at_risk[k - 1] = start - k;
}

int bench_risk_shape_of(const char *level, int members, double member_bytes,
                        struct bench_risk_shape *out)
{
    int n = members;
    memset(out, 0, sizeof(*out));
    out->members = n;
    if (n < 1 || n > RISK_MAX_TOLERATE + 1 || !(member_bytes > 0))
        return -EINVAL;
    bool btrfs = !strncmp(level, "btrfs-", 6);
    const char *l = btrfs ? level + 6 : level;
    if (!strcmp(l, "single") || !strcmp(l, "linear") || !strcmp(l, "raid0")) {
        if (!strcmp(l, "single") && n != 1 && !btrfs)
            return -EINVAL;
        return 0; /* tolerate 0 */
    }
    if (!strcmp(l, "raid1") && !btrfs) {
        if (n < 2)
            return -EINVAL;
        risk_countdown(out, n - 1, n); /* an n-way mirror: the last copy is read */
        out->read_bytes = member_bytes;
        return 0;
    }
    if (!strcmp(l, "raid1") || !strcmp(l, "raid10")) {
        if (n < 2 || (btrfs && !strcmp(l, "raid10") && n < 4))
            return -EINVAL;
        out->tolerate = 1;
        /* md near layout with 2 copies: chunk copies on slots p and p+1 (mod n), so with n even
         * a member shares all its chunks with one partner and with n odd with both neighbours.
         * btrfs places each chunk's two copies on any two members. */
        out->at_risk[0] = btrfs ? n - 1 : (n % 2 == 0 ? 1 : 2);
        out->read_bytes = member_bytes; /* one copy of what the failed member held */
        return 0;
    }
    if (!strcmp(l, "raid5")) {
        if (n < 3)
            return -EINVAL;
        risk_countdown(out, 1, n);
        out->read_bytes = (n - 1) * member_bytes;
        return 0;
    }
    if (!strcmp(l, "raid6")) {
        if (n < 4)
            return -EINVAL;
        risk_countdown(out, 2, n);
        out->read_bytes = (n - 2) * member_bytes;
        return 0;
    }
    return -EINVAL;
}

int bench_risk_compute(const struct bench_risk_shape *s, const struct bench_risk_params *p,
                       struct bench_risk *out)
{
    memset(out, 0, sizeof(*out));
    if (!(p->afr > 0 && p->afr < 1) || !(p->member_bytes > 0) || !(p->rebuild_bps > 0) ||
        !(p->ure_per_bit >= 0) || s->members < 1 || s->tolerate < 0 ||
        s->tolerate > RISK_MAX_TOLERATE || s->tolerate >= s->members)
        return -EINVAL;
    double lambda = -log1p(-p->afr) / RISK_HOURS_YEAR; /* failures per member-hour */
    double n = s->members;
    if (s->tolerate == 0) {
        out->p_loss_rebuild = 1;
        out->mttdl_hours = 1 / (n * lambda);
    } else {
        double t = p->member_bytes / p->rebuild_bps / 3600.0;
        double p_ure = -expm1(-8.0 * s->read_bytes * p->ure_per_bit);
        double loss = 0;
        for (int k = s->tolerate; k >= 1; k--) {
            double q = -expm1(-s->at_risk[k - 1] * lambda * t);
            loss = k == s->tolerate ? 1 - (1 - q) * (1 - p_ure) : q * loss;
        }
        out->rebuild_hours = t;
        out->p_loss_rebuild = loss;
        out->mttdl_hours = loss > 0 ? 1 / (n * lambda * loss) : INFINITY;
    }
    out->p_loss_5y = -expm1(-5 * RISK_HOURS_YEAR / out->mttdl_hours);
    return 0;
}

void bench_risk_params_from_model(const struct rk_emul_params *m, double fallback_bytes,
                                  struct bench_risk_params *out)
{
    bool hdd = m->kind == RK_EMUL_HDD;
    uint32_t afr = m->afr_ppm ? m->afr_ppm : hdd ? RISK_HDD_AFR_PPM : RISK_SSD_AFR_PPM;
    uint32_t ure = m->ure_exp ? m->ure_exp : hdd ? RISK_HDD_URE_EXP : RISK_SSD_URE_EXP;
    out->member_bytes = m->capacity ? (double)m->capacity : fallback_bytes;
    out->afr = afr / 1e6;
    out->ure_per_bit = pow(10.0, -(double)ure);
    out->rebuild_bps = hdd ? ((double)m->outer_bw + (double)m->inner_bw) / 2
                           : fmin((double)m->read_bw, (double)m->write_bw);
}
