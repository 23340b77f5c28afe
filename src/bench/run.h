/* Internals of the bench runner (run.c) shared with its back-ends (backend_*.c), the fio trial
 * (fio.c), the model's figures (model.c) and the process helpers (proc.c). Sizes are bytes. */
#ifndef RK_BENCH_RUN_H
#define RK_BENCH_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/bench.h"
#include "raidkit/device.h"
#include "raidkit/emul.h"
#include "raidkit/raid.h"

/* One run of `raidkit bench`. */
struct run_ctx {
    const struct bench_opts *o;
    struct bench_suite suite;
    struct bench_report *rep;
    struct rk_emul_params emul; /* the --model profile, when have_emul */
    bool have_emul;
    char work[512]; /* private temporary directory: members, fio files, nbd.sock */
    uint64_t member_size;
    int max_iodepth;
    int max_trials;
    double est_left;  /* seconds of planned trials left (ETA) */
    double cost_done; /* planned seconds of the trials run so far */
    double t0;        /* monotonic start of the first trial */
    double lat[2];    /* clat p50, p99 of the last run_fio, microseconds (0 = not known) */
};

/* One configuration while it is up: what fio targets, and the back-end's own state. */
struct run_target {
    char uri[600];       /* NBD URI for fio's nbd engine, or "" */
    char filename[600];  /* file for fio's libaio engine, or "" */
    char directory[600]; /* directory for fio's libaio engine (it names its files), or "" */
    void *priv;          /* back-end state: allocated by start, freed by stop */
};

/* Operation counts of an array and its members at one moment (for the model's prediction). */
struct run_counts {
    int n;          /* members counted */
    uint64_t bytes; /* array bytes read + written */
    uint64_t ops;   /* array (client) reads + writes */
    uint64_t r[RK_MAX_MEMBERS], w[RK_MAX_MEMBERS], rb[RK_MAX_MEMBERS], wb[RK_MAX_MEMBERS];
    /* the part of w / wb written with FUA (bitmap and log writes: ordered before the data) */
    uint64_t fw[RK_MAX_MEMBERS], fwb[RK_MAX_MEMBERS];
    uint64_t fl[RK_MAX_MEMBERS]; /* member flushes */
    struct rk_raid_geom geom;    /* the array's layout (geom.members 0: unknown) */
    /* the write-intent bitmap's area on every member (bm_region 0: none): bytes of member data
     * per region, the area's place and size; bits set (a write entered a clear region) and area
     * writes that set bits (every member's, FUA: counted in w / fw too), since the array opened */
    uint64_t bm_region, bm_off, bm_size, bm_bits, bm_sets;
};

/*
 * A back-end: one kind of configuration row. The runner knows back-ends only through this table
 * (bench_backends); each lives in its own backend_*.c.
 */
struct bench_backend {
    const char *kind;  /* bench_config.kind: "raidkit", "noop", "nbdkit", "btrfs" */
    const char *names; /* the --configs names it takes, for the error message */
    bool modelled;     /* its members are wrapped in the --model device model */
    bool ceiling;      /* the harness ceiling: measured first and again last */
    bool own_models;   /* its configurations carry their own device models (not --model's) */
    /* If name is one of this back-end's configurations, fill bc's label, level and members
     * (members: the --members value) and return true. */
    bool (*describe)(struct bench_config *bc, const char *name, int members);
    /* Build and start configuration bc; on success t->uri or t->filename is fio's target.
     * Returns 0 or -errno with a message in err. stop runs after a failure too. */
    int (*start)(struct run_ctx *x, const struct bench_config *bc, struct run_target *t, char *err,
                 size_t errlen);
    /* Tear down what start built (members, server, processes, mounts) and free t->priv. */
    void (*stop)(struct run_ctx *x, struct run_target *t);
    /* Member operation counts now; NULL when the back-end has no modelled members. */
    void (*counts)(const struct run_target *t, struct run_counts *k);
    /* Cache hit counters now (c[0..3]: read hits, read misses, write hits, write misses; totals
     * since start). Returns 0, or -errno when the configuration has no cache; NULL: never. */
    int (*hits)(const struct run_target *t, uint64_t c[4]);
};

