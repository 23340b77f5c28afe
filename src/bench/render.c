/* raidkit bench reports: the seeds' text table with '=' bars, JSON (every trial, versions, model,
 * machine), CSV, one SVG bar chart per job with error bars, and one self-contained HTML page. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "bench/bench.h"
#include "bench/render.h"
#include "core/util.h"
#include "raidkit/raid.h"

bool render_has_row(const struct bench_report *r, int c, int job)
{
    return !r->configs[c].skipped && r->cells[c][job].ntrials > 0;
}

const char *render_cell_note(const struct bench_report *r, int c, int j)
{
    const struct bench_cell *cell = &r->cells[c][j];
    if (cell->note[0])
        return cell->note;
    if (cell->host_bound)
        return "host-bound";
    return r->configs[c].note;
}

void render_bs(uint32_t bs, char *buf, size_t len)
{
    if (bs >= (1u << 20) && bs % (1u << 20) == 0)
        snprintf(buf, len, "%uMB", bs >> 20);
    else if (bs % 1024 == 0)
        snprintf(buf, len, "%uKB", bs >> 10);
    else
        snprintf(buf, len, "%uB", bs);
}

static void render_size(uint64_t sz, char *buf, size_t len)
{
    if (sz >= (1ull << 30) && sz % (1ull << 30) == 0)
        snprintf(buf, len, "%lluGB", (unsigned long long)(sz >> 30));
    else
        snprintf(buf, len, "%lluMB", (unsigned long long)(sz >> 20));
}

void bench_job_heading(const struct bench_report *r, int job, char *buf, size_t len)
{
    const struct bench_job *j = &r->suite->jobs[job];
    char bs[16], sz[24], mix[32] = "";
    if (j->tool[0]) { /* a filesystem job: the tool's own title, then the filesystem */
        render_size(j->fs_size, sz, sizeof(sz));
        /* A study's title may name its own Disk Target (the test directory): ours is then
         * the members, so the heading does not say Disk Target twice. */
        snprintf(buf, len, "%s - File System: %s on %s - %s: %s", j->title, j->fs, sz,
                 strstr(j->title, "Disk Target:") ? "Members" : "Disk Target",
                 r->model_name[0] ? r->model_name : "member files");
        return;
    }
    render_bs(j->bs, bs, sizeof(bs));
    render_size(j->size, sz, sizeof(sz));
    if (j->rwmixread > 0)
        snprintf(mix, sizeof(mix), " - Read Mix: %d%%", j->rwmixread);
    snprintf(buf, len,
             "fio %s Type: %s - IO Engine: NBD - Block Size: %s - IO Depth: %d%s - "
             "Size: %s - Disk Target: %s - Result: MB/s",
             r->fio_version, j->title, bs, j->iodepth, mix, sz,
             r->model_name[0] ? r->model_name : "member files");
}

/* One row of a text table: a measured configuration or a published (seed) figure. */
struct render_row {
    char label[64];
    char val[32];
    double mean;
    bool host_bound;
    const struct bench_cell *cell; /* measured rows: the cell (model, RSD); NULL for seed rows */
    double seed;                   /* the seed row of the same label, MB/s; 0 = none */
    const struct render_seed_reason *why; /* model / seed reason; NULL = none */
};

/* The rows of job's table: measured configurations, then the suite's seed rows. Returns n. */
static int render_rows(const struct bench_report *r, int job, struct render_row *rows)
{
    int n = 0;
    for (int c = 0; c < r->nconfigs; c++) {
        if (!render_has_row(r, c, job))
            continue;
        const struct bench_cell *cell = &r->cells[c][job];
        snprintf(rows[n].label, sizeof(rows[n].label), "%s", r->configs[c].label);
        rows[n].mean = cell->mean;
        rows[n].cell = cell;
        rows[n].seed = render_seed_mbs(r, c, job);
        rows[n].why = render_model_seed_reason(r, c, job);
        rows[n++].host_bound = cell->host_bound;
    }
    const struct bench_job *bj = &r->suite->jobs[job];
    for (int i = 0; i < bj->nseed; i++) {
        if (bj->seed[i].ref_only)
            continue;
        snprintf(rows[n].label, sizeof(rows[n].label), "%s (seed)", bj->seed[i].label);
        rows[n].mean = bj->seed[i].mbs;
        rows[n].cell = NULL;
        rows[n].seed = 0;
        rows[n].why = NULL;
        rows[n++].host_bound = false;
    }
    for (int i = 0; i < n; i++)
        snprintf(rows[i].val, sizeof(rows[i].val), "%.2f", rows[i].mean);
    return n;
}

