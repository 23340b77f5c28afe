/* raidkit bench internals: suites (bench/suites/), trial statistics, the fio-driven runner and the
 * report renderers (text table like the seeds, JSON, CSV, SVG, HTML). Used by src/cli/cmd_bench.c.
 */
#ifndef RK_BENCH_H
#define RK_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_MAX_JOBS    32
#define BENCH_MAX_CONFIGS 24
#define BENCH_MAX_TRIALS  64
#define BENCH_BAR_WIDTH   79 /* line width of the longest bar row, as in the seeds' tables */
#define BENCH_RSD_LIMIT   3.5

/* ---- statistics (stats.c): pure functions ---- */
double bench_mean(const double *v, int n);
/* Sample standard deviation (n-1); 0 for n < 2. */
double bench_stddev(const double *v, int n);
/* Standard error of the mean: stddev / sqrt(n); 0 for n < 2. */
double bench_stderr(const double *v, int n);
/* Relative standard deviation in percent (stddev / mean * 100); 0 when the mean is 0. */
double bench_rsd(const double *v, int n);
/* Trial-extension rule: true while another trial is needed (n < min_trials, or the RSD is above
 * rsd_limit percent and n < 4 * min_trials). */
bool bench_need_more(const double *v, int n, int min_trials, double rsd_limit);

/* ---- suites (suite.c) ---- */
#define BENCH_MAX_SEED_ROWS 12

/* A published figure printed beside the measured rows (a `seed_row` line of a suite job). */
struct bench_seed_row {
    char label[48]; /* the study's row label, "BCache Writethrough" */
    double mbs;     /* its figure, MB/s */
    bool ref_only;  /* `seed_ref`: shown only as [seed X] on the measured row of that label */
};

/* `seed_config = LABEL | CONFIG` (a suite key): the study's row LABEL is the configuration CONFIG
 * (a --configs name), whose row then carries that row's figure as [seed X, xR] as a row of the
 * same label would -- for configurations whose labels are not the study's (seed 003's SSD, HDD
 * and bcache rows are raidkit's cache-ssd, cache-hdd, cache-writethrough, cache-writeback). */
struct bench_seed_config {
    char label[48];  /* the study's row label */
    char config[32]; /* the configuration's name */
};

struct bench_job {
    char name[32];   /* section name, e.g. "randread" */
    char title[128]; /* "Random Read"; a filesystem job: the study's full test name */
    char rw[16];     /* fio rw= */
    uint32_t bs;     /* bytes */
    int iodepth;
    uint64_t size; /* bytes of the device the job covers */
    int ramp;      /* seconds */
    int runtime;   /* seconds */
    int rwmixread; /* percent reads for mixed rw (randrw/rw), 0 = fio default */
    /* Warm-up before the first trial on each configuration: this many passes of random reads of
     * BENCH_WARMUP_BS over the job's region (every block once per pass), so that a cache
     * admits the working set; 0 = none. */
    int warmup;
    int loops; /* > 0: fio runs this many passes instead of a time_based runtime (warm-up) */
    int nseed;
    struct bench_seed_row seed[BENCH_MAX_SEED_ROWS];
    /* Suite key `note`: why rows of this table cannot match the study (or anything else a reader
     * of the table must know), printed once under it in every format; "" = none. */
    char note[512];
    /* Filesystem jobs (docs/BENCHMARKS.md "Filesystem jobs"): tool[0] != 0 makes this job run
     * TOOL in a filesystem FS made on the configuration (src/bench/job_fs*.c) instead of fio on
     * the raw volume. */
    char tool[16];       /* fsmark, bonnie, postmark, dbench, sqlite, pgbench, compile, fio */
    char fs[8];          /* ext4 (default), xfs, btrfs */
    uint64_t fs_size;    /* bytes of the block device the filesystem is made on */
    char args[192];      /* the tool's own scale options (per tool, see the docs) */
    char init_args[64];  /* pgbench: options of `pgbench -i` ("-s 1") */
    char metric[16];     /* bonnie: block_output, rewrite, block_input, seeks */
    char fio_extra[160]; /* more fio options, space-separated (tool fio and raw fio jobs) */
    char unit[16];       /* result unit of a filesystem job ("Files/s"); "" = MB/s */
    bool lower_better;   /* the result is a time: lower is better */
};