extern const struct bench_backend bench_backend_raidkit, bench_backend_noop, bench_backend_nbdkit,
    bench_backend_btrfs, bench_backend_cache, bench_backend_plain;
/* Every back-end, NULL-terminated. */
extern const struct bench_backend *const bench_backends[];
/* The back-end of a configuration kind, or NULL. */
const struct bench_backend *bench_backend_find(const char *kind);
/* A zeroed back-end state of size bytes as t->priv (NULL with "out of memory" in err). */
void *run_priv_new(struct run_target *t, size_t size, char *err, size_t errlen);
/* Path of the private NBD socket of x: "WORK/nbd.sock". */
void run_socket_path(const struct run_ctx *x, char *buf, size_t len);

/* ---- the cache back-end's pieces (backend_cache.c), exported for tests ---- */
/* Cache mode of configuration name ("writeback" for cache-writeback), NULL for cache-ssd,
 * cache-hdd and any other name. */
const char *bench_cache_mode(const char *name);
/* The --emulate argument for profile name: a built-in name or a path as is; another bare name
 * NAME as the first readable bench/profiles/NAME.ini under $RAIDKIT_SOURCE_DIR, the working
 * directory and the binary's parent directory. Returns 0, or -ENOENT (nothing readable). */
int bench_cache_profile(const char *name, char *buf, size_t len);
/* A cache configuration's devices, made as a user makes them (bench_cache_make): used by the raw
 * jobs (`raidkit serve`, this file) and by the filesystem jobs (`raidkit fuse`, job_fs_dev.c). */
struct bench_cache_devs {
    char rk[PATH_MAX];       /* the raidkit binary (this process's) */
    char ssd[600], hdd[600]; /* the SSD and HDD profile arguments (bench_cache_profile) */
    char backing[600];       /* the backing: one linear member, the HDD */
    char cachedev[600];      /* the cache device (the SSD); "" for cache-ssd and cache-hdd */
};
/* Make configuration name's devices in dir, file names starting with prefix: resolve the SSD and
 * HDD profiles (mushkin-ssd-2015 and hdd-7200, or $RAIDKIT_BENCH_CACHE_SSD / _HDD), write the
 * backing file (backing_size bytes of zeros) and `raidkit create --level linear` it; for
 * cache-MODE also the cache device (cache_size bytes) and `raidkit cache create --mode MODE`.
 * Returns 0, or -errno with a message in err; bench_cache_unmake removes the files either way. */
int bench_cache_make(const char *name, const char *dir, const char *prefix, uint64_t backing_size,
                     uint64_t cache_size, struct bench_cache_devs *d, char *err, size_t errlen);
/* Remove the files bench_cache_make made (also after it failed). */
void bench_cache_unmake(struct bench_cache_devs *d);
/* The cache device's size: $RAIDKIT_BENCH_CACHE_SIZE (K/M/G, at least 16 MiB), else def. */
uint64_t bench_cache_size(uint64_t def);
#define BENCH_CACHE_ARGS 16
/* argv of the raidkit command that runs configuration name over d (texts in a, argv
 * NULL-terminated): d->rk, the words of head (NULL-terminated: the subcommand and its own
 * options, e.g. {"serve", "--listen=unix:S", "--control=C", NULL} or {"fuse", DIR, ...}), then
 * the models -- cache-MODE: --emulate=HDD --cache=CACHEDEV --cache-emulate=SSD; cache-ssd:
 * --emulate=SSD; cache-hdd: --emulate=HDD -- and the backing. Returns the argument count. */
int bench_cache_argv(const struct bench_cache_devs *d, const char *name, const char *const head[],
                     char a[BENCH_CACHE_ARGS][640], char *argv[BENCH_CACHE_ARGS + 1]);
/* `raidkit status --json --control ctl` into out (len bytes). Returns 0 or -EIO / -ENOENT. */
int bench_cache_status(const char *ctl, char *out, size_t len);
/* A status document's cache: dirty_bytes into *dirty and "state" ("ok", "detached", ...) into
 * state. Returns 0, or -ENOENT when there is no "cache" object. */