/* Lines under a table: the warm-up used and the cache hit ratio of every cache row. */
static void render_text_cache(const struct bench_report *r, int job, FILE *f)
{
    const struct bench_job *bj = &r->suite->jobs[job];
    if (bj->warmup > 0)
        fprintf(f,
                "Warm-up: %d passes of %uKB random reads (iodepth %d) over the %lluMB region "
                "before the first trial\n",
                bj->warmup, BENCH_WARMUP_BS >> 10, BENCH_WARMUP_IODEPTH,
                (unsigned long long)(bj->size >> 20));
    for (int c = 0; c < r->nconfigs; c++) {
        const struct bench_cell *cell = &r->cells[c][job];
        if (!render_has_row(r, c, job) || !cell->has_cache)
            continue;
        double rp = bench_hit_pct(cell->read_hits, cell->read_misses);
        double wp = bench_hit_pct(cell->write_hits, cell->write_misses);
        char rs[32] = "-", ws[32] = "-";
        if (rp >= 0)
            snprintf(rs, sizeof(rs), "%.1f%%", rp);
        if (wp >= 0)
            snprintf(ws, sizeof(ws), "%.1f%%", wp);
        fprintf(f, "Cache hit ratio, %s: read %s, write %s\n", r->configs[c].label, rs, ws);
    }
}

/* After the bar of a measured row (the seed layout stays as it is before it): the model's
 * prediction and the seed's figure of the same label with the ratio measured/seed. Sets *model
 * when printed, and *noisy when the RSD stayed above BENCH_RSD_LIMIT (the row is named under the
 * table). */
static void render_text_extra(const struct render_row *row, FILE *f, bool *noisy, bool *model)
{
    const struct bench_cell *cell = row->cell;
    if (!cell)
        return;
    if (cell->model_mbs > 0) {
        fprintf(f, "  [model %.2f]", cell->model_mbs);
        *model = true;
    }
    if (row->seed > 0)
        fprintf(f, "  [seed %.2f, x%.2f]", row->seed, row->mean / row->seed);
    if (render_noisy(cell))
        *noisy = true; /* named under the table: the bar line stays as the seed's */
}

/* The "~ noisy:" line under a table: every row's label, RSD and trial count. */
static void render_text_noisy(const struct render_row *rows, int n, FILE *f)
{
    fprintf(f,
            "~ noisy: the relative standard deviation stayed above %.1f%% after the most "
            "trials allowed, the mean is uncertain:",
            BENCH_RSD_LIMIT);
    for (int i = 0; i < n; i++) {
        const struct bench_cell *cell = rows[i].cell;
        if (cell && render_noisy(cell))
            fprintf(f, " %s %.1f%% (%d trials);", rows[i].label, cell->rsd, cell->ntrials);
    }
    fputc('\n', f);
}

/* Lines under a table: how a configuration differs from the study it is compared with (seed 000's
 * btrfs profiles), once per configuration shown. */
static void render_text_mapping(const struct bench_report *r, int job, FILE *f)
{
    char buf[300];
    for (int c = 0; c < r->nconfigs; c++)
        if (render_has_row(r, c, job) && render_mapping(r, c, buf, sizeof(buf))[0])
            fprintf(f, "%s\n", buf);
}

/* Under a table, once: the legend of the model/seed codes its rows use, and the missing
 * prediction of a filesystem table. */
