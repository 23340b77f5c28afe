/* The block device under a filesystem job: a raidkit volume or a cache configuration exported by
 * `raidkit fuse` (a child process, the same binary) with a loop device over the exported file; a
 * loop device over one plain file ("plain"); or loop devices under kernel btrfs RAID
 * ("btrfs-PROFILE"). Then mkfs, mount, unmount and the read-only check of the filesystem, and for
 * a cache the check of the backing alone after the cache is drained. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/job_fs.h"
#include "bench/run.h"
#include "core/util.h"
#include "raidkit/raid.h"

/* Bytes of every raidkit member beyond the filesystem's size: superblock, reserved area. */
#define FSDEV_MEMBER_SLACK (64ull << 20)
/* Bytes overwritten by the RAIDKIT_BENCH_FS_CORRUPT debug hook: every superblock of ext4 (1 KiB),
 * xfs (0) and btrfs (64 KiB) lies in them. */
#define FSDEV_CORRUPT_BYTES (128u << 10)

bool fsdev_supported(const char *kind)
{
    return !strcmp(kind, "raidkit") || !strcmp(kind, "plain") || !strcmp(kind, "btrfs") ||
           !strcmp(kind, "cache");
}

/* The last non-empty line of text (in place), for one-line messages. */
static const char *fsdev_last_line(char *text)
{
    run_chomp(text);
    char *nl = strrchr(text, '\n');
    return nl ? nl + 1 : text;
}

/* Run argv; on failure a message "WHAT: last line of its output" in err and -EIO. */
static int fsdev_run(char *const argv[], const char *what, char *err, size_t errlen)
{
    char out[4096];
    int r = run_cmd(argv, out, sizeof(out), true);
    if (r == 0)
        return 0;
    rk_set_err(err, errlen, "%s failed (status %d): %s", what, r, fsdev_last_line(out));
    return -EIO;
}

/* losetup a loop device over file (size bytes from its start) into d->loops. */
static int fsdev_loop(struct fsdev *d, const char *file, uint64_t size, char *err, size_t errlen)
{
    char out[256], lim[32];
    snprintf(lim, sizeof(lim), "%" PRIu64, size);
    char *argv[] = {"losetup", "--direct-io=on", "--sizelimit", lim,
                    "-f",      "--show",         (char *)file,  NULL};
    int r = run_cmd(argv, out, sizeof(out), false);
    run_chomp(out);
    if (r != 0 || strncmp(out, "/dev/", 5)) {
        rk_set_err(err, errlen, "losetup %s failed (status %d)", file, r);
        return -EIO;
    }
    snprintf(d->loops[d->nloops++], sizeof(d->loops[0]), "%.63s", out);
    return 0;
}

/* The FUSE mount point directory WORK/fs-export, made. */
static int fsdev_expdir(struct run_ctx *x, struct fsdev *d, char *err, size_t errlen)
{
    snprintf(d->expdir, sizeof(d->expdir), "%.580s/fs-export", x->work);
    if (mkdir(d->expdir, 0755) == 0)
        return 0;
    rk_set_err(err, errlen, "%s: %s", d->expdir, strerror(errno));
    d->expdir[0] = '\0';
    return -EIO;
}

/* Start argv (`raidkit fuse EXPDIR ...`, its stderr into WORK/fuse.log), wait for EXPDIR/volume,
 * then a loop device of size bytes over it. */