/* Block size and queue depth of the warm-up passes (one read per 64 KiB cache block). */
#define BENCH_WARMUP_BS      (64u << 10)
#define BENCH_WARMUP_IODEPTH 16

struct bench_suite {
    char name[64];
    char description[256];
    char reproduces[256];
    char path[512];
    int max_trials; /* cap on the trial extension; 0 = 4 x the minimum */
    int nseed_configs;
    struct bench_seed_config seed_configs[BENCH_MAX_SEED_ROWS];
    int njobs;
    struct bench_job jobs[BENCH_MAX_JOBS];
};

/* Parse a suite file. Returns 0, or -errno with "FILE:LINE: reason" in err. */
int bench_suite_parse(const char *path, struct bench_suite *s, char *err, size_t errlen);
/* Resolve NAME (bench/suites/NAME under srcdir/env RAIDKIT_SUITES_DIR/the installed dirs) or a
 * path, and parse it. */
int bench_suite_load(const char *name_or_path, struct bench_suite *s, char *err, size_t errlen);
/* Largest raw (fio on the volume) job size: the device size every configuration must offer;
 * filesystem jobs do not count (their device is made for them, of fs_size bytes). */
uint64_t bench_suite_max_size(const struct bench_suite *s);

/* ---- results ---- */
struct bench_cell {
    int ntrials;
    double trials[BENCH_MAX_TRIALS];    /* MB/s (10^6 bytes/s), reads + writes */
    double read_mbs[BENCH_MAX_TRIALS];  /* read part */
    double write_mbs[BENCH_MAX_TRIALS]; /* write part */
    double mean, sd, se, rsd;
    /* MB/s the device model allows for the member I/O the trials caused (mean over trials;
     * 0 = no model or not known): the prediction the row is checked against. */
    double model_sum;
    int model_n;
    double model_mbs;
    bool done;       /* measured (all trials) or partially measured */
    bool skipped;    /* not run on this configuration (a filesystem job without root or its
                        tool, or on a configuration without a filesystem path): note says why */
    bool host_bound; /* below 90% of model_mbs, or within 10% of the noop ceiling */
    /* fio's completion latency percentiles (clat p50, p99) in microseconds, mean over the
     * trials of the direction with more I/O; 0 = not known (filesystem tools); lat_n trials. */
    double p50_us, p99_us;
    int lat_n;
    char note[160];
    /* Cache configurations: hits and misses during the trials (from `status --json` "cache",
     * summed over the trials); has_cache = known. */
    bool has_cache;
    uint64_t read_hits, read_misses, write_hits, write_misses;
};

struct bench_config {
    char name[32];  /* single, linear, raid0, ..., noop, nbdkit, btrfs-raid1 */
    char label[48]; /* row label in tables: "Single Disk", "RAID 1+0", ... */
    char kind[16];  /* "raidkit", "noop", "nbdkit", "btrfs" */
    int level;      /* enum rk_level for raidkit kinds */
    int members;
    bool skipped;
    char note[200];
    /* A check after its trials failed (a cache's drain or the backing's filesystem check, the
     * filesystem device's teardown): the note says which; listed under "Failed" and the run
     * fails (fs_check_failures). */
    bool failed;
    /* Mean time to data loss etc. of this configuration on the model's disks (render_risk.c);
     * has_risk false for non-arrays (noop, nbdkit) and runs without a model. */
    bool has_risk;
    double rebuild_hours, p_loss_rebuild, mttdl_hours, p_loss_5y;
};

struct bench_machine {
    char cpu_model[128];
    int cores;
    uint64_t memory_bytes;
    char kernel[128];
};