static void render_text_seed_legend(const struct bench_report *r, int job,
                                    const struct render_row *rows, int n, FILE *f)
{
    const struct render_seed_reason *t = render_seed_reason_table();
    bool head = false;
    for (int i = 0; i < n; i++) {
        if (!rows[i].why)
            continue;
        if (!head)
            fprintf(f,
                    "model/seed (the prediction over the seed's figure, and why it is that far):");
        head = true;
        fprintf(f, " %s x%.2f %s;", rows[i].label, rows[i].cell->model_mbs / rows[i].seed,
                rows[i].why->code);
    }
    if (head)
        fputc('\n', f);
    for (int k = 0; t[k].code; k++) {
        bool used = false;
        for (int i = 0; i < n; i++)
            used |= rows[i].why == &t[k];
        if (!used)
            continue;
        fprintf(f, "  %s %s (docs/BENCHMARKS.md \"Model against the seed\")\n", t[k].code,
                t[k].words);
    }
    if (r->suite->jobs[job].tool[0])
        fprintf(f, "%s.\n", RENDER_NO_FS_MODEL);
}

/* Footer lines explaining the marks used in the table. */
static void render_text_footer(FILE *f, bool any_hb, bool model)
{
    if (any_hb)
        fprintf(f,
                "* %s. The figure of a * row is what this host reached, not what the RAID "
                "layout allows: read the [model] column for that.\n",
                RENDER_HOST_BOUND_NOTE);
    if (model)
        fprintf(f, "[model X]: the MB/s the device model allows for the member I/O the trials "
                   "caused (docs/BENCHMARKS.md \"Device models\").\n");
}

int bench_render_text_job(const struct bench_report *r, int job, FILE *f)
{
    char head[512];
    struct render_row rows[BENCH_MAX_CONFIGS + BENCH_MAX_SEED_ROWS];
    size_t namew = 0, valw = 0;
    double max = 0.0;
    bool any_hb = false, noisy = false, model = false;
    bench_job_heading(r, job, head, sizeof(head));
    const struct bench_job *bj = &r->suite->jobs[job];
    fprintf(f, "%s\n%s > %s Is Better\n", head, bj->unit[0] ? bj->unit : "MB/s",
            bj->lower_better ? "Lower" : "Higher");
    int n = render_rows(r, job, rows);
    for (int i = 0; i < n; i++) {
        if (strlen(rows[i].label) > namew)
            namew = strlen(rows[i].label);
        if (strlen(rows[i].val) > valw)
            valw = strlen(rows[i].val);
        if (rows[i].mean > max)
            max = rows[i].mean;
    }
    /* Seed layout: label, a space, dots up to the longest label + 2, a space, the value, " |",
     * and bars scaled so that the largest value's row is BENCH_BAR_WIDTH characters wide. */
    int maxbars = BENCH_BAR_WIDTH - (int)(namew + 2) - 1 - (int)valw - 2;
    if (maxbars < 10)
        maxbars = 10;
    for (int i = 0; i < n; i++) {
        size_t ln = strlen(rows[i].label);
        fprintf(f, "%s ", rows[i].label);
        for (size_t k = ln; k < namew + 1; k++)
            fputc('.', f);
        fprintf(f, " %s |", rows[i].val);
        int bars = max > 0 ? (int)floor(rows[i].mean / max * maxbars + 0.5) : 0;
        for (int k = 0; k < bars; k++)
            fputc('=', f);
        if (rows[i].host_bound) {
            fputs(" *", f);
            any_hb = true;
        }
        render_text_extra(&rows[i], f, &noisy, &model);
        fputc('\n', f);
    }
    render_text_footer(f, any_hb, model);
    render_text_seed_legend(r, job, rows, n, f);
    if (noisy)
        render_text_noisy(rows, n, f);
    render_text_mapping(r, job, f);
    if (r->suite->jobs[job].note[0])
        fprintf(f, "Note: %s\n", r->suite->jobs[job].note);
    render_text_seed_pairs(r, job, f);
    render_text_cache(r, job, f);
    return ferror(f) ? -EIO : 0;
}