static int fsdev_export(struct run_ctx *x, struct fsdev *d, char *const argv[], uint64_t size,
                        char *err, size_t errlen)
{
    char vol[700];
    snprintf(vol, sizeof(vol), "%s/volume", d->expdir);
    snprintf(d->fuse_log, sizeof(d->fuse_log), "%.580s/fuse.log", x->work);
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int dn = open("/dev/null", O_RDWR),
            lf = open(d->fuse_log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(dn, 0);
        dup2(dn, 1);
        dup2(lf >= 0 ? lf : dn, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    d->fuse = pid;
    for (int i = 0; i < 1000; i++) { /* 10 s */
        struct stat st;
        if (stat(vol, &st) == 0 && st.st_size > 0)
            return fsdev_loop(d, vol, size, err, errlen);
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            d->fuse = 0;
            char *log = fsjob_slurp(d->fuse_log);
            rk_set_err(err, errlen, "raidkit fuse exited at start: %s",
                       log ? fsdev_last_line(log) : "");
            free(log);
            return -EIO;
        }
        usleep(10000);
    }
    rk_set_err(err, errlen, "raidkit fuse did not export %s in 10 s", vol);
    return -ETIMEDOUT;
}

/* raidkit: members, `raidkit create`, `raidkit fuse [--emulate MODEL] MEMBERS`, a loop device
 * over the export. */
static int fsdev_up_raidkit(struct run_ctx *x, const struct bench_config *bc, uint64_t size,
                            struct fsdev *d, char *err, size_t errlen)
{
    char rk[600], lvl[32];
    if (bc->members > FSDEV_MAX) {
        rk_set_err(err, errlen, "too many members");
        return -EINVAL;
    }
    int r = run_self_exe(rk, sizeof(rk), err, errlen);
    if (r < 0)
        return r;
    snprintf(lvl, sizeof(lvl), "%s", rk_level_name(bc->level));
    char *argv[10 + FSDEV_MAX] = {rk, "create", "--level", lvl, "--force", "--name", "benchfs"};
    int k = 7;
    for (int i = 0; i < bc->members; i++) {
        snprintf(d->files[i], sizeof(d->files[0]), "%.560s/fs-%s-m%d.img", x->work, bc->name, i);
        d->nfiles = i + 1;
        r = run_fill_file(d->files[i], size + FSDEV_MEMBER_SLACK, err, errlen);
        if (r < 0)
            return r;
        argv[k++] = d->files[i];
    }
    /* The members are written with zeros in full (no first-touch cost while measuring): they
     * agree already, and --assume-clean keeps create from punching them back into holes. */
    if (bc->level == RK_LEVEL_RAID1 || bc->level == RK_LEVEL_RAID10 ||
        bc->level == RK_LEVEL_RAID5 || bc->level == RK_LEVEL_RAID6)
        argv[k++] = "--assume-clean";
    argv[k] = NULL;
    if ((r = fsdev_run(argv, "raidkit create", err, errlen)) < 0 ||
        (r = fsdev_expdir(x, d, err, errlen)) < 0)
        return r;
    char *fa[8 + FSDEV_MAX] = {rk, "fuse", d->expdir};
    k = 3;
    if (x->o->model) {
        fa[k++] = "--emulate";
        fa[k++] = (char *)x->o->model;
    }
    for (int i = 0; i < bc->members; i++)
        fa[k++] = d->files[i];
    fa[k] = NULL;
    return fsdev_export(x, d, fa, size, err, errlen);
}

/* cache-*: the configuration's own devices and models, made as for its raw jobs
 * (bench_cache_make: backing = linear over one HDD member; cache-MODE: a cache device of the
 * SSD, sized to hold the whole filesystem device as the study's 120 GB SSD held every test's
 * working set), under `raidkit fuse --control CTL` with the same model options as `serve`
 * (bench_cache_argv), a loop device over the export. --model does not apply: they carry their
 * own models. */
static int fsdev_up_cache(struct run_ctx *x, const struct bench_config *bc, uint64_t size,
                          struct fsdev *d, char *err, size_t errlen)
{
    struct bench_cache_devs cd;
    char ctl[620], a[BENCH_CACHE_ARGS][640], *argv[BENCH_CACHE_ARGS + 1];
    uint64_t bytes = size + FSDEV_MEMBER_SLACK;
    int r = bench_cache_make(bc->name, x->work, "fs-", bytes, bench_cache_size(bytes), &cd, err,
                             errlen);
    const char *made[2] = {cd.backing, cd.cachedev}; /* removed by fsdev_down */
    for (int i = 0; i < 2; i++)
        if (made[i][0])
            snprintf(d->files[d->nfiles++], sizeof(d->files[0]), "%s", made[i]);
    if (r < 0 || (r = fsdev_expdir(x, d, err, errlen)) < 0)
        return r;
    snprintf(d->cache_mode, sizeof(d->cache_mode), "%s",
             bench_cache_mode(bc->name) ? bench_cache_mode(bc->name) : "");
    snprintf(d->ctl, sizeof(d->ctl), "%.580s/fs-ctl.sock", x->work);
    snprintf(ctl, sizeof(ctl), "--control=%s", d->ctl);
    const char *head[] = {"fuse", d->expdir, ctl, NULL};
    bench_cache_argv(&cd, bc->name, head, a, argv);
    return fsdev_export(x, d, argv, size, err, errlen);
}

int fsdev_up(struct run_ctx *x, const struct bench_config *bc, uint64_t size, struct fsdev *d,
             char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->kind, sizeof(d->kind), "%s", bc->kind);
    /* The mount point is a private directory of its own in /tmp, not in the work directory: a
     * tool that drops root (PostgreSQL as postgres) must reach it, and the work directory's
     * parents (--dir) may not let it through. */
    snprintf(d->mnt, sizeof(d->mnt), "/tmp/raidkit-bench-fs.XXXXXX");
    if (!mkdtemp(d->mnt) || chmod(d->mnt, 0755) < 0) {
        rk_set_err(err, errlen, "%s: %s", d->mnt, strerror(errno));
        d->mnt[0] = '\0';
        return -EIO;
    }
    if (!strcmp(bc->kind, "raidkit"))
        return fsdev_up_raidkit(x, bc, size, d, err, errlen);
    if (!strcmp(bc->kind, "cache"))
        return fsdev_up_cache(x, bc, size, d, err, errlen);
    int files = 1;
    if (!strcmp(bc->kind, "btrfs")) {
        snprintf(d->btrfs_profile, sizeof(d->btrfs_profile), "%s", bc->name + 6);
        files = bc->members;
    }
    for (int i = 0; i < files && i < FSDEV_MAX; i++) {
        snprintf(d->files[i], sizeof(d->files[0]), "%.560s/fs-%s-m%d.img", x->work, bc->name, i);
        d->nfiles = i + 1;
        int r = run_fill_file(d->files[i], size, err, errlen);
        if (r < 0)
            return r;
        r = fsdev_loop(d, d->files[i], size, err, errlen);
        if (r < 0)
            return r;
    }
    return 0;
}

