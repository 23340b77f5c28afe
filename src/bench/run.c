/* raidkit bench runner: plans the configurations (through the back-end table), brings each up,
 * runs the suite's fio trials against it with progress and ETA on stderr, and writes the
 * reports. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/risk.h"
#include "bench/job_fs.h"
#include "bench/run.h"
#include "core/util.h"
#include "raidkit/emul.h"
#include "raidkit/version.h"

/* Bytes added to every member beyond the suite's size: superblock and reserved area. */
#define RUN_MEMBER_SLACK (64ull << 20)
/* Seconds a trial costs beyond ramp + runtime (fio start, connect, JSON), for the ETA. */
#define RUN_TRIAL_OVERHEAD 0.5

const struct bench_backend *const bench_backends[] = {&bench_backend_raidkit,
                                                      &bench_backend_noop,
                                                      &bench_backend_nbdkit,
                                                      &bench_backend_btrfs,
                                                      &bench_backend_cache,
                                                      &bench_backend_plain,
                                                      NULL};

const struct bench_backend *bench_backend_find(const char *kind)
{
    for (const struct bench_backend *const *b = bench_backends; *b; b++)
        if (!strcmp((*b)->kind, kind))
            return *b;
    return NULL;
}

void *run_priv_new(struct run_target *t, size_t size, char *err, size_t errlen)
{
    t->priv = calloc(1, size);
    if (!t->priv)
        rk_set_err(err, errlen, "out of memory");
    return t->priv;
}

void run_socket_path(const struct run_ctx *x, char *buf, size_t len)
{
    snprintf(buf, len, "%.500s/nbd.sock", x->work);
}

/* Add configuration name (a --configs entry) to the report, described by its back-end. */
static int run_add_config(struct bench_report *rep, const char *name, int members, char *err,
                          size_t errlen)
{
    if (rep->nconfigs >= BENCH_MAX_CONFIGS) {
        rk_set_err(err, errlen, "too many configurations (at most %d)", BENCH_MAX_CONFIGS);
        return -EINVAL;
    }
    for (int c = 0; c < rep->nconfigs; c++) {
        if (!strcmp(rep->configs[c].name, name)) {
            rk_set_err(err, errlen, "configuration '%s' given twice", name);
            return -EINVAL;
        }
    }
    struct bench_config *bc = &rep->configs[rep->nconfigs];
    memset(bc, 0, sizeof(*bc));
    snprintf(bc->name, sizeof(bc->name), "%s", name);
    for (const struct bench_backend *const *b = bench_backends; *b; b++) {
        if ((*b)->describe(bc, name, members)) {
            snprintf(bc->kind, sizeof(bc->kind), "%s", (*b)->kind);
            rep->nconfigs++;
            return 0;
        }
    }
    char names[256] = "";
    for (const struct bench_backend *const *b = bench_backends; *b; b++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                 b == bench_backends ? "" : ", ", (*b)->names);
    rk_set_err(err, errlen, "unknown configuration '%s' (%s)", name, names);
    return -EINVAL;
}

/* ---- ETA: planned seconds of trials left, scaled by how long trials really took ---- */

static double run_trial_cost(const struct bench_job *j)
{
    return j->ramp + j->runtime + RUN_TRIAL_OVERHEAD;
}

/* Add (trials > 0) or drop (trials < 0) planned trials: of job j, or of every job if j is NULL. */
void run_eta_plan(struct run_ctx *x, const struct bench_job *j, int trials)
{
    for (int i = 0; i < x->suite.njobs; i++)
        if (!j || j == &x->suite.jobs[i])
            x->est_left += trials * run_trial_cost(&x->suite.jobs[i]);
}

/* A trial of j has run (planned: it was in the plan, not an extension); the ETA as text. */
void run_eta_trial(struct run_ctx *x, const struct bench_job *j, bool planned, char *buf,
                   size_t len)
{
    if (planned)
        run_eta_plan(x, j, -1);
    x->cost_done += run_trial_cost(j);
    /* Scale the plan by how long trials really took (start-up, a busy machine). */
    double scale = x->cost_done > 0 ? (run_mono() - x->t0) / x->cost_done : 1.0;
    double s = x->est_left * (scale > 1.0 ? scale : 1.0);
    long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else
        snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
}

/* ---- trials ---- */

/* Whether cell needs another trial: exactly up to stop with extra > 0, else the extension rule. */
bool run_cell_more(const struct run_ctx *x, const struct bench_cell *cell, int extra, int stop)
{
    if (extra > 0)
        return cell->ntrials < stop;
    return bench_need_more(cell->trials, cell->ntrials, x->rep->min_trials, BENCH_RSD_LIMIT) &&
           cell->ntrials < x->max_trials;
}

