/* raidkit bench runner: builds each configuration (raidkit volumes, the noop ceiling, nbdkit and
 * kernel btrfs comparison rows), serves it in-process over a private unix socket and runs fio. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench/bench.h"
#include "core/util.h"
#include "raidkit/emul.h"
#include "raidkit/nbd.h"
#include "raidkit/raid.h"
#include "raidkit/version.h"
#include "raidkit/volume.h"

/* Bytes added to every member beyond the suite's size: superblock and reserved area. */
#define RUN_MEMBER_SLACK (64ull << 20)
/* Seconds a trial costs beyond ramp + runtime (fio start, connect, JSON), for the ETA. */
#define RUN_TRIAL_OVERHEAD 0.5
/* Write size when filling members and the noop device before measuring. */
#define RUN_FILL_CHUNK (1u << 20)
/* A modelled row below this share of what its members allow was limited by the host. */
#define RUN_MODEL_SHORTFALL 0.9

static volatile sig_atomic_t run_interrupted;
static volatile pid_t run_child;

static void run_on_signal(int sig)
{
    (void)sig;
    run_interrupted = 1;
    pid_t p = run_child;
    if (p > 0)
        kill(p, SIGTERM);
}

/* One configuration while it is up: what fio should target and what to tear down. */
struct run_target {
    char uri[600];         /* nbd URI, or "" */
    char filename[600];    /* file for ioengine=libaio (btrfs), or "" */
    struct rk_volume *vol; /* raidkit volume */
    struct rk_dev *memdev; /* noop ceiling */
    struct rk_nbd_server *srv;
    pthread_t thread;
    bool thread_started;
    pid_t nbdkit;
    char paths[RK_MAX_MEMBERS][600];
    int npaths;
    char loops[RK_MAX_MEMBERS][64];
    int nloops;
    char mnt[600];
    bool mounted;
};

struct run_ctx {
    const struct bench_opts *o;
    struct bench_suite suite;
    struct bench_report *rep;
    struct rk_emul_params emul;
    bool have_emul;
    char work[512]; /* private temporary directory */
    uint64_t member_size;
    int max_iodepth;
    int max_trials;
    double est_left;  /* seconds of planned trials left (ETA) */
    double cost_done; /* planned seconds of the trials run so far */
    double t0;        /* monotonic start of the first trial */
};

/* ---- small process helpers ---- */

/* Run argv, wait, capture up to outlen-1 bytes of stdout (and stderr when merge). Returns the exit
 * status (0..255), or -errno when it could not run. */
static int run_cmd(char *const argv[], char *out, size_t outlen, bool merge)
{
    int pfd[2];
    if (pipe(pfd) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(pfd[0]);
        close(pfd[1]);
        return e;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        int dn = open("/dev/null", O_WRONLY);
        dup2(merge ? pfd[1] : dn, 2);
        close(pfd[0]);
        close(pfd[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t n = 0;
    char tmp[4096];
    ssize_t k;
    while ((k = read(pfd[0], tmp, sizeof(tmp))) != 0) {
        if (k < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        size_t c = (size_t)k;
        if (out && n + 1 < outlen) {
            if (c > outlen - 1 - n)
                c = outlen - 1 - n;
            memcpy(out + n, tmp, c);
            n += c;
        }
    }
    close(pfd[0]);
    if (out && outlen)
        out[n] = '\0';
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static bool run_have_prog(const char *prog)
{
    char *argv[] = {"sh", "-c", NULL, NULL};
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "command -v %s", prog);
    argv[2] = cmd;
    return run_cmd(argv, NULL, 0, false) == 0;
}

static void run_now_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void run_chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
}

void bench_machine_probe(struct bench_machine *m)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->cpu_model, sizeof(m->cpu_model), "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof(line), f)) {
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ' || *c == '\t')
                        c++;
                    snprintf(m->cpu_model, sizeof(m->cpu_model), "%s", c);
                    run_chomp(m->cpu_model);
                }
                break;
            }
        }
        fclose(f);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores = n > 0 ? (int)n : 1;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psz > 0)
        m->memory_bytes = (uint64_t)pages * (uint64_t)psz;
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof(m->kernel), "%.80s %.40s", u.release, u.machine);
}

void bench_report_finish(struct bench_report *r)
{
    int noop = -1;
    for (int c = 0; c < r->nconfigs; c++)
        if (!strcmp(r->configs[c].kind, "noop") && !r->configs[c].skipped)
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
                               cell->mean < RUN_MODEL_SHORTFALL * cell->model_mbs;
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
            if (c != noop && !strcmp(r->configs[c].kind, "raidkit") && cell->ntrials > 0 &&
                cell->mean >= 0.9 * ceil)
                cell->host_bound = true;
        }
    }
}

/* ---- the model's own limit for a trial ---- */