int bench_render_text(const struct bench_report *r, FILE *f)
{
    for (int j = 0; j < r->suite->njobs; j++) {
        if (j > 0)
            fputc('\n', f);
        bench_render_text_job(r, j, f);
    }
    bench_render_text_risk(r, f);
    bool first = true;
    for (int c = 0; c < r->nconfigs; c++) {
        if (!r->configs[c].skipped)
            continue;
        if (first)
            fputs("\nSkipped:\n", f);
        first = false;
        fprintf(f, "  %s: %s\n", r->configs[c].name, r->configs[c].note);
    }
    first = true;
    for (int c = 0; c < r->nconfigs; c++) {
        for (int j = 0; j < r->suite->njobs; j++) {
            const struct bench_cell *cell = &r->cells[c][j];
            if (r->configs[c].skipped || cell->ntrials > 0 || !cell->note[0] || cell->skipped)
                continue;
            if (first)
                fputs("\nFailed:\n", f);
            first = false;
            fprintf(f, "  %s %s: %s\n", r->configs[c].name, r->suite->jobs[j].name, cell->note);
        }
    }
    for (int c = 0; c < r->nconfigs; c++) { /* checks after the trials (job_fs.c) */
        if (!r->configs[c].failed)
            continue;
        if (first)
            fputs("\nFailed:\n", f);
        first = false;
        fprintf(f, "  %s: %s\n", r->configs[c].name, r->configs[c].note);
    }
    first = true; /* filesystem jobs not run on a configuration, and why */
    for (int c = 0; c < r->nconfigs; c++) {
        for (int j = 0; j < r->suite->njobs; j++) {
            if (r->configs[c].skipped || !r->cells[c][j].skipped)
                continue;
            if (first)
                fputs("\nSkipped jobs:\n", f);
            first = false;
            fprintf(f, "  %s %s: %s\n", r->configs[c].name, r->suite->jobs[j].name,
                    r->cells[c][j].note);
        }
    }
    if (r->interrupted)
        fputs("\nInterrupted: partial results.\n", f);
    return ferror(f) ? -EIO : 0;
}

static cJSON *render_num_array(const double *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(round(v[i] * 1000.0) / 1000.0));
    return a;
}

/* "cache": the hit counters of a cache row's trials and their ratios (percent, null if none). */
static void render_json_cache(cJSON *x, const struct bench_cell *cell)
{
    cJSON *c = cJSON_AddObjectToObject(x, "cache");
    double rp = bench_hit_pct(cell->read_hits, cell->read_misses);
    double wp = bench_hit_pct(cell->write_hits, cell->write_misses);
    cJSON_AddNumberToObject(c, "read_hits", (double)cell->read_hits);
    cJSON_AddNumberToObject(c, "read_misses", (double)cell->read_misses);
    cJSON_AddNumberToObject(c, "write_hits", (double)cell->write_hits);
    cJSON_AddNumberToObject(c, "write_misses", (double)cell->write_misses);
    cJSON_AddItemToObject(c, "read_hit_pct",
                          rp < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(round(rp * 10) / 10));
    cJSON_AddItemToObject(c, "write_hit_pct",
                          wp < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(round(wp * 10) / 10));
}