/* Record one trial of rd + wr MB/s (and the model's figure) in cell. */
void run_cell_add(struct bench_cell *cell, double rd, double wr, double model)
{
    int k = cell->ntrials++;
    cell->trials[k] = rd + wr;
    cell->read_mbs[k] = rd;
    cell->write_mbs[k] = wr;
    cell->done = true;
    if (model > 0) {
        cell->model_sum += model;
        cell->model_n++;
    }
}

/* Fold one trial's clat percentiles (lat[0] p50, lat[1] p99, microseconds; 0 = none) into the
 * cell's means. */
static void run_cell_lat(struct bench_cell *cell, const double lat[2])
{
    if (lat[0] <= 0)
        return;
    cell->p50_us = (cell->p50_us * cell->lat_n + lat[0]) / (cell->lat_n + 1);
    cell->p99_us = (cell->p99_us * cell->lat_n + lat[1]) / (cell->lat_n + 1);
    cell->lat_n++;
}

/* Warm-up of job j on configuration c before its first trial (job->warmup passes of random
 * BENCH_WARMUP_BS reads over the job's region, every block once per pass): a cache admits a
 * block on a repeated miss, so the hot-set jobs measure a warm cache. */
static void run_warmup(struct run_ctx *x, const struct bench_config *bc,
                       const struct bench_job *job, const struct run_target *t)
{
    struct bench_job w = *job;
    char err[300] = "";
    double rd = 0, wr = 0, t0 = run_mono();
    snprintf(w.name, sizeof(w.name), "warmup");
    snprintf(w.rw, sizeof(w.rw), "randread");
    w.bs = BENCH_WARMUP_BS;
    w.iodepth = BENCH_WARMUP_IODEPTH;
    w.rwmixread = 0;
    w.loops = job->warmup;
    int r = run_fio(x, &w, t, &rd, &wr, err, sizeof(err));
    if (r < 0 && r != -EINTR)
        fprintf(stderr, "[bench] %s %s warm-up: %s\n", bc->name, job->name, err);
    else if (r == 0)
        fprintf(stderr, "[bench] %-10s %-12s warm-up: %d passes of %uKB random reads, %.1f s\n",
                bc->name, job->name, w.loops, w.bs >> 10, run_mono() - t0);
}

/* The cache hit counters of t after a trial, added to cell as the difference to h0 (taken
 * before the trial; h0_ok: known). */
static void run_cell_hits(const struct bench_backend *be, const struct run_target *t,
                          const uint64_t h0[4], bool h0_ok, struct bench_cell *cell)
{
    uint64_t h1[4];
    if (h0_ok && be->hits(t, h1) == 0)
        run_cell_add_hits(cell, h0, h1);
}

void run_cell_add_hits(struct bench_cell *cell, const uint64_t h0[4], const uint64_t h1[4])
{
    cell->has_cache = true;
    cell->read_hits += h1[0] - h0[0];
    cell->read_misses += h1[1] - h0[1];
    cell->write_hits += h1[2] - h0[2];
    cell->write_misses += h1[3] - h0[3];
}

/* Measure every job of the suite on configuration c (up as t, back-end be). With extra > 0, run
 * exactly extra more trials per job instead (the ceiling's second pass). */