int fsdev_mkfs_mount(struct fsdev *d, const char *fs, uint64_t size, char *err, size_t errlen)
{
    char *argv[14 + FSDEV_MAX], sz[48];
    int k = 0;
    if (d->btrfs_profile[0])
        fs = "btrfs";
    snprintf(d->fs, sizeof(d->fs), "%s", fs);
    d->checked = false;
    if (!strcmp(fs, "ext4")) {
        /* Inode tables and journal written now, not by a kernel thread during the tool. */
        char *a[] = {"mkfs.ext4", "-q", "-F", "-E",
                     "lazy_itable_init=0,lazy_journal_init=0,nodiscard"};
        memcpy(argv, a, sizeof(a));
        k = 5;
        snprintf(sz, sizeof(sz), "%" PRIu64 "k",
                 size >> 10); /* mke2fs's fs-size, after the device */
    } else if (!strcmp(fs, "xfs")) {
        snprintf(sz, sizeof(sz), "size=%" PRIu64, size);
        char *a[] = {"mkfs.xfs", "-q", "-f", "-K", "-d", sz};
        memcpy(argv, a, sizeof(a));
        k = 6;
    } else {
        snprintf(sz, sizeof(sz), "%" PRIu64, size);
        const char *p = d->btrfs_profile[0] ? d->btrfs_profile : "single";
        /* Metadata profile raid5/6 is discouraged; data carries the profile under test. */
        const char *m = !strcmp(p, "raid5") || !strcmp(p, "raid6") ? "raid1" : p;
        char *a[] = {"mkfs.btrfs", "-q", "-f", "-K", "-b", sz, "-d", (char *)p, "-m", (char *)m};
        memcpy(argv, a, sizeof(a));
        k = 10;
    }
    for (int i = 0; i < d->nloops && (i == 0 || d->btrfs_profile[0]); i++)
        argv[k++] = d->loops[i];
    if (!strcmp(fs, "ext4"))
        argv[k++] = sz;
    argv[k] = NULL;
    char what[32];
    snprintf(what, sizeof(what), "mkfs.%s", fs);
    int r = fsdev_run(argv, what, err, errlen);
    if (r < 0)
        return r;
    char *mnt[] = {"mount", d->loops[0], d->mnt, NULL};
    r = fsdev_run(mnt, "mount", err, errlen);
    if (r == 0)
        d->mounted = true;
    return r;
}

