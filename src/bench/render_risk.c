/* The risk figures of a report's configurations (risk.h on the model's member figures) and their
 * text block; the JSON carries them in each configuration's "risk" object (render.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/risk.h"
#include "raidkit/raid.h"

/* The risk.h level name of configuration c, or NULL when it is not an array (noop, nbdkit). */
static const char *risk_level(const struct bench_config *c)
{
    if (!strcmp(c->kind, "btrfs"))
        return c->name;
    if (!strcmp(c->kind, "raidkit"))
        return c->members == 1 ? "single" : rk_level_name(c->level);
    if (!strcmp(c->name, "plain")) /* a filesystem on one member file */
        return "single";
    return NULL;
}

void bench_report_risk(struct bench_report *r)
{
    struct bench_risk_params p = {.member_bytes = r->risk_member_bytes,
                                  .afr = r->risk_afr,
                                  .ure_per_bit = r->risk_ure_per_bit,
                                  .rebuild_bps = r->risk_rebuild_bps};
    for (int c = 0; c < r->nconfigs; c++) {
        struct bench_config *bc = &r->configs[c];
        const char *level = risk_level(bc);
        struct bench_risk_shape s;
        struct bench_risk k;
        bc->has_risk = r->have_risk && level &&
                       !bench_risk_shape_of(level, bc->members, p.member_bytes, &s) &&
                       !bench_risk_compute(&s, &p, &k);
        if (!bc->has_risk)
            continue;
        bc->rebuild_hours = k.rebuild_hours;
        bc->p_loss_rebuild = k.p_loss_rebuild;
        bc->mttdl_hours = k.mttdl_hours;
        bc->p_loss_5y = k.p_loss_5y;
    }
}

/* "12.3 %", "4.1e-05 %" for tiny probabilities. */
static void risk_pct(double p, char *buf, size_t len)
{
    if (p >= 0.001 || p == 0)
        snprintf(buf, len, "%.1f %%", p * 100);
    else
        snprintf(buf, len, "%.1e %%", p * 100);
}

/* MTTDL in years, or "> 1e9 years". */
static void risk_years(double hours, char *buf, size_t len)
{
    double y = hours / RISK_HOURS_YEAR;
    if (!isfinite(y) || y > 1e9)
        snprintf(buf, len, "> 1e9 years");
    else if (y >= 1000)
        snprintf(buf, len, "%.2g years", y);
    else
        snprintf(buf, len, "%.1f years", y);
}

int bench_render_text_risk(const struct bench_report *r, FILE *f)
{
    bool any = false;
    for (int c = 0; c < r->nconfigs; c++)
        any |= r->configs[c].has_risk;
    if (!any)
        return 0;
    fprintf(f,
            "\nRisk of data loss (model %s: %.1f GB members, AFR %.2f %%/year, 1 unrecoverable "
            "read error per %.0e bits, rebuild at %.1f MB/s; docs/BENCHMARKS.md \"Risk\"):\n",
            r->model_name, r->risk_member_bytes / 1e9, r->risk_afr * 100, 1 / r->risk_ure_per_bit,
            r->risk_rebuild_bps / 1e6);
    fprintf(f, "  %-24s %9s %18s %16s %16s\n", "configuration", "rebuild", "P(loss in rebuild)",
            "MTTDL", "P(loss, 5 years)");
    for (int c = 0; c < r->nconfigs; c++) {
        const struct bench_config *bc = &r->configs[c];
        if (!bc->has_risk)
            continue;
        char reb[24] = "none", pr[24], mt[24], p5[24];
        if (bc->rebuild_hours > 0)
            snprintf(reb, sizeof(reb), "%.1f h", bc->rebuild_hours);
        risk_pct(bc->p_loss_rebuild, pr, sizeof(pr));
        risk_years(bc->mttdl_hours, mt, sizeof(mt));
        risk_pct(bc->p_loss_5y, p5, sizeof(p5));
        fprintf(f, "  %-24s %9s %18s %16s %16s\n", bc->label, reb, pr, mt, p5);
    }
    return ferror(f) ? -EIO : 0;
}
