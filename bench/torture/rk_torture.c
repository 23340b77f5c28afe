/* rk_torture: the fast power-cut torture driver (docs/TORTURE.md "The fast driver").
 *
 *   rk_torture [--levels raid1,raid10,raid5,raid6] [--variants fail,remove,rocheck]
 *              [--cuts N] [--seed S] [--path dev|nbd] [--threads T] [--member-mib M]
 *              [--cut-max C] [--flush-pct P] [--fua-pct P] [--dir DIR] [--max-fail K] [-v]
 *              | --self-test
 *
 * Per level and variant, N cycles; cycle k uses seed S+k (replay one with --seed S+k --cuts 1):
 * a fresh array over small member files (a template copied in), opened in this process over
 * fault members of one shared power domain (keep=random), random stamped writes / FUA writes /
 * FLUSHes from T threads (or through the real NBD server over a socketpair), a power cut at a
 * random member write (1..C), close without a clean shutdown, reopen from the member images,
 * then the checks of the variant:
 *   fail:   verify (all members) -> wait for the resync -> scrub: 0 mismatches -> fail slot
 *           seed % members -> verify again;
 *   remove: reopen degraded without slot seed % members (the dirty + degraded start) -> verify
 *           -> replace the slot with an empty member, rebuild -> scrub: 0 -> verify again.
 *   rocheck: reopen read-only degraded without slot seed % members (raid6, odd seeds: and a
 *           second slot), no force: the dirty + degraded read-only start that reads the log
 *           (RK_LOG_CHECK) is refused (counted) or accepted; accepted -> verify (no block may
 *           read garbage: no live entry was left) -> the members are byte for byte as before
 *           (nothing written) -> the writable degraded start (no force) is accepted too ->
 *           verify.
 * One summary line per level and variant, one FAIL line per failing cycle (its library log is
 * kept in DIR). Exit 0 when every cycle passed, 1 when one failed, 2 on usage errors. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "claims.h"
#include "core/util.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"
#include "driver.h"
#include "workload.h"

enum variant { VAR_FAIL, VAR_REMOVE, VAR_ROCHECK };
static const char *const var_name[] = {"fail", "remove", "rocheck"};

/* Sums over a level's cycles. */
struct sum {
    uint64_t cycles, cuts, failed, refused, forced, ops, writes, fuas, flushes, mism, mism_cycles;
    uint64_t forced_mism; /* scrub mismatches not judged (raid6, forced start, cells unproven) */
    struct wl_verify v1, v2;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int level_members(int level)
{
    switch (level) {
    case RK_LEVEL_RAID1:
        return 2;
    case RK_LEVEL_RAID10:
    case RK_LEVEL_RAID5:
        return 4;
    case RK_LEVEL_RAID6:
        return 5;
    default:
        return 3;
    }
}

/* Write the template into a's member files (truncate, then the non-zero blocks). */
static int arr_reset(const struct cfg *c, struct arr *a)
{
    for (int i = 0; i < a->n; i++) {
        int fd = open(a->path[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
            return -errno;
        int r = ftruncate(fd, (off_t)c->member_bytes) ? -errno : 0;
        for (uint64_t k = 0; !r && k < a->nnz[i]; k++) {
            uint64_t off = a->nz[i][k] * STAMP_BLOCK;
            if (pwrite(fd, a->tpl[i] + off, STAMP_BLOCK, (off_t)off) != STAMP_BLOCK)
                r = -EIO;
        }
        close(fd);
        if (r)
            return r;
    }
    return 0;
}

/* Create level's array once and keep its members' content as the template. */
static int arr_setup(const struct cfg *c, struct arr *a, const char *name)
{
    memset(a, 0, sizeof(*a));
    if (rk_level_parse(name, &a->level) < 0) {
        fprintf(stderr, "rk_torture: unknown level '%s'\n", name);
        return -EINVAL;
    }
    a->name = rk_level_name(a->level);
    a->n = level_members(a->level);
    const char *paths[MAX_MEMBERS];
    for (int i = 0; i < a->n; i++) {
        snprintf(a->path[i], sizeof(a->path[i]), "%s/%s-m%d.img", c->dir, a->name, i);
        unlink(a->path[i]);
        paths[i] = a->path[i];
    }
    struct rk_create_opts o = {
        .level = a->level, .chunk = CHUNK, .name = "torture", .size = c->member_bytes};
    char err[256];
    int r = rk_volume_create(paths, a->n, &o, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "rk_torture: create %s: %s\n", a->name, err);
        return r;
    }
    for (int i = 0; i < a->n; i++) {
        a->tpl[i] = calloc(1, c->member_bytes);
        a->nz[i] = calloc(c->member_bytes / STAMP_BLOCK, sizeof(uint64_t));
        int fd = open(a->path[i], O_RDONLY | O_CLOEXEC);
        if (!a->tpl[i] || !a->nz[i] || fd < 0)
            return -ENOMEM;
        ssize_t got = pread(fd, a->tpl[i], c->member_bytes, 0);
        close(fd);
        if (got < 0)
            return -EIO;
        static const uint8_t zero[STAMP_BLOCK];
        for (uint64_t k = 0; k < c->member_bytes / STAMP_BLOCK; k++)
            if (memcmp(a->tpl[i] + k * STAMP_BLOCK, zero, STAMP_BLOCK))
                a->nz[i][a->nnz[i]++] = k;
    }
    struct rk_volume *v;
    r = rk_volume_open(paths, a->n, NULL, &v, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "rk_torture: open %s: %s\n", a->name, err);
        return r;
    }
    a->nblocks = rk_volume_dev(v)->size / STAMP_BLOCK;
    rk_volume_close(v);
    return 0;
}

static void arr_free(struct arr *a)
{
    for (int i = 0; i < a->n; i++) {
        free(a->tpl[i]);
        free(a->nz[i]);
        unlink(a->path[i]);
    }
}

/* The log of the library (stderr) goes to c->logpath, emptied at every cycle. */
static void log_reset(const struct cfg *c)
{
    fflush(stderr);
    if (ftruncate(STDERR_FILENO, 0) == 0)
        lseek(STDERR_FILENO, 0, SEEK_SET);
    (void)c;
}

/* Phase 1: open over fault members, arm the cut, run the workload, close uncleanly. */
static int cycle_load(const struct cfg *c, struct arr *a, struct wl *w, struct cyc *cy,
                      uint64_t *rng)
{
    const char *paths[MAX_MEMBERS];
    char spec[96], err[256];
    snprintf(spec, sizeof(spec), "keep=random,seed=%" PRIu64 ",power=shared", cy->seed);
    struct rk_open_opts oo = {.nfaults = a->n};
    for (int i = 0; i < a->n; i++) {
        paths[i] = a->path[i];
        oo.fault_slot[i] = (uint32_t)i;
        oo.fault_spec[i] = spec;
    }
    struct rk_volume *v;
    int r = rk_volume_open(paths, a->n, &oo, &v, err, sizeof(err));
    if (r < 0) {
        FAILF(cy, "open with faults: %s", err);
        return r;
    }
    struct rk_dev *raid = rk_volume_raid(v), *m0 = rk_raid_member(raid, 0);
    cy->cut_after = 1 + wl_rand(rng) % c->cut_max;
    rk_fault_cut_after(m0, cy->cut_after);
    if (c->nbd)
        r = wl_run_nbd(w, rk_volume_dev(v), c->threads, cy->seed, err, sizeof(err));
    else
        r = wl_run_dev(w, rk_volume_dev(v), c->threads, cy->seed);
    cy->cut = rk_fault_was_cut(m0);
    if (r)
        FAILF(cy, "workload: %s", c->nbd ? err : strerror(-r));
    else if (!cy->cut && w->failed)
        FAILF(cy, "a request failed (%s) without a power cut", strerror(-w->first_err));
    rk_volume_close(v); /* after the cut every member write fails: nothing is marked clean */
    return 0;
}

static void vsum(struct wl_verify *s, const struct wl_verify *v)
{
    s->old += v->old;
    s->neu += v->neu;
    s->lost_flush += v->lost_flush;
    s->lost_fua += v->lost_fua;
    s->garbage += v->garbage;
    s->read_errors += v->read_errors;
    s->unproven += v->unproven;
}

/* One cycle of a level and variant; adds to s. Returns true when it passed. */
static bool cycle_run(const struct cfg *c, struct arr *a, enum variant var, uint64_t seed,
                      struct sum *s)
{
    struct cyc cy = {.seed = seed};
    uint64_t rng = seed ^ 0x5eed5eed5eedull;
    struct wl w;
    log_reset(c);
    if (wl_init(&w, a->nblocks, seed, c->max_ops) < 0) {
        fprintf(stdout, "FAIL %s: out of memory\n", a->name);
        return false;
    }
    w.flush_pct = c->flush_pct;
    w.fua_pct = c->fua_pct;
    if (a->level == RK_LEVEL_RAID5 || a->level == RK_LEVEL_RAID6) {
        w.lay.n = (uint32_t)a->n;
        w.lay.np = a->level == RK_LEVEL_RAID6 ? 2 : 1;
        w.lay.slot = (uint32_t)(seed % (uint64_t)a->n); /* as cycle_fail and cycle_remove */
    }
    int r = arr_reset(c, a);
    if (r < 0)
        FAILF(&cy, "reset members: %s", strerror(-r));
    else if (cycle_load(c, a, &w, &cy, &rng) == 0 && !cy.fail)
        var == VAR_REMOVE    ? cycle_remove(c, a, &w, &cy)
        : var == VAR_ROCHECK ? cycle_rocheck(c, a, &w, &cy)
                             : cycle_fail(c, a, &w, &cy);
    s->cycles++;
    s->refused += cy.refused;
    s->forced += cy.forced;
    s->forced_mism += cy.mism_lax;
    s->cuts += cy.cut;
    s->ops += w.ops;
    s->writes += w.writes;
    s->fuas += w.fuas;
    s->flushes += w.flushes;
    s->mism += cy.mism;
    s->mism_cycles += cy.mism > 0;
    vsum(&s->v1, &cy.v1);
    vsum(&s->v2, &cy.v2);
    if (c->verbose)
        printf("cycle %s %s seed=%" PRIu64 " cut_after=%" PRIu64 " ops=%" PRIu64 " old=%" PRIu64
               " new=%" PRIu64 " unproven=%" PRIu64 " %s\n",
               a->name, var_name[var], seed, cy.cut_after, w.ops, cy.v1.old, cy.v1.neu,
               cy.v1.unproven,
               cy.fail      ? cy.why
               : cy.refused ? (var == VAR_ROCHECK ? "refused" : "refused, forced start ok")
                            : "ok");
    if (cy.fail) {
        s->failed++;
        char keep[560];
        snprintf(keep, sizeof(keep), "%s/fail-%s-%s-%" PRIu64 ".log", c->dir, a->name,
                 var_name[var], seed);
        fflush(stderr);
        char cmd[1100];
        snprintf(cmd, sizeof(cmd), "cp '%s' '%s' 2>/dev/null", c->logpath, keep);
        if (s->failed > 20 || system(cmd) != 0) /* the logs of the first 20 failures only */
            keep[0] = 0;
        printf("FAIL %s %s seed=%" PRIu64 " cut_after=%" PRIu64 ": %s%s%s\n", a->name,
               var_name[var], seed, cy.cut_after, cy.why, keep[0] ? "; log " : "", keep);
    }
    fflush(stdout);
    wl_free(&w);
    return !cy.fail;
}

static void print_sum(const char *level, const char *variant, const struct sum *s, double secs)
{
    printf("torture-fast %s %s: cycles=%" PRIu64 " cuts=%" PRIu64 " failed=%" PRIu64
           " refused=%" PRIu64 " forced=%" PRIu64 " ops=%" PRIu64 " writes=%" PRIu64 " fua=%" PRIu64
           " flushes=%" PRIu64 " old=%" PRIu64 " new=%" PRIu64 " lost_flush=%" PRIu64
           " lost_fua=%" PRIu64 " garbage=%" PRIu64 " read_errors=%" PRIu64 " unproven=%" PRIu64
           " scrub_mismatches=%" PRIu64 " forced_scrub_mismatches=%" PRIu64 " after_old=%" PRIu64
           " after_new=%" PRIu64 " after_lost=%" PRIu64 " after_garbage=%" PRIu64
           " after_read_errors=%" PRIu64 " seconds=%.1f\n",
           level, variant, s->cycles, s->cuts, s->failed, s->refused, s->forced, s->ops, s->writes,
           s->fuas, s->flushes, s->v1.old, s->v1.neu, s->v1.lost_flush, s->v1.lost_fua,
           s->v1.garbage, s->v1.read_errors, s->v1.unproven, s->mism, s->forced_mism, s->v2.old,
           s->v2.neu, s->v2.lost_flush + s->v2.lost_fua, s->v2.garbage, s->v2.read_errors, secs);
    fflush(stdout);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: rk_torture [--levels L,..] [--variants fail,remove,rocheck] [--cuts N]\n"
               "       [--seed S] [--path dev|nbd] [--threads T] [--member-mib M] [--cut-max C]\n"
               "       [--flush-pct P] [--fua-pct P] [--dir DIR] [--max-ops N] [--max-fail K]\n"
               "       [--deadline SECONDS] [--no-resync] [-v] | --self-test\n");
}