/* The debug hook RAIDKIT_BENCH_FS_CORRUPT: overwrite the start of the device (through the loop
 * device, so through the volume), as a benchmark that corrupts its filesystem would. */
static void fsdev_corrupt(const struct fsdev *d)
{
    static unsigned char junk[FSDEV_CORRUPT_BYTES];
    memset(junk, 0xa5, sizeof(junk));
    int fd = open(d->loops[0], O_WRONLY);
    if (fd < 0)
        return;
    if (pwrite(fd, junk, sizeof(junk), 0) != (ssize_t)sizeof(junk))
        rk_warn("bench: RAIDKIT_BENCH_FS_CORRUPT: write to %s failed", d->loops[0]);
    fsync(fd);
    close(fd);
    fprintf(stderr, "[bench] RAIDKIT_BENCH_FS_CORRUPT: overwrote %u KiB of %s before the check\n",
            FSDEV_CORRUPT_BYTES >> 10, d->loops[0]);
}

/* Drop the kernel's page cache of every loop device (BLKFLSBUF: written back, then invalidated),
 * so that the next reader gets the device's blocks, not pages kept from mkfs, the mount or the
 * last check: the check must read what the volume (or, after a drain, the backing) holds. */
static void fsdev_flushbufs(const struct fsdev *d)
{
    for (int i = 0; i < d->nloops; i++) {
        int fd = open(d->loops[i], O_RDONLY);
        if (fd < 0 || ioctl(fd, BLKFLSBUF, 0) < 0)
            rk_warn("bench: %s: cannot drop its page cache: %s", d->loops[i], strerror(errno));
        if (fd >= 0)
            close(fd);
    }
}

/* The read-only check of d->fs on the loop device, its page cache dropped first: 0, or -EUCLEAN
 * with the tool's last line. */
static int fsdev_check(struct fsdev *d, char *err, size_t errlen)
{
    fsdev_flushbufs(d);
    char *ext4[] = {"e2fsck", "-fn", d->loops[0], NULL};
    char *xfs[] = {"xfs_repair", "-n", d->loops[0], NULL};
    char *btrfs[] = {"btrfs", "check", "--readonly", d->loops[0], NULL};
    char **argv = !strcmp(d->fs, "ext4") ? ext4 : !strcmp(d->fs, "xfs") ? xfs : btrfs;
    char out[8192];
    int r = run_cmd(argv, out, sizeof(out), true);
    d->checked = r == 0;
    if (r == 0)
        return 0;
    rk_set_err(err, errlen, "filesystem check failed: %s %s exit %d: %s", argv[0], argv[1], r,
               fsdev_last_line(out));
    return -EUCLEAN;
}

int fsdev_umount_check(struct fsdev *d, char *err, size_t errlen)
{
    if (d->mounted) {
        char *um[] = {"umount", d->mnt, NULL};
        int r = fsdev_run(um, "umount", err, errlen);
        if (r < 0)
            return r;
        d->mounted = false;
    }
    const char *env = getenv("RAIDKIT_BENCH_FS_CORRUPT");
    if (env && env[0])
        fsdev_corrupt(d);
    return fsdev_check(d, err, errlen);
}