/* The JSON object of job j: its settings and one result per measured configuration. */
static cJSON *render_json_job(const struct bench_report *r, int j)
{
    const struct bench_job *bj = &r->suite->jobs[j];
    cJSON *o = cJSON_CreateObject();
    char head[512];
    bench_job_heading(r, j, head, sizeof(head));
    cJSON_AddStringToObject(o, "name", bj->name);
    cJSON_AddStringToObject(o, "title", bj->title);
    cJSON_AddStringToObject(o, "heading", head);
    cJSON_AddStringToObject(o, "rw", bj->rw);
    cJSON_AddNumberToObject(o, "bs", bj->bs);
    cJSON_AddNumberToObject(o, "iodepth", bj->iodepth);
    cJSON_AddNumberToObject(o, "size", (double)bj->size);
    cJSON_AddNumberToObject(o, "ramp_s", bj->ramp);
    cJSON_AddNumberToObject(o, "runtime_s", bj->runtime);
    cJSON_AddNumberToObject(o, "rwmixread", bj->rwmixread);
    cJSON_AddNumberToObject(o, "warmup_passes", bj->warmup);
    if (bj->note[0])
        cJSON_AddStringToObject(o, "note", bj->note);
    if (bj->tool[0]) { /* a filesystem job */
        cJSON_AddStringToObject(o, "kind", "fs");
        cJSON_AddStringToObject(o, "tool", bj->tool);
        cJSON_AddStringToObject(o, "fs", bj->fs);
        cJSON_AddNumberToObject(o, "fs_size", (double)bj->fs_size);
        cJSON_AddStringToObject(o, "args", bj->args);
        if (bj->metric[0])
            cJSON_AddStringToObject(o, "metric", bj->metric);
    }
    if (bj->fio_extra[0])
        cJSON_AddStringToObject(o, "fio_extra", bj->fio_extra);
    if (!bj->tool[0] || !strcmp(bj->tool, "fio")) {
        char cmd[1024];
        bench_fio_cmdline(bj, !bj->tool[0], cmd, sizeof(cmd));
        cJSON_AddStringToObject(o, "fio_command", cmd);
    }
    cJSON_AddStringToObject(o, "unit", bj->unit[0] ? bj->unit : "MB/s");
    cJSON_AddBoolToObject(o, "lower_is_better", bj->lower_better);
    cJSON *seed = cJSON_AddArrayToObject(o, "seed_rows");
    for (int i = 0; i < bj->nseed; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "label", bj->seed[i].label);
        cJSON_AddNumberToObject(x, "mbs", bj->seed[i].mbs);
        cJSON_AddBoolToObject(x, "ref_only", bj->seed[i].ref_only);
        int sc = render_seed_config(r, j, i); /* the configuration whose row carries it */
        cJSON_AddItemToObject(
            x, "config", sc < 0 ? cJSON_CreateNull() : cJSON_CreateString(r->configs[sc].name));
        cJSON_AddItemToArray(seed, x);
    }
    if (r->suite->jobs[j].tool[0])
        cJSON_AddStringToObject(o, "prediction_note", RENDER_NO_FS_MODEL);
    else
        cJSON_AddNullToObject(o, "prediction_note");
    cJSON *res = cJSON_AddArrayToObject(o, "results");
    for (int c = 0; c < r->nconfigs; c++) {
        if (!render_has_row(r, c, j))
            continue;
        const struct bench_cell *cell = &r->cells[c][j];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "config", r->configs[c].name);
        cJSON_AddNumberToObject(x, "mean", round(cell->mean * 1000.0) / 1000.0);
        cJSON_AddNumberToObject(x, "stddev", round(cell->sd * 1000.0) / 1000.0);
        cJSON_AddNumberToObject(x, "stderr", round(cell->se * 1000.0) / 1000.0);
        cJSON_AddNumberToObject(x, "rsd_pct", round(cell->rsd * 100.0) / 100.0);
        cJSON_AddItemToObject(x, "trials", render_num_array(cell->trials, cell->ntrials));
        cJSON_AddItemToObject(x, "read_trials", render_num_array(cell->read_mbs, cell->ntrials));
        cJSON_AddItemToObject(x, "write_trials", render_num_array(cell->write_mbs, cell->ntrials));
        if (cell->model_mbs > 0)
            cJSON_AddNumberToObject(x, "model_mbs", round(cell->model_mbs * 1000.0) / 1000.0);
        cJSON_AddBoolToObject(x, "host_bound", cell->host_bound);
        render_json_row_extra(x, r, c, j);
        if (cell->has_cache)
            render_json_cache(x, cell);
        cJSON_AddStringToObject(
            x, "note", cell->host_bound && !cell->note[0] ? RENDER_HOST_BOUND_NOTE : cell->note);
        cJSON_AddItemToArray(res, x);
    }
    return o;
}