int bench_cache_parse_dirty(const char *json, uint64_t *dirty, char *state, size_t len);
/* The hit counters of a `raidkit status --json` document (its "cache" object, at top level or
 * under "status"): read_hits, read_misses, write_hits, write_misses (absent keys are 0). Returns
 * 0, or -ENOENT when there is no "cache" object. */
int bench_cache_parse_status(const char *json, uint64_t c[4]);
/* The hit counters (as bench_cache_parse_status) of the cache served on control socket ctl, now.
 * Returns 0, -EIO (no status) or -ENOENT (no cache). */
int bench_cache_hits(const char *ctl, uint64_t c[4]);

/* ---- trial bookkeeping (run.c), shared with the filesystem jobs (job_fs.c) ---- */
/* Add (trials > 0) or drop (trials < 0) planned trials of job j (every job if j is NULL) to the
 * ETA. */
void run_eta_plan(struct run_ctx *x, const struct bench_job *j, int trials);
/* A trial of j has run (planned: counted in the plan); the ETA as text into buf. */
void run_eta_trial(struct run_ctx *x, const struct bench_job *j, bool planned, char *buf,
                   size_t len);
/* Whether cell needs another trial: exactly up to stop with extra > 0, else the extension rule
 * (min_trials, RSD above BENCH_RSD_LIMIT, the suite's cap). */
bool run_cell_more(const struct run_ctx *x, const struct bench_cell *cell, int extra, int stop);
/* Record one trial of rd + wr (MB/s, or a filesystem job's unit in rd) and the model's figure
 * (0 = none) in cell. */
void run_cell_add(struct bench_cell *cell, double rd, double wr, double model);
/* Add to cell the cache hits and misses of one trial: counters h1 after it minus h0 before
 * (both as bench_cache_parse_status); marks the cell as a cache row. */
void run_cell_add_hits(struct bench_cell *cell, const uint64_t h0[4], const uint64_t h1[4]);

/* ---- fio (fio.c) ---- */
/* fio's version ("3.33") into buf; -ENOENT when fio does not run. */
int run_fio_version(char *buf, size_t len);
/* One fio trial of job j against t; MB/s (10^6 bytes/s) of reads and writes. Returns 0, -EINTR
 * (interrupted) or -errno/-EIO with a message in err. */
int run_fio(struct run_ctx *x, const struct bench_job *j, const struct run_target *t, double *rd,
            double *wr, char *err, size_t errlen);

/* ---- the device model's figures (model.c) ---- */
/* MB/s the SSD model allows for the member I/O between counts a and b; 0 = unknown (no model,
 * HDD, no I/O). */
double run_model_mbs(const struct run_ctx *x, const struct run_counts *a,
                     const struct run_counts *b);
/* What run_model_sim simulates: the member profile (SSD or HDD), the array's level (enum
 * rk_level), fio's iodepth (requests always outstanding, 1..256) and the PRNG seed (0 = 1). HDD
 * only (the head position matters there): span = bytes of each member the job's I/O covers (0 =
 * the profile's capacity), seq = sequential job (each member's next operation continues its last
 * one) instead of uniformly random offsets aligned to the operation size. rfrac: a mixed job's
 * share of reads (fio's read / total MB/s); each client request is then a read or a write, never
 * both. */
struct run_sim_in {
    const struct rk_emul_params *p;
    int level;
    int iodepth;
    uint64_t seed;
    uint64_t span;
    bool seq;
    double rfrac; /* mixed job: client read bytes / all client bytes (0 or 1: not mixed) */
    /* HDD sequential read of a one-copy level (linear, raid0, raid5, raid6): the array's layout.
     * Client reads then walk the array in order and each maps to its member extents
     * (rk_raid_map: a member's stream skips its parity chunks). NULL: per-member streams.
     * HDD, any job: member data offsets start at geom->data_offset; a sequential write job on
     * raid5/raid6 holds each stripe row's lock (writes of one row one at a time); an array with
     * a partial parity log (geom->ppl_size) writes the counts' FUA writes (the log entries) in
     * their own phase before the data writes, from the media, in the log region, one write in
     * flight per member's ring (group commit), and the counts' flushes as log reclaims that
     * hold back every other log write. */
    const struct rk_raid_geom *geom;
};
/* The model's own simulated MB/s (10^6 bytes/s) for the member I/O between counts a and b: a
 * closed loop of in->iodepth client requests on a fake clock through emul_ssd_submit, one model
 * per member. Each client request makes the member operations the trial's counts show per client
 * request (reads on members drawn by their share of reads, then -- read-modify-write -- writes by
 * their share of writes; a mirrored level's single read goes to the least busy copy, as
 * src/raid/copies_rw.c picks), of the trials' mean member request size. 2000 requests of warm-up,
 * 20000 measured; deterministic. 0 = unknown (no device model, no I/O, out of memory). An HDD
 * profile runs the same loop through the HDD command queue of the emul member (emul_hq_add /
 * emul_hq_advance: seek + rotation + transfer, NCQ reordering, write-cache acks), one queue per
 * member, event by event (model_sim_hdd.c). Rule: docs/BENCHMARKS.md "Validation against the
 * emulation". */