/* Operation counts of the array and its members at one moment. */
struct run_counts {
    int n;
    uint64_t bytes; /* array bytes read + written */
    uint64_t r[RK_MAX_MEMBERS], w[RK_MAX_MEMBERS], rb[RK_MAX_MEMBERS], wb[RK_MAX_MEMBERS];
};

static void run_counts_take(const struct run_target *t, struct run_counts *k)
{
    memset(k, 0, sizeof(*k));
    if (!t->vol)
        return;
    struct rk_dev *dev = rk_volume_dev(t->vol), *raid = rk_volume_raid(t->vol);
    const struct rk_raid_geom *g = rk_raid_geometry(raid);
    k->bytes = atomic_load(&dev->stats.read_bytes) + atomic_load(&dev->stats.write_bytes);
    for (uint32_t s = 0; g && s < g->members && s < RK_MAX_MEMBERS; s++) {
        struct rk_dev *m = rk_raid_member(raid, s);
        if (!m)
            continue;
        k->r[s] = atomic_load(&m->stats.reads);
        k->w[s] = atomic_load(&m->stats.writes);
        k->rb[s] = atomic_load(&m->stats.read_bytes);
        k->wb[s] = atomic_load(&m->stats.write_bytes);
        k->n = (int)s + 1;
    }
}

/*
 * MB/s the SSD model allows for the I/O between a and b: each member needs, for its share of the
 * operations, the longer of its read gate, its write gate (1/iops or bytes/bw per request) and
 * its channels (latency + transfer over parallelism); the busiest member sets the time the
 * array's bytes take. Counts, not clocks: a busy host does not change the figure. 0 = unknown
 * (no model, HDD, no I/O).
 */
static double run_model_mbs(const struct run_ctx *x, const struct run_counts *a,
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
        worst = fmax(worst, fmax(tr, fmax(tw, tc)));
    }
    return worst > 0 ? (double)(b->bytes - a->bytes) / worst / 1e6 : 0;
}

/* ---- configurations ---- */

static int run_add_config(struct bench_report *rep, const char *name, int members, char *err,
                          size_t errlen)
{
    static const struct {
        const char *name, *label;
        int level;
    } known[] = {{"single", "Single Disk", RK_LEVEL_LINEAR}, {"linear", "Linear", RK_LEVEL_LINEAR},
                 {"raid0", "RAID 0", RK_LEVEL_RAID0},        {"raid1", "RAID 1", RK_LEVEL_RAID1},
                 {"raid10", "RAID 1+0", RK_LEVEL_RAID10},    {"raid5", "RAID 5", RK_LEVEL_RAID5},
                 {"raid6", "RAID 6", RK_LEVEL_RAID6}};
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
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(name, known[i].name))
            continue;
        snprintf(bc->kind, sizeof(bc->kind), "raidkit");
        bc->level = known[i].level;
        bc->members = i == 0 ? 1 : members;
        if (i == 0)
            snprintf(bc->label, sizeof(bc->label), "%s", known[i].label);
        else
            snprintf(bc->label, sizeof(bc->label), "%s (%d)", known[i].label, members);
        rep->nconfigs++;
        return 0;
    }
    if (!strcmp(name, "noop")) {
        snprintf(bc->kind, sizeof(bc->kind), "noop");
        snprintf(bc->label, sizeof(bc->label), "noop (ceiling)");
    } else if (!strcmp(name, "nbdkit")) {
        snprintf(bc->kind, sizeof(bc->kind), "nbdkit");
        snprintf(bc->label, sizeof(bc->label), "nbdkit file");
        bc->members = 1;
    } else if (!strncmp(name, "btrfs-", 6) && name[6]) {
        snprintf(bc->kind, sizeof(bc->kind), "btrfs");
        snprintf(bc->label, sizeof(bc->label), "btrfs %s (%d)", name + 6, members);
        bc->members = members;
    } else {
        rk_set_err(err, errlen,
                   "unknown configuration '%s' (single, linear, raid0, raid1, raid10, raid5, "
                   "raid6, noop, nbdkit, btrfs-PROFILE)",
                   name);
        return -EINVAL;
    }
    rep->nconfigs++;
    return 0;
}

static void *run_server_thread(void *arg)
{
    rk_nbd_server_run(arg);
    return NULL;
}

/* Serve dev on t->uri's socket from a thread of this process. */
static int run_serve(struct run_ctx *x, struct rk_dev *dev, struct run_target *t, char *err,
                     size_t errlen)
{
    char listen[600];
    snprintf(listen, sizeof(listen), "unix:%s/nbd.sock", x->work);
    int threads = 2 * x->max_iodepth;
    if (threads < 16)
        threads = 16;
    struct rk_nbd_opts no = {.listen = listen, .export_name = "bench", .threads = threads};
    int r = rk_nbd_server_create(dev, &no, &t->srv, err, errlen);
    if (r < 0)
        return r;
    /* The server thread must not take Ctrl-C: the main thread handles it and stops fio. */
    sigset_t all, old;
    sigemptyset(&all);
    sigaddset(&all, SIGINT);
    sigaddset(&all, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    r = -pthread_create(&t->thread, NULL, run_server_thread, t->srv);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r < 0) {
        rk_set_err(err, errlen, "server thread: %s", strerror(-r));
        return r;
    }
    t->thread_started = true;
    snprintf(t->uri, sizeof(t->uri), "nbd+unix:///bench?socket=%s/nbd.sock", x->work);
    return 0;
}

