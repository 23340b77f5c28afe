/* The "cache" back-end: the SSD cache tier in front of an emulated disk, run through the CLI as a
 * user would (raidkit create, raidkit cache create, raidkit serve --cache), plus its two parts
 * alone: the raw cache SSD and the raw backing disk (docs/BENCHMARKS.md "Cache configurations").
 *
 *   cache-MODE:  fio -> NBD -> raidkit serve --cache C.img --cache-emulate SSD --emulate HDD
 *                                [cache MODE: C.img (SSD model)] -> linear -> B.img (HDD model)
 *   cache-ssd:   fio -> NBD -> raidkit serve --emulate SSD S.img   (the raw cache member)
 *   cache-hdd:   fio -> NBD -> raidkit serve --emulate HDD B.img   (the backing alone)
 *
 * The filesystem jobs make the same devices (bench_cache_make) and run the same command line
 * (bench_cache_argv) as `raidkit fuse` under a loop device instead (job_fs_dev.c).
 * Every configuration carries its own models (SSD: mushkin-ssd-2015, the seed 003 SSD; HDD:
 * hdd-7200), independent of --model, so one run holds the whole seed 003 table. Environment:
 * RAIDKIT_BENCH_CACHE_SSD / RAIDKIT_BENCH_CACHE_HDD (profile name or INI path),
 * RAIDKIT_BENCH_CACHE_SIZE (cache device bytes, K/M/G; default here half the suite's largest
 * region, for the filesystem jobs the whole filesystem device).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench/run.h"
#include "core/util.h"

#define CACHE_SSD_DEFAULT "mushkin-ssd-2015"
#define CACHE_HDD_DEFAULT "hdd-7200"

/* State of a cache configuration (t->priv). */
struct cache_state {
    pid_t serve;
    struct bench_cache_devs devs;
    char ctl[600], log[600];
};

static const struct {
    const char *name, *label, *mode; /* mode NULL: a raw device alone */
} cache_configs[] = {
    {"cache-writethrough", "raidkit cache writethrough", "writethrough"},
    {"cache-writeback", "raidkit cache writeback", "writeback"},
    {"cache-writearound", "raidkit cache writearound", "writearound"},
    {"cache-none", "raidkit cache none", "none"},
    {"cache-ssd", "raidkit raw cache SSD", NULL},
    {"cache-hdd", "raidkit raw backing HDD", NULL},
};

static bool cache_describe(struct bench_config *bc, const char *name, int members)
{
    for (size_t i = 0; i < sizeof(cache_configs) / sizeof(cache_configs[0]); i++) {
        if (strcmp(name, cache_configs[i].name))
            continue;
        snprintf(bc->label, sizeof(bc->label), "%s", cache_configs[i].label);
        bc->members = 1;
        return true;
    }
    return false;
}

const char *bench_cache_mode(const char *name)
{
    for (size_t i = 0; i < sizeof(cache_configs) / sizeof(cache_configs[0]); i++)
        if (!strcmp(name, cache_configs[i].name))
            return cache_configs[i].mode;
    return NULL;
}

/* A profile argument: a built-in name as is; "mushkin-ssd-2015" (no built-in) is looked up as
 * bench/profiles/NAME.ini under $RAIDKIT_SOURCE_DIR, the working directory and next to the
 * binary. Returns 0 with the argument in buf, -ENOENT when the file is nowhere. */
int bench_cache_profile(const char *name, char *buf, size_t len)
{
    struct rk_emul_params p;
    char err[256], exe[PATH_MAX];
    bool path = strchr(name, '/') || strstr(name, ".ini");
    if (path || !rk_emul_profile_load(name, &p, err, sizeof(err))) {
        snprintf(buf, len, "%s", name);
        return !path || access(buf, R_OK) == 0 ? 0 : -ENOENT;
    }
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    const char *dirs[3] = {src, ".", NULL};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *sl = strrchr(exe, '/');
        if (sl) {
            snprintf(sl, sizeof(exe) - (size_t)(sl - exe), "/..");
            dirs[2] = exe;
        }
    }
    for (int i = 0; i < 3; i++) {
        if (!dirs[i])
            continue;
        snprintf(buf, len, "%s/bench/profiles/%s.ini", dirs[i], name);
        if (access(buf, R_OK) == 0)
            return 0;
    }
    return -ENOENT;
}

int bench_cache_argv(const struct bench_cache_devs *d, const char *name, const char *const head[],
                     char a[BENCH_CACHE_ARGS][640], char *argv[BENCH_CACHE_ARGS + 1])
{
    int n = 0;
    const char *mode = bench_cache_mode(name);
    snprintf(a[n++], 640, "%.639s", d->rk);
    for (int i = 0; head[i] && n < BENCH_CACHE_ARGS - 4; i++)
        snprintf(a[n++], 640, "%s", head[i]);
    if (mode) {
        snprintf(a[n++], 640, "--emulate=%s", d->hdd);
        snprintf(a[n++], 640, "--cache=%s", d->cachedev);
        snprintf(a[n++], 640, "--cache-emulate=%s", d->ssd);
    } else {
        snprintf(a[n++], 640, "--emulate=%s", strcmp(name, "cache-ssd") ? d->hdd : d->ssd);
    }
    snprintf(a[n++], 640, "%s", d->backing);
    for (int i = 0; i < n; i++)
        argv[i] = a[i];
    argv[n] = NULL;
    return n;
}