/* Parse argv into c; returns 0, 1 (self-test asked and run: exit code in *rc) or 2 (usage). */
static int parse_args(int argc, char **argv, struct cfg *c, int *rc)
{
    static const struct option lo[] = {{"levels", 1, 0, 'l'},
                                       {"variants", 1, 0, 'V'},
                                       {"cuts", 1, 0, 'n'},
                                       {"seed", 1, 0, 's'},
                                       {"path", 1, 0, 'p'},
                                       {"threads", 1, 0, 't'},
                                       {"member-mib", 1, 0, 'm'},
                                       {"cut-max", 1, 0, 'c'},
                                       {"dir", 1, 0, 'd'},
                                       {"max-ops", 1, 0, 'o'},
                                       {"max-fail", 1, 0, 'f'},
                                       {"verbose", 0, 0, 'v'},
                                       {"self-test", 0, 0, 'T'},
                                       {"deadline", 1, 0, 'D'},
                                       {"no-resync", 0, 0, 'R'},
                                       {"flush-pct", 1, 0, 'F'},
                                       {"fua-pct", 1, 0, 'U'},
                                       {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
    *c = (struct cfg){.cuts = 200,
                      .seed = 1,
                      .cut_max = 1500,
                      .member_bytes = 5ull << 20,
                      .max_ops = 200000,
                      .threads = 4,
                      .max_fail = 20};
    snprintf(c->levels, sizeof(c->levels), "raid1,raid10,raid5,raid6");
    snprintf(c->variants, sizeof(c->variants), "fail,remove");
    const char *base = getenv("TMPDIR");
    if (access("/dev/shm", W_OK) == 0)
        base = "/dev/shm";
    snprintf(c->dir, sizeof(c->dir), "%s", base ? base : "/tmp");
    int opt;
    while ((opt = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
        char *end = NULL;
        uint64_t x = optarg ? strtoull(optarg, &end, 10) : 0;
        bool num = optarg && *optarg && end && !*end;
        switch (opt) {
        case 'l':
            snprintf(c->levels, sizeof(c->levels), "%s", optarg);
            continue;
        case 'V':
            snprintf(c->variants, sizeof(c->variants), "%s", optarg);
            continue;
        case 'p':
            if (strcmp(optarg, "dev") && strcmp(optarg, "nbd"))
                break;
            c->nbd = !strcmp(optarg, "nbd");
            continue;
        case 'd':
            snprintf(c->dir, sizeof(c->dir), "%s", optarg);
            continue;
        case 'v':
            c->verbose = 1;
            continue;
        case 'R':
            c->no_resync = true;
            continue;
        case 'T':
            *rc = stamp_self_test() ? 0 : 1;
            printf("rk_torture self-test: %s\n", *rc ? "FAILED" : "ok");
            return 1;
        case 'h':
            usage(stdout);
            *rc = 0;
            return 1;
        default:
            break;
        }
        if (opt == '?' || !num) {
            if (opt != '?')
                fprintf(stderr, "rk_torture: --%s: not a number or value: '%s'\n",
                        lo[0].name ? "option" : "", optarg ? optarg : "");
            usage(stderr);
            return 2;
        }
        switch (opt) {
        case 'n':
            c->cuts = x;
            break;
        case 's':
            c->seed = x;
            break;
        case 't':
            c->threads = (int)(x ? (x > 32 ? 32 : x) : 1);
            break;
        case 'm':
            c->member_bytes = (x < 2 ? 2 : x) << 20;
            break;
        case 'c':
            c->cut_max = x ? x : 1;
            break;
        case 'o':
            c->max_ops = x ? x : 1;
            break;
        case 'f':
            c->max_fail = (int)x;
            break;
        case 'D':
            c->deadline = (double)x;
            break;
        case 'F':
            c->flush_pct = (unsigned)(x > 100 ? 100 : x);
            break;
        case 'U':
            c->fua_pct = (unsigned)(x > 100 ? 100 : x);
            break;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "rk_torture: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return 0;
}

/* Run every cycle of one level and both variants asked for. Returns the failed cycles. */
static uint64_t run_level(const struct cfg *c, const char *level)
{
    struct arr a;
    if (arr_setup(c, &a, level) < 0) {
        printf("FAIL %s: cannot set up the array (see above)\n", level);
        return 1;
    }
    uint64_t failed = 0;
    char vars[64];
    snprintf(vars, sizeof(vars), "%s", c->variants);
    for (char *sv = NULL, *var = strtok_r(vars, ",", &sv); var; var = strtok_r(NULL, ",", &sv)) {
        int vi = 0;
        while (vi < 3 && strcmp(var, var_name[vi]))
            vi++;
        if (vi == 3) {
            printf("FAIL: unknown variant '%s' (fail, remove, rocheck)\n", var);
            failed++;
            continue;
        }
        struct sum s = {0};
        double t0 = now_s();
        for (uint64_t k = 0; k < c->cuts; k++) {
            if (c->deadline > 0 && now_s() - c->t0 > c->deadline) {
                printf("deadline: %s %s stopped after %" PRIu64 " of %" PRIu64 " cycles\n", a.name,
                       var, k, c->cuts);
                break;
            }
            if (!cycle_run(c, &a, (enum variant)vi, c->seed + k, &s) &&
                (int)s.failed >= c->max_fail && c->max_fail > 0) {
                printf("stopping %s %s after %" PRIu64 " failed cycles\n", a.name, var, s.failed);
                break;
            }
        }
        print_sum(a.name, var, &s, now_s() - t0);
        failed += s.failed;
    }
    arr_free(&a);
    return failed;
}

int main(int argc, char **argv)
{
    struct cfg c;
    int rc = 0;
    int p = parse_args(argc, argv, &c, &rc);
    if (p)
        return p == 1 ? rc : 2;
    c.t0 = now_s();
    char tmpl[400];
    snprintf(tmpl, sizeof(tmpl), "%.380s/rk-torture-XXXXXX", c.dir);
    if (!mkdtemp(tmpl)) {
        fprintf(stderr, "rk_torture: --dir %s: cannot make a directory: %s\n", c.dir,
                strerror(errno));
        return 2;
    }
    snprintf(c.dir, sizeof(c.dir), "%s", tmpl);
    snprintf(c.logpath, sizeof(c.logpath), "%s/library.log", c.dir);
    /* The library logs every cut, failure and resync on stderr: into a file, one cycle's worth. */
    int saved = dup(STDERR_FILENO);
    if (!freopen(c.logpath, "w+", stderr)) {
        fprintf(stdout, "rk_torture: cannot open %s\n", c.logpath);
        return 2;
    }
    rk_log_set_level(RK_LOG_WARN);
    printf("rk_torture: levels=%s variants=%s cuts=%" PRIu64 " seed=%" PRIu64 " path=%s "
           "threads=%d member=%" PRIu64 "MiB cut_max=%" PRIu64 " dir=%s\n",
           c.levels, c.variants, c.cuts, c.seed, c.nbd ? "nbd" : "dev", c.threads,
           c.member_bytes >> 20, c.cut_max, c.dir);
    fflush(stdout);
    uint64_t failed = 0;
    char lv[128];
    snprintf(lv, sizeof(lv), "%s", c.levels);
    for (char *sv = NULL, *l = strtok_r(lv, ",", &sv); l; l = strtok_r(NULL, ",", &sv))
        failed += run_level(&c, l);
    if (!failed) { /* keep the directory (logs of failed cycles) only when something failed */
        unlink(c.logpath);
        rmdir(c.dir);
    }
    fflush(stderr);
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC); /* late library lines go nowhere */
    if (devnull >= 0)
        dup2(devnull, STDERR_FILENO);
    if (failed)
        dprintf(saved, "rk_torture: %" PRIu64 " failed cycles; logs in %s\n", failed, c.dir);
    return failed ? 1 : 0;
}