static int run_make_file(const char *path, uint64_t size, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
        int e = -errno;
        rk_set_err(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return e;
    }
    close(fd);
    return 0;
}

/* A zeroed buffer for filling members and the noop device (never freed). */
static const void *run_zero_buf(void)
{
    static void *buf;
    if (!buf)
        buf = rk_buf_alloc(RUN_FILL_CHUNK);
    if (buf)
        memset(buf, 0, RUN_FILL_CHUNK);
    return buf;
}

/*
 * Write every byte of a new member file (or the noop device) before it is measured. Sparse
 * memory costs a page allocation at the first write of each page, and on a VM that hands freed
 * memory back to the host (free page reporting) a host fault too: measured at 5-10x the cost of
 * a later write, so the first trials of the first write job ran at a quarter of the later ones
 * (randwrite noop 48 then 880 MB/s; raid1 on 4 members pays it 4x per request) and the rows
 * depended on which configuration ran before. Filled, every trial sees the steady state.
 */
static int run_fill_file(const char *path, uint64_t size, char *err, size_t errlen)
{
    const void *zero = run_zero_buf();
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int r = 0;
    if (fd < 0 || !zero) {
        r = fd < 0 ? -errno : -ENOMEM;
        goto out;
    }
    for (uint64_t off = 0; off < size;) {
        size_t n = size - off < RUN_FILL_CHUNK ? (size_t)(size - off) : RUN_FILL_CHUNK;
        ssize_t k = pwrite(fd, zero, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            r = k < 0 ? -errno : -EIO;
            goto out;
        }
        off += (uint64_t)k;
    }
out:
    if (r)
        rk_set_err(err, errlen, "%s: %s", path, strerror(-r));
    if (fd >= 0)
        close(fd);
    return r;
}

static int run_fill_dev(struct rk_dev *dev, char *err, size_t errlen)
{
    const void *zero = run_zero_buf();
    if (!zero) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (uint64_t off = 0; off < dev->size;) {
        uint64_t n = dev->size - off < RUN_FILL_CHUNK ? dev->size - off : RUN_FILL_CHUNK;
        int r = rk_dev_write(dev, zero, n, off, 0);
        if (r < 0) {
            rk_set_err(err, errlen, "filling the in-memory device: %s", strerror(-r));
            return r;
        }
        off += n;
    }
    return 0;
}

static void run_teardown(struct run_ctx *x, struct run_target *t)
{
    if (t->srv) {
        rk_nbd_server_stop(t->srv);
        if (t->thread_started)
            pthread_join(t->thread, NULL);
        rk_nbd_server_destroy(t->srv);
    }
    if (t->vol) {
        int r = rk_volume_close(t->vol);
        if (r < 0)
            rk_warn("bench: closing the volume: %s", strerror(-r));
    }
    if (t->memdev)
        rk_dev_close(t->memdev);
    if (t->nbdkit > 0) {
        kill(t->nbdkit, SIGTERM);
        waitpid(t->nbdkit, NULL, 0);
    }
    if (t->mounted) {
        char *argv[] = {"umount", t->mnt, NULL};
        run_cmd(argv, NULL, 0, false);
    }
    if (t->mnt[0])
        rmdir(t->mnt);
    for (int i = 0; i < t->nloops; i++) {
        char *argv[] = {"losetup", "-d", t->loops[i], NULL};
        run_cmd(argv, NULL, 0, false);
    }
    for (int i = 0; i < t->npaths; i++)
        unlink(t->paths[i]);
    char sock[600];
    snprintf(sock, sizeof(sock), "%s/nbd.sock", x->work);
    unlink(sock);
    memset(t, 0, sizeof(*t));
}

static int run_setup_raidkit(struct run_ctx *x, struct bench_config *bc, struct run_target *t,
                             char *err, size_t errlen)
{
    const char *paths[RK_MAX_MEMBERS];
    int min = rk_level_min_members(bc->level);
    if (min < 0) {
        rk_set_err(err, errlen, "level not supported by this build");
        return -ENOTSUP;
    }
    if (bc->members < min) {
        rk_set_err(err, errlen, "%s needs at least %d members (--members %d)",
                   rk_level_name(bc->level), min, bc->members);
        return -EINVAL;
    }
    for (int i = 0; i < bc->members; i++) {
        snprintf(t->paths[i], sizeof(t->paths[i]), "%s/%s-m%d.img", x->work, bc->name, i);
        paths[i] = t->paths[i];
        t->npaths = i + 1;
        int r = run_fill_file(t->paths[i], x->member_size, err, errlen);
        if (r < 0)
            return r;
    }
    struct rk_create_opts co = {
        .level = bc->level, .name = "bench", .size = x->member_size, .force = true};
    int r = rk_volume_create(paths, bc->members, &co, err, errlen);
    if (r < 0)
        return r;
    struct rk_open_opts oo = {.emul = x->have_emul ? &x->emul : NULL};
    r = rk_volume_open(paths, bc->members, &oo, &t->vol, err, errlen);
    if (r < 0)
        return r;
    struct rk_dev *dev = rk_volume_dev(t->vol);
    if (dev->size < bench_suite_max_size(&x->suite)) {
        rk_set_err(err, errlen, "volume of %" PRIu64 " bytes is smaller than the suite's size",
                   dev->size);
        return -ENOSPC;
    }
    return run_serve(x, dev, t, err, errlen);
}