/* Run a raidkit command; on failure its output becomes the error. */
static int cache_cli(char *const argv[], char *err, size_t errlen)
{
    char out[1024] = "";
    int r = run_cmd(argv, out, sizeof(out), true);
    if (r == 0)
        return 0;
    run_chomp(out);
    char *nl = strrchr(out, '\n');
    rk_set_err(err, errlen, "`raidkit %s %s` failed (%d): %s", argv[1],
               argv[2] && argv[2][0] != '-' ? argv[2] : "", r, nl ? nl + 1 : out);
    return r < 0 ? r : -EIO;
}

/* Start `raidkit serve` (its stderr into st->log) and wait up to 20 s for its socket. */
static int cache_spawn(struct cache_state *st, char *const argv[], const char *sock, char *err,
                       size_t errlen)
{
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int dn = open("/dev/null", O_RDWR);
        int lf = open(st->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(dn, 0);
        dup2(dn, 1);
        dup2(lf >= 0 ? lf : dn, 2);
        signal(SIGINT, SIG_IGN); /* the bench stops it; Ctrl-C goes to the bench */
        execv(argv[0], argv);
        _exit(127);
    }
    st->serve = pid;
    for (int i = 0; i < 2000; i++) {
        if (access(sock, F_OK) == 0)
            return 0;
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            st->serve = 0;
            char msg[300] = "";
            FILE *f = fopen(st->log, "r");
            if (f) {
                if (!fgets(msg, sizeof(msg), f))
                    msg[0] = '\0';
                fclose(f);
            }
            run_chomp(msg);
            rk_set_err(err, errlen, "raidkit serve exited at start: %s", msg);
            return -EIO;
        }
        usleep(10000);
    }
    rk_set_err(err, errlen, "raidkit serve did not create its socket in 20 s");
    return -ETIMEDOUT;
}

uint64_t bench_cache_size(uint64_t def)
{
    uint64_t v;
    const char *e = getenv("RAIDKIT_BENCH_CACHE_SIZE");
    if (e && rk_parse_size(e, &v) == 0 && v >= (16u << 20))
        return v;
    return def;
}

int bench_cache_make(const char *name, const char *dir, const char *prefix, uint64_t backing_size,
                     uint64_t cache_size, struct bench_cache_devs *d, char *err, size_t errlen)
{
    char size[32];
    const char *hdd =
        getenv("RAIDKIT_BENCH_CACHE_HDD") ? getenv("RAIDKIT_BENCH_CACHE_HDD") : CACHE_HDD_DEFAULT;
    const char *ssd =
        getenv("RAIDKIT_BENCH_CACHE_SSD") ? getenv("RAIDKIT_BENCH_CACHE_SSD") : CACHE_SSD_DEFAULT;
    const char *mode = bench_cache_mode(name);
    memset(d, 0, sizeof(*d));
    int r = run_self_exe(d->rk, sizeof(d->rk), err, errlen);
    if (r < 0)
        return r;
    const char *bad = bench_cache_profile(ssd, d->ssd, sizeof(d->ssd)) < 0   ? ssd
                      : bench_cache_profile(hdd, d->hdd, sizeof(d->hdd)) < 0 ? hdd
                                                                             : NULL;
    if (bad) {
        rk_set_err(err, errlen, "no profile '%s' (bench/profiles/%s.ini not found)", bad, bad);
        return -ENOENT;
    }
    snprintf(d->backing, sizeof(d->backing), "%.500s/%s%s-m0.img", dir, prefix, name);
    snprintf(size, sizeof(size), "%" PRIu64, backing_size);
    if ((r = run_fill_file(d->backing, backing_size, err, errlen)) < 0)
        return r;
    char *create[] = {d->rk,     "create", "--level",   "linear",   "--size", size,
                      "--force", "--name", "benchback", d->backing, NULL};
    if ((r = cache_cli(create, err, errlen)) < 0 || !mode)
        return r;
    snprintf(d->cachedev, sizeof(d->cachedev), "%.500s/%s%s-cache.img", dir, prefix, name);
    if ((r = run_fill_file(d->cachedev, cache_size, err, errlen)) < 0)
        return r;
    char *cc[] = {d->rk, "cache", "create", "--mode", (char *)mode, d->cachedev, d->backing, NULL};
    return cache_cli(cc, err, errlen);
}

void bench_cache_unmake(struct bench_cache_devs *d)
{
    if (d->backing[0])
        unlink(d->backing);
    if (d->cachedev[0])
        unlink(d->cachedev);
    d->backing[0] = d->cachedev[0] = '\0';
}

