/* Filesystem jobs of raidkit bench (docs/BENCHMARKS.md "Filesystem jobs"): a filesystem made on a
 * configuration's block device (a raidkit volume or a cache configuration through `raidkit fuse`
 * + a loop device, a loop device over one plain file, or kernel btrfs RAID over loop devices), a
 * tool run in it, its result parsed, the filesystem unmounted and checked. Sizes are bytes, times
 * seconds. */
#ifndef RK_BENCH_JOB_FS_H
#define RK_BENCH_JOB_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/bench.h"
#include "raidkit/device.h"

struct run_ctx;

/* ---- suite keys (job_fs_suite.c) ---- */
/* Apply filesystem job key k = v (tool, fs, fs_size, args, init_args, metric, fio_extra) to j.
 * Returns 0, -ENOENT (not such a key) or -EINVAL (bad value). */
int fsjob_suite_key(struct bench_job *j, const char *k, const char *v);
/* After parsing: a filesystem job's unit, direction and defaults (fs ext4, fs_size 512 MiB), and
 * its consistency (bonnie needs a metric; a fio job's size fits in fs_size). Raw jobs: only
 * fio_extra is allowed. Returns 0, or -EINVAL with "FILE: job 'NAME': reason" in err. */
int fsjob_suite_check(const char *path, struct bench_job *j, char *err, size_t errlen);
/* Whether the suite has filesystem jobs / raw (fio on the volume) jobs. */
bool fsjob_suite_has_fs(const struct bench_suite *s);
bool fsjob_suite_has_raw(const struct bench_suite *s);

/* ---- the block device of a configuration (job_fs_dev.c) ---- */
#define FSDEV_MAX 16 /* loop devices / files of one configuration */

struct fsdev {
    char kind[16];              /* "raidkit", "plain", "btrfs", "cache" */
    char btrfs_profile[16];     /* btrfs: the -d/-m profile; the job's fs is not used */
    char files[FSDEV_MAX][600]; /* member files / the plain file (removed at the end) */
    int nfiles;
    char loops[FSDEV_MAX][64]; /* loop devices (detached at the end) */
    int nloops;
    char expdir[600];    /* raidkit, cache: the FUSE mount point directory */
    pid_t fuse;          /* raidkit, cache: the `raidkit fuse` child, 0 = none */
    char fuse_log[600];  /* its stderr */
    char ctl[600];       /* cache: its control socket ("" = none) */
    char cache_mode[16]; /* cache-MODE: the mode; "" for every other configuration */
    char mnt[600];       /* the filesystem's mount point */
    bool mounted;
    bool checked; /* the last check passed and nothing was made or mounted since */
    char fs[8];   /* the filesystem made by the last fsdev_mkfs */
};

/* Whether configuration kind (bench_config.kind) has a filesystem path: raidkit, plain, btrfs,
 * cache. */
bool fsdev_supported(const char *kind);
/* Bring up the block device(s) of configuration bc, each of size bytes, in x->work: raidkit:
 * member files, `raidkit create`, `raidkit fuse` (with --emulate when the run has a --model),
 * `losetup --direct-io=on --sizelimit size` over the exported file; cache: the configuration's
 * own devices and models as its raw jobs have them (bench_cache_make, the cache device holding
 * all size bytes), `raidkit fuse --control`, the loop device; plain: one file and a loop
 * device; btrfs: bc->members files and loop devices. Needs root. Returns 0 or -errno with a
 * message in err; fsdev_down cleans up after a failure too. */
int fsdev_up(struct run_ctx *x, const struct bench_config *bc, uint64_t size, struct fsdev *d,
             char *err, size_t errlen);
/* Make filesystem fs (ext4, xfs, btrfs; a btrfs configuration always makes btrfs with its
 * profile) of size bytes (at most the device's; btrfs: per device) on d and mount it on d->mnt.
 * Returns 0 or -EIO with the tool's last line in err. */
int fsdev_mkfs_mount(struct fsdev *d, const char *fs, uint64_t size, char *err, size_t errlen);
/* Unmount d->mnt and check the filesystem read-only (e2fsck -fn, xfs_repair -n, btrfs check
 * --readonly). With the debug hook RAIDKIT_BENCH_FS_CORRUPT set in the environment, the first
 * 128 KiB of the device are overwritten first (a test of this check). Returns 0, -EIO (unmount
 * failed) or -EUCLEAN (the check found problems), with a message in err. */
int fsdev_umount_check(struct fsdev *d, char *err, size_t errlen);
/* cache-MODE, after the last trial (unmounted, its check passed): `raidkit cache detach` -- every
 * dirty block written back, the backing flushed, the cache detached, so the same loop device
 * now reads the backing alone -- then the read-only check again: the filesystem the cache wrote
 * back, not the cache's copy of it. A summary or the failure into msg. Returns 0, -EIO (the
 * detach failed or left the cache attached or dirty) or -EUCLEAN (the check found problems). */
int fsdev_cache_drain_check(struct fsdev *d, char *msg, size_t len);
/* Unmount, detach, stop `raidkit fuse` (its exit status must be 0: a clean stop) and remove the
 * files. Returns 0, or -EIO when the FUSE export did not stop cleanly (message in err). */
int fsdev_down(struct fsdev *d, char *err, size_t errlen);

/* ---- the tools (job_fs.c, job_fs_pg.c) ---- */
/* Run argv with stdin from in (NULL: /dev/null), stdout and stderr into out, as run_child (so
 * Ctrl-C stops it). Returns the exit status (0..255, 128+signal), or -errno, -EINTR. */
int fsjob_exec(char *const argv[], const char *in, const char *out);
/* fsjob_exec in directory cwd (NULL: this process's); the child exits 126 if it cannot go there. */
int fsjob_exec_in(char *const argv[], const char *in, const char *out, const char *cwd);
/* Read file path into a malloc'ed NUL-terminated buffer (caller frees); NULL on error. */
char *fsjob_slurp(const char *path);
/* One trial of filesystem job j on d (mounted): run the tool, parse its result into *value (in
 * j->unit). Returns 0, -ENOENT (the tool is not installed: message says which package), -EINTR,
 * or -EIO with a message in err. */
int fsjob_tool(struct run_ctx *x, const struct bench_job *j, struct fsdev *d, double *value,
               char *err, size_t errlen);
/* pgbench in a private PostgreSQL cluster in d->mnt (initdb, start, pgbench -i, pgbench, stop),
 * as the postgres user when run as root. TPS into *tps. Returns as fsjob_tool. */
/* PostgreSQL's server binaries directory (/usr/lib/postgresql/N/bin, the newest N with initdb,
 * pg_ctl and pgbench) into buf. Returns 0 or -ENOENT. */
int fsjob_pg_bindir(char *buf, size_t len);
int fsjob_pgbench(struct run_ctx *x, const struct bench_job *j, struct fsdev *d, double *tps,
                  char *err, size_t errlen);
/* Measure every filesystem job of the suite on configuration c (after its raw jobs): device up
 * once, then per trial mkfs + mount + tool + umount + check. Cells of a configuration without a
 * filesystem path, without root or without the tool are marked skipped with the reason. */
void fsjob_config(struct run_ctx *x, int c);

#endif