/* The cache's dirty bytes and state from `raidkit status --json` (dirty 0, "?" if unknown). */
static void fsdev_cache_state(const struct fsdev *d, uint64_t *dirty, char *state, size_t len)
{
    char out[16384];
    *dirty = 0;
    snprintf(state, len, "?");
    if (bench_cache_status(d->ctl, out, sizeof(out)) == 0)
        bench_cache_parse_dirty(out, dirty, state, len);
}

int fsdev_cache_drain_check(struct fsdev *d, char *msg, size_t len)
{
    char rk[600], state[32], cerr[300];
    uint64_t dirty0, dirty1;
    if (!d->cache_mode[0] || !d->checked || d->mounted) {
        rk_set_err(msg, len, "no cache, or the last filesystem was not checked clean");
        return -EINVAL;
    }
    fsdev_cache_state(d, &dirty0, state, sizeof(state));
    int r = run_self_exe(rk, sizeof(rk), msg, len);
    char *argv[] = {rk, "cache", "detach", "--control", d->ctl, NULL};
    if (r < 0 || (r = fsdev_run(argv, "raidkit cache detach", msg, len)) < 0)
        return r;
    fsdev_cache_state(d, &dirty1, state, sizeof(state));
    if (strcmp(state, "detached") || dirty1) {
        rk_set_err(msg, len,
                   "after raidkit cache detach the cache is %s with %" PRIu64 " dirty bytes", state,
                   dirty1);
        return -EIO;
    }
    if ((r = fsdev_check(d, cerr, sizeof(cerr))) < 0) {
        rk_set_err(msg, len, "the backing alone after the cache drain: %s", cerr);
        return r;
    }
    snprintf(msg, len,
             "%s cache drained (%.1f MiB dirty written back) and detached after the last "
             "trial; the backing alone then checked clean (%s)",
             d->cache_mode, (double)dirty0 / (1 << 20),
             !strcmp(d->fs, "ext4")  ? "e2fsck -fn"
             : !strcmp(d->fs, "xfs") ? "xfs_repair -n"
                                     : "btrfs check --readonly");
    return 0;
}

int fsdev_down(struct fsdev *d, char *err, size_t errlen)
{
    int ret = 0;
    if (d->mounted) {
        char *um[] = {"umount", d->mnt, NULL};
        if (run_cmd(um, NULL, 0, false) != 0) {
            char *lz[] = {"umount", "-l", d->mnt, NULL};
            run_cmd(lz, NULL, 0, false);
        }
        d->mounted = false;
    }
    if (d->mnt[0])
        rmdir(d->mnt);
    for (int i = d->nloops - 1; i >= 0; i--)
        run_loop_detach(d->loops[i]); /* waits for a deferred (autoclear) detach */
    d->nloops = 0;
    if (d->fuse > 0) {
        /* The loop device is detached: SIGTERM stops the export cleanly (flushed, marked clean). */
        kill(d->fuse, SIGTERM);
        int st = 0;
        (void)run_child_wait(d->fuse, false, &st); /* -ECHILD: already reaped, st stays 0 */
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            char *log = fsjob_slurp(d->fuse_log);
            rk_set_err(err, errlen, "raidkit fuse did not stop cleanly (status %d): %s",
                       WIFEXITED(st) ? WEXITSTATUS(st) : -1, log ? fsdev_last_line(log) : "");
            free(log);
            ret = -EIO;
        }
        d->fuse = 0;
    }
    if (d->expdir[0])
        rmdir(d->expdir);
    if (d->fuse_log[0])
        unlink(d->fuse_log);
    if (d->ctl[0])
        unlink(d->ctl); /* the export removes it when it stops cleanly */
    for (int i = 0; i < d->nfiles; i++)
        unlink(d->files[i]);
    d->nfiles = 0;
    return ret;
}