static int run_setup_noop(struct run_ctx *x, struct run_target *t, char *err, size_t errlen)
{
    int r = rk_mem_open(bench_suite_max_size(&x->suite), 4096, &t->memdev);
    if (r < 0) {
        rk_set_err(err, errlen, "in-memory device: %s", strerror(-r));
        return r;
    }
    r = run_fill_dev(t->memdev, err, errlen);
    if (r < 0)
        return r;
    return run_serve(x, t->memdev, t, err, errlen);
}

static int run_setup_nbdkit(struct run_ctx *x, struct run_target *t, char *err, size_t errlen)
{
    if (!run_have_prog("nbdkit")) {
        rk_set_err(err, errlen, "nbdkit is not installed");
        return -ENOENT;
    }
    snprintf(t->paths[0], sizeof(t->paths[0]), "%s/nbdkit-m0.img", x->work);
    t->npaths = 1;
    int r = run_make_file(t->paths[0], bench_suite_max_size(&x->suite), err, errlen);
    if (r < 0)
        return r;
    char sock[560], fileopt[700], threads[32];
    snprintf(sock, sizeof(sock), "%s/nbd.sock", x->work);
    snprintf(fileopt, sizeof(fileopt), "file=%s", t->paths[0]);
    snprintf(threads, sizeof(threads), "%d", 2 * x->max_iodepth < 16 ? 16 : 2 * x->max_iodepth);
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int dn = open("/dev/null", O_RDWR);
        dup2(dn, 0);
        dup2(dn, 1);
        execlp("nbdkit", "nbdkit", "--foreground", "--exit-with-parent", "--unix", sock,
               "--threads", threads, "file", fileopt, (char *)NULL);
        _exit(127);
    }
    t->nbdkit = pid;
    for (int i = 0; i < 500; i++) {
        if (access(sock, F_OK) == 0) {
            snprintf(t->uri, sizeof(t->uri), "nbd+unix:///?socket=%.570s", sock);
            return 0;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            t->nbdkit = 0;
            rk_set_err(err, errlen, "nbdkit exited at start");
            return -EIO;
        }
        usleep(10000);
    }
    rk_set_err(err, errlen, "nbdkit did not create its socket in 5 s");
    return -ETIMEDOUT;
}

static int run_setup_btrfs(struct run_ctx *x, struct bench_config *bc, struct run_target *t,
                           char *err, size_t errlen)
{
    char out[256];
    const char *profile = bc->name + 6;
    if (geteuid() != 0) {
        rk_set_err(err, errlen, "needs root (loop devices, mount)");
        return -EPERM;
    }
    if (!run_have_prog("mkfs.btrfs") || !run_have_prog("losetup")) {
        rk_set_err(err, errlen, "mkfs.btrfs (btrfs-progs) or losetup is missing");
        return -ENOENT;
    }
    /* btrfs wants some room beyond the test file for its metadata and chunk allocation. */
    uint64_t msize = x->member_size < (512ull << 20) ? (512ull << 20) : x->member_size;
    for (int i = 0; i < bc->members; i++) {
        snprintf(t->paths[i], sizeof(t->paths[i]), "%s/%s-m%d.img", x->work, bc->name, i);
        t->npaths = i + 1;
        int r = run_make_file(t->paths[i], msize, err, errlen);
        if (r < 0)
            return r;
        char *argv[] = {"losetup", "-f", "--show", t->paths[i], NULL};
        if (run_cmd(argv, out, sizeof(out), true) != 0) {
            run_chomp(out);
            rk_set_err(err, errlen, "losetup: %s", out);
            return -EIO;
        }
        run_chomp(out);
        snprintf(t->loops[i], sizeof(t->loops[i]), "%.*s", (int)sizeof(t->loops[i]) - 1, out);
        t->nloops = i + 1;
    }
    char *mk[8 + RK_MAX_MEMBERS] = {"mkfs.btrfs",    "-f", "-d",
                                    (char *)profile, "-m", (char *)profile};
    int k = 6;
    for (int i = 0; i < t->nloops; i++)
        mk[k++] = t->loops[i];
    mk[k] = NULL;
    /* Metadata profile raid5/6 is discouraged; data carries the profile under test. */
    if (!strcmp(profile, "raid5") || !strcmp(profile, "raid6"))
        mk[5] = "raid1";
    char msg[2048];
    if (run_cmd(mk, msg, sizeof(msg), true) != 0) {
        char *nl = strrchr(msg, '\n');
        while (nl && nl[1] == '\0' && nl != msg) {
            *nl = '\0';
            nl = strrchr(msg, '\n');
        }
        rk_set_err(err, errlen, "mkfs.btrfs -d %s failed: %s", profile, nl ? nl + 1 : msg);
        return -EIO;
    }
    snprintf(t->mnt, sizeof(t->mnt), "%s/mnt-%s", x->work, bc->name);
    if (mkdir(t->mnt, 0755) < 0) {
        rk_set_err(err, errlen, "%s: %s", t->mnt, strerror(errno));
        t->mnt[0] = '\0';
        return -errno;
    }
    char *mnt[] = {"mount", "-t", "btrfs", t->loops[0], t->mnt, NULL};
    if (run_cmd(mnt, msg, sizeof(msg), true) != 0) {
        run_chomp(msg);
        rk_set_err(err, errlen, "mount: %s", msg);
        return -EIO;
    }
    t->mounted = true;
    snprintf(t->filename, sizeof(t->filename), "%.580s/fio.dat", t->mnt);
    return 0;
}

