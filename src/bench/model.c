/* The device model's side of the report: the MB/s the modelled members allow for the I/O a trial
 * caused, the host-bound marks, and the model's parameters as JSON (from RK_EMUL_PARAMS). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench/run.h"
#include "raidkit/emul.h"

/* A modelled row below this share of what its members allow was limited by the host. */
#define MODEL_SHORTFALL 0.9

/* The back-end of configuration c (one with no flags for an unknown kind). */
static const struct bench_backend *model_backend(const struct bench_config *c)
{
    static const struct bench_backend none = {.kind = ""};
    const struct bench_backend *b = bench_backend_find(c->kind);
    return b ? b : &none;
}

/*
 * MB/s the SSD model allows for the I/O between a and b: each member needs, for its share of the
 * operations, the longer of its rate gate (reads and writes share it: the read time plus the
 * write time, each the longer of ops/iops and bytes/bw) and its channels (latency + transfer over
 * parallelism); the busiest member sets the time the array's bytes take. Counts, not clocks: a busy
 * host does not change the figure. 0 = unknown (no model, HDD, no I/O).
 */
double run_model_mbs(const struct run_ctx *x, const struct run_counts *a,
                     const struct run_counts *b)
{
    const struct rk_emul_params *p = &x->emul;
    if (!x->have_emul || p->kind != RK_EMUL_SSD || b->bytes <= a->bytes)
        return 0;
    double worst = 0;
    for (int s = 0; s < b->n; s++) {
        double r = (double)(b->r[s] - a->r[s]), w = (double)(b->w[s] - a->w[s]);
        double rb = (double)(b->rb[s] - a->rb[s]), wb = (double)(b->wb[s] - a->wb[s]);
        double tr = fmax(r / p->read_iops, rb / (double)p->read_bw);
        double tw = fmax(w / p->write_iops, wb / (double)p->write_bw);
        double tc = (r * p->read_latency_us * 1e-6 + rb / (double)p->read_bw +
                     w * p->write_latency_us * 1e-6 + wb / (double)p->write_bw) /
                    p->parallelism;
        worst = fmax(worst, fmax(tr + tw, tc)); /* reads and writes share one budget */
    }
    return worst > 0 ? (double)(b->bytes - a->bytes) / worst / 1e6 : 0;
}

void bench_report_finish(struct bench_report *r)
{
    bench_report_risk(r);
    int noop = -1;
    for (int c = 0; c < r->nconfigs; c++)
        if (model_backend(&r->configs[c])->ceiling && !r->configs[c].skipped)
            noop = c;
    for (int c = 0; c < r->nconfigs; c++) {
        for (int j = 0; j < r->suite->njobs; j++) {
            struct bench_cell *cell = &r->cells[c][j];
            cell->mean = bench_mean(cell->trials, cell->ntrials);
            cell->sd = bench_stddev(cell->trials, cell->ntrials);
            cell->se = bench_stderr(cell->trials, cell->ntrials);
            cell->rsd = bench_rsd(cell->trials, cell->ntrials);
            cell->model_mbs = cell->model_n > 0 ? cell->model_sum / cell->model_n : 0;
            /* The modelled members were not kept busy: the host (fio, NBD, this machine), not
             * the model, set the figure. The noop ceiling alone misses this, because a
             * modelled request costs the host more than a noop one (worker threads, timers,
             * one member I/O per copy). */
            cell->host_bound = cell->ntrials > 0 && cell->model_mbs > 0 &&
                               cell->mean < MODEL_SHORTFALL * cell->model_mbs;
        }
    }
    if (noop < 0)
        return;
    /* A row within 10% of what the harness moves with no device at all measures the host
     * (fio + NBD + this machine), not the modelled hardware. */
    for (int j = 0; j < r->suite->njobs; j++) {
        double ceil = r->cells[noop][j].mean;
        if (r->cells[noop][j].ntrials == 0 || ceil <= 0)
            continue;
        for (int c = 0; c < r->nconfigs; c++) {
            struct bench_cell *cell = &r->cells[c][j];
            /* Only modelled rows: comparison rows (nbdkit, btrfs) are not the model anyway. */
            if (c != noop && model_backend(&r->configs[c])->modelled && cell->ntrials > 0 &&
                cell->mean >= 0.9 * ceil)
                cell->host_bound = true;
        }
    }
}

int run_model_json(struct run_ctx *x)
{
    const struct rk_emul_params *p = &x->emul;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return -ENOMEM;
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddStringToObject(o, "kind", p->kind == RK_EMUL_HDD ? "hdd" : "ssd");
    for (const struct rk_emul_field *f = rk_emul_fields; f->name; f++) {
        if (!rk_emul_field_used(f, p))
            continue;
        if (f->type == RK_EMUL_BOOL)
            cJSON_AddBoolToObject(o, f->name, rk_emul_field_get(p, f) != 0);
        else
            cJSON_AddNumberToObject(o, f->name, (double)rk_emul_field_get(p, f));
    }
    x->rep->model_json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return x->rep->model_json ? 0 : -ENOMEM;
}