struct bench_report {
    const struct bench_suite *suite;
    char raidkit_version[32];
    char fio_version[32];
    char started[32], finished[32]; /* ISO 8601 UTC */
    bool interrupted;
    int min_trials;
    int members;
    char model_name[64]; /* "" = plain member files */
    char *model_json;    /* model parameters as JSON object text (malloc'ed) or NULL */
    char target[512];    /* directory or "model NAME" */
    /* Member failure figures from the model (bench_risk_params_from_model), when have_risk. */
    bool have_risk;
    double risk_member_bytes, risk_afr, risk_ure_per_bit, risk_rebuild_bps;
    struct bench_machine machine;
    int nconfigs;
    struct bench_config configs[BENCH_MAX_CONFIGS];
    struct bench_cell cells[BENCH_MAX_CONFIGS][BENCH_MAX_JOBS];
    int fs_check_failures; /* filesystem jobs whose check after the tool found problems: the
                              run fails (exit 1) */
};

/* Hit ratio hits / (hits + misses) in percent; -1 when both are 0. */
double bench_hit_pct(uint64_t hits, uint64_t misses);

/* Recompute mean/sd/se/rsd of every cell and the host-bound marks (noop ceiling). */
void bench_report_finish(struct bench_report *r);
void bench_machine_probe(struct bench_machine *m);

/* Fill has_risk and the risk figures of every configuration from the report's member figures
 * (render_risk.c; nothing without have_risk). Called by bench_report_finish. */
void bench_report_risk(struct bench_report *r);
/* The "Risk" block of the text report: one line per configuration with figures; nothing when no
 * configuration has them. Returns 0 or -EIO. */
int bench_render_text_risk(const struct bench_report *r, FILE *f);

/* ---- renderers (render.c); each returns 0 or -errno ---- */
/* The seed-style table of one job. */
int bench_render_text_job(const struct bench_report *r, int job, FILE *f);
int bench_render_text(const struct bench_report *r, FILE *f);
/* malloc'ed JSON text (caller frees), NULL on ENOMEM. */
char *bench_render_json(const struct bench_report *r);
int bench_render_csv(const struct bench_report *r, FILE *f);
int bench_render_svg(const struct bench_report *r, int job, FILE *f);
int bench_render_html(const struct bench_report *r, FILE *f);
/* The fio command line of raw job j as the runner builds it (fio.c), with the NBD socket as
 * WORK/nbd.sock (nbd) or the file as FILE, into buf (len bytes, cut when short). */
void bench_fio_cmdline(const struct bench_job *j, bool nbd, char *buf, size_t len);
/* Title of a job's table: "fio 3.33 Type: Random Read - ... - Result: MB/s". */
void bench_job_heading(const struct bench_report *r, int job, char *buf, size_t len);

/* Format bits for bench_write_reports. */
#define BENCH_FMT_TEXT 0x1u
#define BENCH_FMT_JSON 0x2u
#define BENCH_FMT_CSV  0x4u
#define BENCH_FMT_SVG  0x8u
#define BENCH_FMT_HTML 0x10u
#define BENCH_FMT_ALL  0x1fu
int bench_parse_formats(const char *list, unsigned *fmt);
/* Write the chosen formats into dir (created): report.txt, report.json, report.csv,
 * <job>.svg, report.html. */
int bench_write_reports(const struct bench_report *r, const char *dir, unsigned fmt, char *err,
                        size_t errlen);

/* ---- runner (run.c) ---- */
struct bench_opts {
    const char *suite;   /* name or path */
    const char *configs; /* comma list */
    int members;
    const char *dir;   /* member directory or NULL */
    const char *model; /* model profile or NULL */
    const char *out;
    unsigned formats;
    int trials;
    bool json_stdout;
};

/* Run the benchmark and write the reports. Returns a process exit status. */
int bench_run(const struct bench_opts *o);

#endif