/* ---- fio ---- */

static int run_fio_version(char *buf, size_t len)
{
    char *argv[] = {"fio", "--version", NULL};
    char out[128];
    int r = run_cmd(argv, out, sizeof(out), false);
    if (r != 0)
        return -ENOENT;
    run_chomp(out);
    snprintf(buf, len, "%.31s", strncmp(out, "fio-", 4) ? out : out + 4);
    return 0;
}

/* One fio trial of job j against t; MB/s (10^6 bytes/s) of reads and writes. */
static int run_fio(struct run_ctx *x, const struct bench_job *j, const struct run_target *t,
                   double *rd, double *wr, char *err, size_t errlen)
{
    char a[16][700];
    char *argv[20];
    int n = 0;
    char outfile[600], errfile[600];
    snprintf(outfile, sizeof(outfile), "%s/fio.json", x->work);
    snprintf(errfile, sizeof(errfile), "%s/fio.err", x->work);
    snprintf(a[n++], sizeof(a[0]), "--name=%s", j->name);
    if (t->uri[0]) {
        snprintf(a[n++], sizeof(a[0]), "--ioengine=nbd");
        snprintf(a[n++], sizeof(a[0]), "--uri=%s", t->uri);
    } else {
        snprintf(a[n++], sizeof(a[0]), "--ioengine=libaio");
        snprintf(a[n++], sizeof(a[0]), "--direct=1");
        snprintf(a[n++], sizeof(a[0]), "--filename=%s", t->filename);
    }
    snprintf(a[n++], sizeof(a[0]), "--rw=%s", j->rw);
    snprintf(a[n++], sizeof(a[0]), "--bs=%u", j->bs);
    snprintf(a[n++], sizeof(a[0]), "--iodepth=%d", j->iodepth);
    snprintf(a[n++], sizeof(a[0]), "--size=%" PRIu64, j->size);
    snprintf(a[n++], sizeof(a[0]), "--ramp_time=%d", j->ramp);
    snprintf(a[n++], sizeof(a[0]), "--runtime=%d", j->runtime);
    snprintf(a[n++], sizeof(a[0]), "--time_based");
    if (j->rwmixread > 0)
        snprintf(a[n++], sizeof(a[0]), "--rwmixread=%d", j->rwmixread);
    snprintf(a[n++], sizeof(a[0]), "--output-format=json");
    snprintf(a[n++], sizeof(a[0]), "--output=%s", outfile);
    argv[0] = "fio";
    for (int i = 0; i < n; i++)
        argv[i + 1] = a[i];
    argv[n + 1] = NULL;
    unlink(outfile);

    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int dn = open("/dev/null", O_RDWR);
        int ef = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(dn, 0);
        dup2(dn, 1);
        dup2(ef >= 0 ? ef : dn, 2);
        execvp("fio", argv);
        _exit(127);
    }
    run_child = pid;
    if (run_interrupted)
        kill(pid, SIGTERM);
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            run_child = 0;
            return -errno;
        }
    }
    run_child = 0;
    if (run_interrupted) {
        rk_set_err(err, errlen, "interrupted");
        return -EINTR;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char msg[300] = "";
        FILE *ef = fopen(errfile, "r");
        if (ef) {
            if (!fgets(msg, sizeof(msg), ef))
                msg[0] = '\0';
            fclose(ef);
        }
        run_chomp(msg);
        rk_set_err(err, errlen, "fio failed (status %d): %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                   msg[0] ? msg : "no message");
        return -EIO;
    }
    /* fio's JSON output. */
    FILE *f = fopen(outfile, "r");
    if (!f) {
        rk_set_err(err, errlen, "fio wrote no %s", outfile);
        return -EIO;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    char tmp[4096];
    size_t k;
    while (mf && (k = fread(tmp, 1, sizeof(tmp), f)) > 0)
        fwrite(tmp, 1, k, mf);
    fclose(f);
    if (mf)
        fclose(mf);
    /* fio may print notes before the JSON object; start at the first '{'. */
    const char *start = buf ? strchr(buf, '{') : NULL;
    cJSON *root = start ? cJSON_Parse(start) : NULL;
    free(buf);
    cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    cJSON *job0 = cJSON_GetArrayItem(jobs, 0);
    cJSON *jerr = cJSON_GetObjectItemCaseSensitive(job0, "error");
    cJSON *rb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job0, "read"),
                                                 "bw_bytes");
    cJSON *wb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job0, "write"),
                                                 "bw_bytes");
    int r = 0;
    if (!cJSON_IsNumber(rb) || !cJSON_IsNumber(wb)) {
        rk_set_err(err, errlen, "fio JSON without jobs[0].read/write.bw_bytes");
        r = -EIO;
    } else if (cJSON_IsNumber(jerr) && jerr->valueint != 0) {
        rk_set_err(err, errlen, "fio job error %d", jerr->valueint);
        r = -EIO;
    } else {
        *rd = rb->valuedouble / 1e6;
        *wr = wb->valuedouble / 1e6;
    }
    cJSON_Delete(root);
    return r;
}