static void run_config_jobs(struct run_ctx *x, int c, const struct bench_backend *be,
                            const struct run_target *t, int extra)
{
    struct bench_report *rep = x->rep;
    const struct bench_config *bc = &rep->configs[c];
    for (int j = 0; j < x->suite.njobs && !run_interrupted; j++) {
        const struct bench_job *job = &x->suite.jobs[j];
        struct bench_cell *cell = &rep->cells[c][j];
        if (job->tool[0])
            continue; /* filesystem jobs: fsjob_config, after the raw jobs */
        int stop =
            cell->ntrials + extra < BENCH_MAX_TRIALS ? cell->ntrials + extra : BENCH_MAX_TRIALS;
        if (job->warmup > 0 && extra == 0 && cell->ntrials == 0)
            run_warmup(x, bc, job, t);
        while (!run_interrupted && run_cell_more(x, cell, extra, stop)) {
            double rd = 0, wr = 0;
            char err[300] = "", eta[32], mod[48] = "";
            struct run_counts k0 = {0}, k1 = {0};
            uint64_t h0[4];
            bool h0_ok = be->hits && be->hits(t, h0) == 0;
            if (be->counts)
                be->counts(t, &k0);
            int r = run_fio(x, job, t, &rd, &wr, err, sizeof(err));
            if (be->counts)
                be->counts(t, &k1);
            if (r == 0)
                run_cell_hits(be, t, h0, h0_ok, cell);
            if (r == -EINTR || run_interrupted)
                break;
            if (r < 0) {
                snprintf(cell->note, sizeof(cell->note), "%.*s", (int)sizeof(cell->note) - 1, err);
                fprintf(stderr, "[bench] %s %s: %s\n", bc->name, job->name, err);
                break;
            }
            double model = run_model_mbs(x, &k0, &k1);
            bool hdd = x->have_emul && x->emul.kind == RK_EMUL_HDD; /* no closed form */
            if (model > 0 || hdd) { /* the prediction: the model's simulated closed loop */
                struct run_sim_in in = {.p = &x->emul,
                                        .level = bc->level,
                                        .iodepth = job->iodepth,
                                        .span = job->size,
                                        .seq = strstr(job->rw, "rand") == NULL,
                                        .rfrac = rd + wr > 0 ? rd / (rd + wr) : 0,
                                        .geom = k1.geom.members ? &k1.geom : NULL};
                double sim = run_model_sim(&in, &k0, &k1);
                model = sim > 0 ? sim : model;
            }
            run_cell_add(cell, rd, wr, model);
            run_cell_lat(cell, x->lat);
            run_eta_trial(x, job, cell->ntrials <= rep->min_trials || extra > 0, eta, sizeof(eta));
            bool more = run_cell_more(x, cell, extra, stop);
            if (model > 0)
                snprintf(mod, sizeof(mod), " model %.0f,", model);
            fprintf(stderr,
                    "[bench] %-10s %-12s trial %d/%d: %9.2f MB/s  (%s RSD %.1f%%)  ETA %s\n",
                    bc->name, job->name, cell->ntrials,
                    more && cell->ntrials >= rep->min_trials ? cell->ntrials + 1
                    : cell->ntrials < rep->min_trials        ? rep->min_trials
                                                             : cell->ntrials,
                    rd + wr, mod, bench_rsd(cell->trials, cell->ntrials), eta);
        }
        /* Planned trials not run (failure, interruption) leave the ETA. */
        int planned = extra > 0 ? stop : rep->min_trials;
        if (cell->ntrials < planned)
            run_eta_plan(x, job, cell->ntrials - planned);
    }
}

/* Bring configuration c up, measure it (again: the ceiling's second pass) and take it down. */
static void run_one_config(struct run_ctx *x, int c, bool again)
{
    struct bench_report *rep = x->rep;
    struct bench_config *bc = &rep->configs[c];
    const struct bench_backend *be = bench_backend_find(bc->kind);
    struct run_target t = {0};
    char err[512] = "";
    if (again && bc->skipped) {
        run_eta_plan(x, NULL, -rep->min_trials);
        return;
    }
    if (!again && !fsjob_suite_has_raw(&x->suite)) { /* only filesystem jobs */
        fsjob_config(x, c);
        return;
    }
    int r = be->start(x, bc, &t, err, sizeof(err));
    if (r < 0) {
        bc->skipped = true;
        snprintf(bc->note, sizeof(bc->note), "skipped: %.*s", (int)sizeof(bc->note) - 10,
                 err[0] ? err : strerror(-r));
        fprintf(stderr, "[bench] %s %s\n", bc->name, bc->note);
        run_eta_plan(x, NULL, -rep->min_trials);
    } else {
        if (!be->modelled && !be->ceiling && x->have_emul)
            snprintf(bc->note, sizeof(bc->note), "%s",
                     be->own_models ? "its own models, not --model's" : "plain file, not modelled");
        fprintf(stderr, "[bench] %s: up (%s)\n", bc->name, t.uri[0] ? t.uri : t.filename);
        run_config_jobs(x, c, be, &t, again ? rep->min_trials : 0);
    }
    be->stop(x, &t);
    char sock[600];
    run_socket_path(x, sock, sizeof(sock));
    unlink(sock);
    /* Filesystem jobs on their own device, once the raw volume's members are gone. */
    if (!again && !run_interrupted && fsjob_suite_has_fs(&x->suite))
        fsjob_config(x, c);
}

/* The order of the configurations: the ceiling first, as every other row is judged against it,
 * and again at the end (its trials pooled): on a shared machine the load changes during a run,
 * and a ceiling from the busy start alone was below rows measured later (raid6 523 MB/s over a
 * noop of 360). Returns the number of entries in order; *ceiling_c is the ceiling or -1. */