char *bench_render_json(const struct bench_report *r)
{
    const struct bench_suite *s = r->suite;
    char *out = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "schema", "raidkit-bench-report/1");
    cJSON_AddStringToObject(root, "raidkit_version", r->raidkit_version);
    cJSON_AddStringToObject(root, "fio_version", r->fio_version);
    cJSON_AddStringToObject(root, "started", r->started);
    cJSON_AddStringToObject(root, "finished", r->finished);
    cJSON_AddBoolToObject(root, "interrupted", r->interrupted);
    cJSON_AddStringToObject(root, "unit", "MB/s");
    cJSON_AddNumberToObject(root, "min_trials", r->min_trials);
    cJSON_AddNumberToObject(root, "rsd_limit_pct", BENCH_RSD_LIMIT);
    cJSON_AddNumberToObject(root, "members", r->members);
    cJSON_AddStringToObject(root, "target", r->target);

    cJSON *su = cJSON_AddObjectToObject(root, "suite");
    cJSON_AddStringToObject(su, "name", s->name);
    cJSON_AddStringToObject(su, "description", s->description);
    cJSON_AddStringToObject(su, "reproduces", s->reproduces);
    cJSON_AddStringToObject(su, "file", s->path);

    cJSON *m = cJSON_AddObjectToObject(root, "machine");
    cJSON_AddStringToObject(m, "cpu_model", r->machine.cpu_model);
    cJSON_AddNumberToObject(m, "cores", r->machine.cores);
    cJSON_AddNumberToObject(m, "memory_bytes", (double)r->machine.memory_bytes);
    cJSON_AddStringToObject(m, "kernel", r->machine.kernel);

    cJSON *model = r->model_json ? cJSON_Parse(r->model_json) : NULL;
    cJSON_AddItemToObject(root, "model", model ? model : cJSON_CreateNull());

    cJSON *cfgs = cJSON_AddArrayToObject(root, "configs");
    for (int c = 0; c < r->nconfigs; c++) {
        const struct bench_config *bc = &r->configs[c];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", bc->name);
        cJSON_AddStringToObject(o, "label", bc->label);
        cJSON_AddStringToObject(o, "kind", bc->kind);
        cJSON_AddNumberToObject(o, "members", bc->members);
        if (!strcmp(bc->kind, "raidkit")) /* backend_raidkit.c creates with the default */
            cJSON_AddNumberToObject(o, "chunk_bytes", RK_CHUNK_DEFAULT);
        cJSON_AddStringToObject(o, "member_profile", r->model_name[0] ? r->model_name : "files");
        cJSON_AddBoolToObject(o, "skipped", bc->skipped);
        cJSON_AddBoolToObject(o, "failed", bc->failed);
        cJSON_AddStringToObject(o, "note", bc->note);
        if (bc->has_risk) { /* render_risk.c; infinite MTTDL as null */
            cJSON *k = cJSON_AddObjectToObject(o, "risk");
            cJSON_AddNumberToObject(k, "rebuild_hours", bc->rebuild_hours);
            cJSON_AddNumberToObject(k, "p_loss_rebuild", bc->p_loss_rebuild);
            if (isfinite(bc->mttdl_hours))
                cJSON_AddNumberToObject(k, "mttdl_hours", bc->mttdl_hours);
            else
                cJSON_AddNullToObject(k, "mttdl_hours");
            cJSON_AddNumberToObject(k, "p_loss_5y", bc->p_loss_5y);
        }
        cJSON_AddItemToArray(cfgs, o);
    }

    cJSON *jobs = cJSON_AddArrayToObject(root, "jobs");
    for (int j = 0; j < s->njobs; j++)
        cJSON_AddItemToArray(jobs, render_json_job(r, j));
    /* Cells that produced no trial because fio failed: said, not silently dropped. */
    cJSON *fails = cJSON_AddArrayToObject(root, "failures");
    for (int c = 0; c < r->nconfigs; c++) {
        for (int j = 0; j < s->njobs; j++) {
            const struct bench_cell *cell = &r->cells[c][j];
            if (r->configs[c].skipped || cell->ntrials > 0 || !cell->note[0])
                continue;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "config", r->configs[c].name);
            cJSON_AddStringToObject(x, "job", s->jobs[j].name);
            cJSON_AddStringToObject(x, "note", cell->note);
            cJSON_AddBoolToObject(x, "skipped", cell->skipped);
            cJSON_AddItemToArray(fails, x);
        }
    }
    out = cJSON_Print(root);
    cJSON_Delete(root);
    return out;
}