static double run_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run_eta(double s, char *buf, size_t len)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else
        snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
}

static double run_trial_cost(const struct bench_job *j)
{
    return j->ramp + j->runtime + RUN_TRIAL_OVERHEAD;
}

/* Measure every job of the suite on configuration c (already up as t). With extra > 0, run
 * exactly extra more trials per job instead (the noop ceiling's second pass). */
static void run_config_jobs(struct run_ctx *x, int c, const struct run_target *t, int extra)
{
    struct bench_report *rep = x->rep;
    struct bench_config *bc = &rep->configs[c];
    for (int j = 0; j < x->suite.njobs && !run_interrupted; j++) {
        const struct bench_job *job = &x->suite.jobs[j];
        struct bench_cell *cell = &rep->cells[c][j];
        int stop =
            cell->ntrials + extra < BENCH_MAX_TRIALS ? cell->ntrials + extra : BENCH_MAX_TRIALS;
        while (!run_interrupted && (extra > 0 ? cell->ntrials < stop
                                              : bench_need_more(cell->trials, cell->ntrials,
                                                                rep->min_trials, BENCH_RSD_LIMIT) &&
                                                    cell->ntrials < x->max_trials)) {
            double rd = 0, wr = 0;
            char err[300] = "";
            struct run_counts k0, k1;
            run_counts_take(t, &k0);
            int r = run_fio(x, job, t, &rd, &wr, err, sizeof(err));
            run_counts_take(t, &k1);
            if (r == -EINTR || run_interrupted)
                break;
            if (r < 0) {
                snprintf(cell->note, sizeof(cell->note), "%.*s", (int)sizeof(cell->note) - 1, err);
                fprintf(stderr, "[bench] %s %s: %s\n", bc->name, job->name, err);
                break;
            }
            int k = cell->ntrials++;
            cell->trials[k] = rd + wr;
            cell->read_mbs[k] = rd;
            cell->write_mbs[k] = wr;
            cell->done = true;
            double model = run_model_mbs(x, &k0, &k1);
            if (model > 0) {
                cell->model_sum += model;
                cell->model_n++;
            }
            if (k < rep->min_trials || extra > 0)
                x->est_left -= run_trial_cost(job);
            x->cost_done += run_trial_cost(job);
            /* Scale the plan by how long trials really took (start-up, a busy machine). */
            double scale = x->cost_done > 0 ? (run_mono() - x->t0) / x->cost_done : 1.0;
            char eta[32];
            run_eta(x->est_left * (scale > 1.0 ? scale : 1.0), eta, sizeof(eta));
            bool more = extra > 0 ? cell->ntrials < stop
                                  : bench_need_more(cell->trials, cell->ntrials, rep->min_trials,
                                                    BENCH_RSD_LIMIT) &&
                                        cell->ntrials < x->max_trials;
            char mod[48] = "";
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
        for (int k = cell->ntrials; k < (extra > 0 ? stop : rep->min_trials); k++)
            x->est_left -= run_trial_cost(job);
    }
}

static int run_model_json(struct run_ctx *x)
{
    const struct rk_emul_params *p = &x->emul;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return -ENOMEM;
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddStringToObject(o, "kind", p->kind == RK_EMUL_HDD ? "hdd" : "ssd");
    cJSON_AddNumberToObject(o, "capacity", (double)p->capacity);
    if (p->kind == RK_EMUL_SSD) {
        cJSON_AddNumberToObject(o, "read_latency_us", p->read_latency_us);
        cJSON_AddNumberToObject(o, "write_latency_us", p->write_latency_us);
        cJSON_AddNumberToObject(o, "read_iops", p->read_iops);
        cJSON_AddNumberToObject(o, "write_iops", p->write_iops);
        cJSON_AddNumberToObject(o, "read_bw", (double)p->read_bw);
        cJSON_AddNumberToObject(o, "write_bw", (double)p->write_bw);
        cJSON_AddNumberToObject(o, "parallelism", p->parallelism);
    } else {
        cJSON_AddNumberToObject(o, "rpm", p->rpm);
        cJSON_AddNumberToObject(o, "seek_track_us", p->seek_track_us);
        cJSON_AddNumberToObject(o, "seek_avg_us", p->seek_avg_us);
        cJSON_AddNumberToObject(o, "seek_full_us", p->seek_full_us);
        cJSON_AddNumberToObject(o, "outer_bw", (double)p->outer_bw);
        cJSON_AddNumberToObject(o, "inner_bw", (double)p->inner_bw);
        cJSON_AddNumberToObject(o, "zones", p->zones);
        cJSON_AddBoolToObject(o, "reorder", p->reorder);
        cJSON_AddNumberToObject(o, "queue_depth", p->queue_depth);
        cJSON_AddNumberToObject(o, "write_cache", p->write_cache);
    }
    cJSON_AddNumberToObject(o, "seed", (double)p->seed);
    x->rep->model_json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return x->rep->model_json ? 0 : -ENOMEM;
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

int bench_run(const struct bench_opts *o)
{
    int ret = 1;
    char err[512] = "";
    struct run_ctx x = {.o = o};
    struct bench_report *rep = calloc(1, sizeof(*rep));
    struct sigaction sa = {.sa_handler = run_on_signal}, old_int, old_term, old_pipe;
    struct sigaction ign = {.sa_handler = SIG_IGN};
    bool handlers = false;
    if (!rep) {
        fprintf(stderr, "raidkit bench: out of memory\n");
        return 1;
    }
    x.rep = rep;
    if (bench_suite_load(o->suite, &x.suite, err, sizeof(err)) < 0) {
        fprintf(stderr, "raidkit bench: %s\n", err);
        ret = 2;
        goto out;
    }
    rep->suite = &x.suite;
    rep->members = o->members;
    rep->min_trials = o->trials > 0 ? o->trials : 3;
    x.max_trials = x.suite.max_trials > 0 ? x.suite.max_trials : 4 * rep->min_trials;
    if (x.max_trials < rep->min_trials)
        x.max_trials = rep->min_trials;
    if (x.max_trials > BENCH_MAX_TRIALS)
        x.max_trials = BENCH_MAX_TRIALS;
    snprintf(rep->raidkit_version, sizeof(rep->raidkit_version), "%s", RK_VERSION_STRING);

    /* Configurations: the given list; with a model, the noop ceiling is measured too. */
    char list[512];
    snprintf(list, sizeof(list), "%s",
             o->configs ? o->configs : "single,linear,raid0,raid1,raid10,raid5,raid6");
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (run_add_config(rep, tok, o->members, err, sizeof(err)) < 0) {
            fprintf(stderr, "raidkit bench: %s\n", err);
            ret = 2;
            goto out;
        }
    }
    bool has_noop = false;
    for (int c = 0; c < rep->nconfigs; c++)
        has_noop |= !strcmp(rep->configs[c].kind, "noop");
    if (o->model && !has_noop && run_add_config(rep, "noop", o->members, err, sizeof(err)) < 0) {
        fprintf(stderr, "raidkit bench: %s\n", err);
        ret = 2;
        goto out;
    }
    if (o->model) {
        if (rk_emul_profile_load(o->model, &x.emul, err, sizeof(err)) < 0) {
            fprintf(stderr, "raidkit bench: --model %s: %s\n", o->model, err);
            ret = 2;
            goto out;
        }
        x.have_emul = true;
        snprintf(rep->model_name, sizeof(rep->model_name), "%s", x.emul.name);
        if (run_model_json(&x) < 0)
            goto out;
    }
    if (run_fio_version(rep->fio_version, sizeof(rep->fio_version)) < 0) {
        fprintf(stderr, "raidkit bench: fio is not installed (scripts/install-deps.sh)\n");
        goto out;
    }
    bench_machine_probe(&rep->machine);

    for (int j = 0; j < x.suite.njobs; j++)
        if (x.suite.jobs[j].iodepth > x.max_iodepth)
            x.max_iodepth = x.suite.jobs[j].iodepth;
    x.member_size = bench_suite_max_size(&x.suite) + RUN_MEMBER_SLACK;

    /* A private directory for members and sockets, removed at the end. */
    const char *base = o->dir ? o->dir : "/dev/shm";
    if (access(base, W_OK) < 0 && !o->dir)
        base = "/tmp";
    snprintf(x.work, sizeof(x.work), "%s/raidkit-bench.XXXXXX", base);
    if (!mkdtemp(x.work)) {
        fprintf(stderr, "raidkit bench: cannot create a directory in %s: %s\n", base,
                strerror(errno));
        x.work[0] = '\0';
        goto out;
    }
    if (o->model)
        snprintf(rep->target, sizeof(rep->target), "model %s (member files in %s)", rep->model_name,
                 base);
    else
        snprintf(rep->target, sizeof(rep->target), "member files in %s", base);

    for (int c = 0; c < rep->nconfigs; c++)
        for (int j = 0; j < x.suite.njobs; j++)
            x.est_left += rep->min_trials * run_trial_cost(&x.suite.jobs[j]);

    run_interrupted = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGPIPE, &ign, &old_pipe);
    handlers = true;
    run_now_iso(rep->started, sizeof(rep->started));
    x.t0 = run_mono();
    fprintf(stderr, "[bench] suite %s: %s\n[bench] reproduces: %s\n", x.suite.name,
            x.suite.description, x.suite.reproduces);

    /* The noop ceiling first: every other row is judged against it. It is measured again at
     * the end (its trials pooled): on a shared machine the load changes during a run, and a
     * ceiling from the busy start alone was below rows measured later (raid6 523 MB/s over a
     * noop of 360). */
    int order[BENCH_MAX_CONFIGS + 1], no = 0, noop_c = -1;
    for (int c = 0; c < rep->nconfigs; c++)
        if (!strcmp(rep->configs[c].kind, "noop"))
            order[no++] = noop_c = c;
    for (int c = 0; c < rep->nconfigs; c++)
        if (strcmp(rep->configs[c].kind, "noop"))
            order[no++] = c;
    if (noop_c >= 0 && no > 1) {
        order[no++] = noop_c;
        for (int j = 0; j < x.suite.njobs; j++)
            x.est_left += rep->min_trials * run_trial_cost(&x.suite.jobs[j]);
    }

    for (int i = 0; i < no && !run_interrupted; i++) {
        int c = order[i];
        struct bench_config *bc = &rep->configs[c];
        struct run_target t = {0};
        int r;
        bool again = i > 0 && c == noop_c;
        err[0] = '\0';
        if (again && bc->skipped) {
            for (int j = 0; j < x.suite.njobs; j++)
                x.est_left -= rep->min_trials * run_trial_cost(&x.suite.jobs[j]);
            continue;
        }
        if (!strcmp(bc->kind, "raidkit"))
            r = run_setup_raidkit(&x, bc, &t, err, sizeof(err));
        else if (!strcmp(bc->kind, "noop"))
            r = run_setup_noop(&x, &t, err, sizeof(err));
        else if (!strcmp(bc->kind, "nbdkit"))
            r = run_setup_nbdkit(&x, &t, err, sizeof(err));
        else
            r = run_setup_btrfs(&x, bc, &t, err, sizeof(err));
        if (r < 0) {
            bc->skipped = true;
            snprintf(bc->note, sizeof(bc->note), "skipped: %.*s", (int)sizeof(bc->note) - 10,
                     err[0] ? err : strerror(-r));
            fprintf(stderr, "[bench] %s %s\n", bc->name, bc->note);
            for (int j = 0; j < x.suite.njobs; j++)
                x.est_left -= rep->min_trials * run_trial_cost(&x.suite.jobs[j]);
        } else {
            if (strcmp(bc->kind, "raidkit") && strcmp(bc->kind, "noop") && x.have_emul)
                snprintf(bc->note, sizeof(bc->note), "plain file, not modelled");
            fprintf(stderr, "[bench] %s: up (%s)\n", bc->name, t.uri[0] ? t.uri : t.filename);
            run_config_jobs(&x, c, &t, again ? rep->min_trials : 0);
        }
        run_teardown(&x, &t);
    }
    rep->interrupted = run_interrupted;
    run_now_iso(rep->finished, sizeof(rep->finished));
    bench_report_finish(rep);

    const char *outdir = o->out ? o->out : "bench-out";
    err[0] = '\0';
    if (bench_write_reports(rep, outdir, o->formats ? o->formats : BENCH_FMT_ALL, err,
                            sizeof(err)) < 0) {
        fprintf(stderr, "raidkit bench: %s\n", err);
        goto out;
    }
    if (o->json_stdout) {
        char *js = bench_render_json(rep);
        if (js) {
            puts(js);
            free(js);
        }
    } else {
        bench_render_text(rep, stdout);
    }
    fflush(stdout);
    fprintf(stderr, "[bench] reports in %s/%s\n", outdir,
            (o->formats & BENCH_FMT_HTML) || !o->formats ? " (report.html)" : "");
    ret = rep->interrupted ? 130 : 0;
out:
    if (handlers) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGPIPE, &old_pipe, NULL);
    }
    run_cleanup_work(&x);
    free(rep->model_json);
    free(rep);
    return ret;
}