static int run_order(struct run_ctx *x, int order[BENCH_MAX_CONFIGS + 1], int *ceiling_c)
{
    const struct bench_report *rep = x->rep;
    int no = 0;
    *ceiling_c = -1;
    for (int c = 0; c < rep->nconfigs; c++)
        if (bench_backend_find(rep->configs[c].kind)->ceiling)
            order[no++] = *ceiling_c = c;
    for (int c = 0; c < rep->nconfigs; c++)
        if (!bench_backend_find(rep->configs[c].kind)->ceiling)
            order[no++] = c;
    run_eta_plan(x, NULL, rep->nconfigs * rep->min_trials);
    if (*ceiling_c >= 0 && no > 1) {
        order[no++] = *ceiling_c;
        run_eta_plan(x, NULL, rep->min_trials);
    }
    return no;
}

/* ---- set-up and reports ---- */

/* Suite, trial limits, configurations and the model from the options. Returns 0, or the exit
 * status (2: usage, 1: other) after printing the reason. */
static int run_prepare(struct run_ctx *x)
{
    const struct bench_opts *o = x->o;
    struct bench_report *rep = x->rep;
    char err[512] = "";
    if (bench_suite_load(o->suite, &x->suite, err, sizeof(err)) < 0) {
        fprintf(stderr, "raidkit bench: %s\n", err);
        return 2;
    }
    rep->suite = &x->suite;
    rep->members = o->members;
    rep->min_trials = o->trials > 0 ? o->trials : 3;
    x->max_trials = x->suite.max_trials > 0 ? x->suite.max_trials : 4 * rep->min_trials;
    if (x->max_trials < rep->min_trials)
        x->max_trials = rep->min_trials;
    if (x->max_trials > BENCH_MAX_TRIALS)
        x->max_trials = BENCH_MAX_TRIALS;
    snprintf(rep->raidkit_version, sizeof(rep->raidkit_version), "%s", RK_VERSION_STRING);

    /* Configurations: the given list; with a model, the noop ceiling is measured too. */
    char list[512];
    snprintf(list, sizeof(list), "%s",
             o->configs ? o->configs : "single,linear,raid0,raid1,raid10,raid5,raid6");
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (run_add_config(rep, tok, o->members, err, sizeof(err)) < 0) {
            fprintf(stderr, "raidkit bench: %s\n", err);
            return 2;
        }
    }
    bool has_ceiling = false;
    for (int c = 0; c < rep->nconfigs; c++)
        has_ceiling |= bench_backend_find(rep->configs[c].kind)->ceiling;
    if (o->model && !has_ceiling && run_add_config(rep, "noop", o->members, err, sizeof(err)) < 0) {
        fprintf(stderr, "raidkit bench: %s\n", err);
        return 2;
    }
    if (o->model) {
        if (rk_emul_profile_load(o->model, &x->emul, err, sizeof(err)) < 0) {
            fprintf(stderr, "raidkit bench: --model %s: %s\n", o->model, err);
            return 2;
        }
        x->have_emul = true;
        snprintf(rep->model_name, sizeof(rep->model_name), "%s", x->emul.name);
        struct bench_risk_params rp;
        bench_risk_params_from_model(
            &x->emul, (double)(bench_suite_max_size(&x->suite) + RUN_MEMBER_SLACK), &rp);
        rep->have_risk = true;
        rep->risk_member_bytes = rp.member_bytes;
        rep->risk_afr = rp.afr;
        rep->risk_ure_per_bit = rp.ure_per_bit;
        rep->risk_rebuild_bps = rp.rebuild_bps;
        if (run_model_json(x) < 0)
            return 1;
    }
    if (run_fio_version(rep->fio_version, sizeof(rep->fio_version)) < 0) {
        fprintf(stderr, "raidkit bench: fio is not installed (scripts/install-deps.sh)\n");
        return 1;
    }
    bench_machine_probe(&rep->machine);
    for (int j = 0; j < x->suite.njobs; j++)
        if (x->suite.jobs[j].iodepth > x->max_iodepth)
            x->max_iodepth = x->suite.jobs[j].iodepth;
    x->member_size = bench_suite_max_size(&x->suite) + RUN_MEMBER_SLACK;
    return 0;
}