double run_model_sim(const struct run_sim_in *in, const struct run_counts *a,
                     const struct run_counts *b);
/* The model parameters as JSON object text into x->rep->model_json. Returns 0 or -ENOMEM. */
int run_model_json(struct run_ctx *x);

/* ---- processes and files (proc.c) ---- */
/* Interrupt flag set by SIGINT/SIGTERM, and the fio child to stop then (0 = none). */
extern volatile sig_atomic_t run_interrupted;
extern volatile pid_t run_child;
/* Install (on) or restore (off) the SIGINT/SIGTERM handlers and ignore SIGPIPE. */
void run_signals(bool on);
/* The path that runs this raidkit binary again as a command (`raidkit create`, `cache`,
 * `fuse` ...) into buf (len bytes): "/proc/self/exe", which execs the running binary itself,
 * even after its file was replaced or deleted (a rebuild during a long run); valid only for
 * exec from this process or a fork of it (not through a shell). 0, or -ENOENT with err when
 * /proc is not mounted, -ENAMETOOLONG when len is too small. */
int run_self_exe(char *buf, size_t len, char *err, size_t errlen);
/* Run argv, wait, capture up to outlen-1 bytes of stdout (and stderr when merge). Returns the
 * exit status (0..255), or -errno when it could not run. */
int run_cmd(char *const argv[], char *out, size_t outlen, bool merge);
/* Detach loop device dev ("/dev/loopN") with `losetup -d` and wait, at most 5 s, until the
 * kernel has let it go: a device someone still holds open (a udev probe after the unmount) is
 * only marked for autoclear and detaches at its last close, so without the wait the run could
 * end with it still attached. Returns 0, or -EBUSY when it is still attached after the wait. */
int run_loop_detach(const char *dev);
/* Wait for the child pid to end, retrying waitpid on EINTR; *status gets its raw wait status.
 * stoppable: the child is the one a SIGINT/SIGTERM stops (run_child is set to pid while waiting,
 * and it gets SIGTERM at once when run_interrupted is already set; the signal handler sends it for
 * a later signal); false for commands that must finish even when interrupted (umount, losetup -d
 * of the teardown). Returns 0, or -errno of waitpid (e.g. -ECHILD) with *status unset. Shared by
 * run_cmd, fio's child (fio.c) and the filesystem tools (job_fs.c). */
int run_child_wait(pid_t pid, bool stoppable, int *status);
/* A raw wait status as an exit code: the exit status (0..255), or 128 + the signal number. */
int run_exit_code(int status);
/* Whether prog is on PATH. */
bool run_have_prog(const char *prog);
/* Strip trailing newlines and blanks. */
void run_chomp(char *s);
/* Current UTC time as ISO 8601 ("2026-01-01T00:00:00Z"). */
void run_now_iso(char *buf, size_t len);
/* Monotonic clock in seconds. */
double run_mono(void);
/* Create (or truncate) path and write size bytes of zeros into it, so that measured writes never
 * pay the first-touch page allocation of sparse memory. Returns 0 or -errno with err. */
int run_fill_file(const char *path, uint64_t size, char *err, size_t errlen);
/* Create (or truncate) a sparse file of size bytes. Returns 0 or -errno with err. */
int run_make_file(const char *path, uint64_t size, char *err, size_t errlen);

#endif