static int cache_start(struct run_ctx *x, const struct bench_config *bc, struct run_target *t,
                       char *err, size_t errlen)
{
    char sock[560], threads[32], listen[600], ctl[620], a[BENCH_CACHE_ARGS][640];
    char *argv[BENCH_CACHE_ARGS + 1];
    struct cache_state *st = run_priv_new(t, sizeof(*st), err, errlen);
    if (!st)
        return -ENOMEM;
    /* The study's SSD held its whole file; ours holds half the largest region, so admission and
     * eviction matter (docs/BENCHMARKS.md "Cache configurations"). */
    uint64_t csize = bench_cache_size(bench_suite_max_size(&x->suite) / 2 + (64ull << 20));
    int r = bench_cache_make(bc->name, x->work, "", x->member_size, csize, &st->devs, err, errlen);
    if (r < 0)
        return r;
    snprintf(st->ctl, sizeof(st->ctl), "%.500s/ctl.sock", x->work);
    snprintf(st->log, sizeof(st->log), "%.500s/serve.log", x->work);
    run_socket_path(x, sock, sizeof(sock));
    snprintf(threads, sizeof(threads), "--threads=%d",
             2 * x->max_iodepth < 16 ? 16 : 2 * x->max_iodepth);
    snprintf(listen, sizeof(listen), "--listen=unix:%s", sock);
    snprintf(ctl, sizeof(ctl), "--control=%s", st->ctl);
    const char *head[] = {"serve", threads, listen, ctl, NULL};
    bench_cache_argv(&st->devs, bc->name, head, a, argv);
    if ((r = cache_spawn(st, argv, sock, err, errlen)) < 0)
        return r;
    snprintf(t->uri, sizeof(t->uri), "nbd+unix:///?socket=%.570s", sock);
    return 0;
}

static void cache_stop(struct run_ctx *x, struct run_target *t)
{
    struct cache_state *st = t->priv;
    if (!st)
        return;
    if (st->serve > 0) {
        kill(st->serve, SIGTERM);
        waitpid(st->serve, NULL, 0);
    }
    bench_cache_unmake(&st->devs);
    unlink(st->ctl);
    unlink(st->log);
    free(st);
    t->priv = NULL;
}

/* A counter of a status "cache" object: the number, or 0 when absent. */
static uint64_t cache_num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

/* The "cache" object of a parsed status document (at top level or under "status"), or NULL. */
static const cJSON *cache_object(const cJSON *root)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "status");
    const cJSON *cache = cJSON_GetObjectItemCaseSensitive(st ? st : root, "cache");
    return cJSON_IsObject(cache) ? cache : NULL;
}

int bench_cache_parse_status(const char *json, uint64_t c[4])
{
    cJSON *root = cJSON_Parse(json);
    const cJSON *cache = cache_object(root);
    if (cache) {
        c[0] = cache_num(cache, "read_hits");
        c[1] = cache_num(cache, "read_misses");
        c[2] = cache_num(cache, "write_hits");
        c[3] = cache_num(cache, "write_misses");
    }
    cJSON_Delete(root);
    return cache ? 0 : -ENOENT;
}

int bench_cache_parse_dirty(const char *json, uint64_t *dirty, char *state, size_t len)
{
    cJSON *root = cJSON_Parse(json);
    const cJSON *cache = cache_object(root);
    if (cache) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(cache, "state");
        *dirty = cache_num(cache, "dirty_bytes");
        snprintf(state, len, "%s", cJSON_IsString(s) ? s->valuestring : "?");
    }
    cJSON_Delete(root);
    return cache ? 0 : -ENOENT;
}

int bench_cache_status(const char *ctl, char *out, size_t len)
{
    char rk[PATH_MAX], err[64];
    if (run_self_exe(rk, sizeof(rk), err, sizeof(err)) < 0)
        return -ENOENT;
    char *argv[] = {rk, "status", "--json", "--control", (char *)ctl, NULL};
    out[0] = '\0';
    return run_cmd(argv, out, len, false) != 0 ? -EIO : 0;
}

int bench_cache_hits(const char *ctl, uint64_t c[4])
{
    char out[16384];
    if (bench_cache_status(ctl, out, sizeof(out)) < 0)
        return -EIO;
    return bench_cache_parse_status(out, c);
}

/* Cache hit counters now (bench_cache_hits). */
static int cache_hits(const struct run_target *t, uint64_t c[4])
{
    const struct cache_state *st = t->priv;
    return st ? bench_cache_hits(st->ctl, c) : -EIO;
}

const struct bench_backend bench_backend_cache = {
    .kind = "cache",
    .own_models = true,
    .names = "cache-writethrough, cache-writeback, cache-writearound, cache-none, cache-ssd, "
             "cache-hdd",
    .describe = cache_describe,
    .start = cache_start,
    .stop = cache_stop,
    .hits = cache_hits,
};