/* A private directory for members and sockets (x->work), removed at the end. */
static int run_make_work(struct run_ctx *x)
{
    const struct bench_opts *o = x->o;
    const char *base = o->dir ? o->dir : "/dev/shm";
    if (access(base, W_OK) < 0 && !o->dir)
        base = "/tmp";
    snprintf(x->work, sizeof(x->work), "%s/raidkit-bench.XXXXXX", base);
    if (!mkdtemp(x->work)) {
        fprintf(stderr, "raidkit bench: cannot create a directory in %s: %s\n", base,
                strerror(errno));
        x->work[0] = '\0';
        return -1;
    }
    if (o->model)
        snprintf(x->rep->target, sizeof(x->rep->target), "model %s (member files in %s)",
                 x->rep->model_name, base);
    else
        snprintf(x->rep->target, sizeof(x->rep->target), "member files in %s", base);
    return 0;
}

/* Remove the private work directory and anything left in it (fio files). */
static void run_cleanup_work(struct run_ctx *x)
{
    static const char *const names[] = {"fio.json", "fio.err", "nbd.sock"};
    char p[700];
    if (!x->work[0])
        return;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", x->work, names[i]);
        unlink(p);
    }
    if (rmdir(x->work) < 0)
        rk_warn("bench: could not remove %s: %s", x->work, strerror(errno));
}

/* Before the first trial: the report directory (--out) exists or can be made, and a file can be
 * created in it, so no results are lost at the end. 0, or -1 after a one-line message. */
static int run_check_out(const struct bench_opts *o)
{
    const char *outdir = o->out ? o->out : "bench-out";
    char path[1100];
    snprintf(path, sizeof(path), "%s", outdir);
    for (char *p = path + 1; *p; p++) { /* mkdir -p, as bench_write_reports does */
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "raidkit bench: --out %s: %s\n", outdir, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/.raidkit-bench-probe.%d", outdir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        fprintf(stderr, "raidkit bench: --out %s: cannot write there: %s\n", outdir,
                strerror(errno));
        return -1;
    }
    close(fd);
    unlink(path);
    return 0;
}

/* Print the text (or JSON) report, then write the report files (the text is printed even when
 * writing fails). Returns 0 or -1. */
static int run_reports(const struct run_ctx *x)
{
    const struct bench_opts *o = x->o;
    const char *outdir = o->out ? o->out : "bench-out";
    char err[512] = "";
    int wr = bench_write_reports(x->rep, outdir, o->formats ? o->formats : BENCH_FMT_ALL, err,
                                 sizeof(err));
    if (o->json_stdout) {
        char *js = bench_render_json(x->rep);
        if (js) {
            puts(js);
            free(js);
        }
    } else {
        bench_render_text(x->rep, stdout);
    }
    fflush(stdout);
    if (wr < 0) {
        fprintf(stderr, "raidkit bench: %s\n", err);
        return -1;
    }
    fprintf(stderr, "[bench] reports in %s/%s\n", outdir,
            (o->formats & BENCH_FMT_HTML) || !o->formats ? " (report.html)" : "");
    return 0;
}

int bench_run(const struct bench_opts *o)
{
    int ret = 1;
    struct run_ctx x = {.o = o};
    struct bench_report *rep = calloc(1, sizeof(*rep));
    bool handlers = false;
    if (!rep) {
        fprintf(stderr, "raidkit bench: out of memory\n");
        return 1;
    }
    x.rep = rep;
    ret = run_prepare(&x);
    if (ret == 0 && run_check_out(o) < 0)
        ret = 2;
    if (ret != 0 || run_make_work(&x) < 0) {
        ret = ret ? ret : 1;
        goto out;
    }
    int order[BENCH_MAX_CONFIGS + 1], ceiling_c;
    int no = run_order(&x, order, &ceiling_c);

    run_signals(true);
    handlers = true;
    run_now_iso(rep->started, sizeof(rep->started));
    x.t0 = run_mono();
    fprintf(stderr, "[bench] suite %s: %s\n[bench] reproduces: %s\n", x.suite.name,
            x.suite.description, x.suite.reproduces);
    for (int i = 0; i < no && !run_interrupted; i++)
        run_one_config(&x, order[i], i > 0 && order[i] == ceiling_c);
    rep->interrupted = run_interrupted;
    run_now_iso(rep->finished, sizeof(rep->finished));
    bench_report_finish(rep);
    ret = run_reports(&x) < 0 ? 1 : rep->interrupted ? 130 : 0;
    if (ret == 0 && rep->fs_check_failures > 0) {
        fprintf(stderr,
                "raidkit bench: %d filesystem check(s) failed or an export did not stop "
                "cleanly (see Failed: in the report)\n",
                rep->fs_check_failures);
        ret = 1;
    }
out:
    if (handlers)
        run_signals(false);
    run_cleanup_work(&x);
    free(rep->model_json);
    free(rep);
    return ret;
}