void render_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int bench_render_csv(const struct bench_report *r, FILE *f)
{
    fputs(
        "suite,job,title,rw,bs,iodepth,config,label,trials,mean_mbs,stderr_mbs,stddev_mbs,rsd_pct,"
        "host_bound,raw_trials_mbs,note,model_mbs,host_bound_words,seed_mbs,seed_ratio,p50_us,"
        "p99_us,noisy,mttdl_hours,p_loss_rebuild,seed_label,table_note\n",
        f);
    for (int j = 0; j < r->suite->njobs; j++) {
        const struct bench_job *bj = &r->suite->jobs[j];
        for (int c = 0; c < r->nconfigs; c++) {
            if (!render_has_row(r, c, j))
                continue;
            const struct bench_cell *cell = &r->cells[c][j];
            render_csv_field(f, r->suite->name);
            fputc(',', f);
            render_csv_field(f, bj->name);
            fputc(',', f);
            render_csv_field(f, bj->title);
            fprintf(f, ",%s,%u,%d,", bj->rw, bj->bs, bj->iodepth);
            render_csv_field(f, r->configs[c].name);
            fputc(',', f);
            render_csv_field(f, r->configs[c].label);
            fprintf(f, ",%d,%.3f,%.3f,%.3f,%.2f,%s,", cell->ntrials, cell->mean, cell->se, cell->sd,
                    cell->rsd, cell->host_bound ? "yes" : "no");
            for (int t = 0; t < cell->ntrials; t++)
                fprintf(f, "%s%.3f", t ? " " : "", cell->trials[t]);
            fputc(',', f);
            render_csv_field(f, render_cell_note(r, c, j));
            render_csv_row_extra(f, r, c, j);
            fputc(',', f);
            render_csv_field(f, bj->note);
            fputc('\n', f);
        }
    }
    return ferror(f) ? -EIO : 0;
}

int bench_parse_formats(const char *list, unsigned *fmt)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"text", BENCH_FMT_TEXT}, {"json", BENCH_FMT_JSON}, {"csv", BENCH_FMT_CSV},
                 {"svg", BENCH_FMT_SVG},   {"html", BENCH_FMT_HTML}, {"all", BENCH_FMT_ALL}};
    unsigned out = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        bool ok = false;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if (strlen(names[i].name) == n && !strncmp(p, names[i].name, n)) {
                out |= names[i].bit;
                ok = true;
            }
        }
        if (!ok)
            return -EINVAL;
        p += n;
        if (*p == ',')
            p++;
    }
    if (!out)
        return -EINVAL;
    *fmt = out;
    return 0;
}

/* Open dir/name for writing. */
static FILE *render_open(const char *dir, const char *name, char *err, size_t errlen)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        rk_set_err(err, errlen, "%s: %s", path, strerror(errno));
    return f;
}

static int render_close(FILE *f, int r)
{
    if (fclose(f) != 0 && r == 0)
        r = -EIO;
    return r;
}

int bench_write_reports(const struct bench_report *r, const char *dir, unsigned fmt, char *err,
                        size_t errlen)
{
    int ret = 0;
    FILE *f;
    char path[1024];
    /* mkdir -p: the output directory may be nested (demo-run/bench). */
    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        rk_set_err(err, errlen, "%s: %s", dir, strerror(errno));
        return -errno;
    }
    if (fmt & BENCH_FMT_TEXT) {
        if (!(f = render_open(dir, "report.txt", err, errlen)))
            return -EIO;
        if ((ret = render_close(f, bench_render_text(r, f))) < 0)
            goto out;
    }
    if (fmt & BENCH_FMT_JSON) {
        char *js = bench_render_json(r);
        if (!js) {
            ret = -ENOMEM;
            goto out;
        }
        if (!(f = render_open(dir, "report.json", err, errlen))) {
            free(js);
            return -EIO;
        }
        fputs(js, f);
        fputc('\n', f);
        free(js);
        if ((ret = render_close(f, 0)) < 0)
            goto out;
    }
    if (fmt & BENCH_FMT_CSV) {
        if (!(f = render_open(dir, "report.csv", err, errlen)))
            return -EIO;
        if ((ret = render_close(f, bench_render_csv(r, f))) < 0)
            goto out;
    }
    if (fmt & BENCH_FMT_SVG) {
        for (int j = 0; j < r->suite->njobs; j++) {
            char name[64];
            snprintf(name, sizeof(name), "%s.svg", r->suite->jobs[j].name);
            if (!(f = render_open(dir, name, err, errlen)))
                return -EIO;
            if ((ret = render_close(f, bench_render_svg(r, j, f))) < 0)
                goto out;
        }
    }
    if (fmt & BENCH_FMT_HTML) {
        if (!(f = render_open(dir, "report.html", err, errlen)))
            return -EIO;
        if ((ret = render_close(f, bench_render_html(r, f))) < 0)
            goto out;
    }
out:
    if (ret < 0 && err && !err[0])
        rk_set_err(err, errlen, "%s: write failed: %s", dir, strerror(-ret));
    return ret;
}
