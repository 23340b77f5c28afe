/* raidkit bench suites: read the INI files in bench/suites/ (suite keys and job defaults first,
 * then one [job] section per fio workload) through the core INI reader. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/job_fs.h"
#include "bench/run.h"
#include "core/ini.h"
#include "core/util.h"

static int suite_int(const char *v, int lo, int hi, int *out)
{
    uint64_t x;
    if (rk_parse_u64(v, &x) < 0 || x < (uint64_t)lo || x > (uint64_t)hi)
        return -EINVAL;
    *out = (int)x;
    return 0;
}

static const char *const suite_rw[] = {"read", "write",     "randread", "randwrite",
                                       "rw",   "readwrite", "randrw",   NULL};

/* "LABEL | MB/s": a published row printed beside the measured ones. */
static int suite_seed_row(struct bench_job *j, const char *v)
{
    const char *bar = strrchr(v, '|');
    if (!bar || j->nseed >= BENCH_MAX_SEED_ROWS)
        return -EINVAL;
    size_t n = (size_t)(bar - v);
    while (n > 0 && v[n - 1] == ' ')
        n--;
    const char *num = bar + 1;
    while (*num == ' ')
        num++;
    char *end;
    errno = 0;
    double x = strtod(num, &end);
    if (n == 0 || n >= sizeof(j->seed[0].label) || end == num || *end || errno || x < 0)
        return -EINVAL;
    struct bench_seed_row *r = &j->seed[j->nseed++];
    memcpy(r->label, v, n);
    r->label[n] = '\0';
    r->mbs = x;
    return 0;
}

/* "LABEL | CONFIG" (suite level): the study's row LABEL is configuration CONFIG. */
static int suite_seed_config(struct bench_suite *s, const char *v, char *msg, size_t msglen)
{
    const char *bar = strrchr(v, '|');
    struct bench_seed_config *m = &s->seed_configs[s->nseed_configs];
    size_t n = bar ? (size_t)(bar - v) : 0;
    while (n > 0 && v[n - 1] == ' ')
        n--;
    const char *cfg = bar ? bar + 1 + strspn(bar + 1, " ") : "";
    struct bench_config bc = {0};
    bool known = false;
    for (int i = 0; bench_backends[i] && cfg[0]; i++)
        known |= bench_backends[i]->describe(&bc, cfg, 4);
    if (s->nseed_configs >= BENCH_MAX_SEED_ROWS || n == 0 || n >= sizeof(m->label) ||
        strlen(cfg) >= sizeof(m->config) || !known) {
        rk_set_err(msg, msglen,
                   "bad value '%s' for 'seed_config' (LABEL | CONFIG, a configuration "
                   "name of --configs)",
                   v);
        return -EINVAL;
    }
    memcpy(m->label, v, n);
    m->label[n] = '\0';
    snprintf(m->config, sizeof(m->config), "%s", cfg);
    for (int i = 0; i < s->nseed_configs; i++) {
        if (!strcmp(s->seed_configs[i].label, m->label)) {
            rk_set_err(msg, msglen, "seed_config: row '%s' given twice", m->label);
            return -EINVAL;
        }
    }
    s->nseed_configs++;
    return 0;
}

/* Apply one job key to j; returns 0, -ENOENT (unknown key) or -EINVAL (bad value). */
static int suite_job_key(struct bench_job *j, const char *k, const char *v)
{
    uint64_t x;
    if (!strcmp(k, "title")) {
        if (strlen(v) >= sizeof(j->title))
            return -EINVAL; /* never cut silently: the title names the study's test */
        snprintf(j->title, sizeof(j->title), "%s", v);
    } else if (!strcmp(k, "rw")) {
        int ok = 0;
        for (int i = 0; suite_rw[i]; i++)
            ok |= !strcmp(v, suite_rw[i]);
        if (!ok)
            return -EINVAL;
        snprintf(j->rw, sizeof(j->rw), "%s", v);
    } else if (!strcmp(k, "bs")) {
        if (rk_parse_size(v, &x) < 0 || x < 512 || x > 64u << 20 || x % 512)
            return -EINVAL;
        j->bs = (uint32_t)x;
    } else if (!strcmp(k, "size")) {
        if (rk_parse_size(v, &x) < 0 || x < (1u << 20) || x > (1ull << 40))
            return -EINVAL;
        j->size = x;
    } else if (!strcmp(k, "iodepth")) {
        return suite_int(v, 1, 1024, &j->iodepth);
    } else if (!strcmp(k, "ramp")) {
        return suite_int(v, 0, 3600, &j->ramp);
    } else if (!strcmp(k, "runtime")) {
        return suite_int(v, 1, 36000, &j->runtime);
    } else if (!strcmp(k, "rwmixread")) {
        return suite_int(v, 0, 100, &j->rwmixread);
    } else if (!strcmp(k, "warmup")) {
        return suite_int(v, 0, 16, &j->warmup);
    } else if (!strcmp(k, "seed_row")) {
        return suite_seed_row(j, v);
    } else if (!strcmp(k, "seed_ref")) { /* "LABEL | MB/s", only beside the row of LABEL */
        int r = suite_seed_row(j, v);
        if (!r)
            j->seed[j->nseed - 1].ref_only = true;
        return r;
    } else if (!strcmp(k, "note")) { /* repeatable: the lines join with a space */
        size_t have = strlen(j->note);
        if (!v[0] || have + (have > 0) + strlen(v) >= sizeof(j->note))
            return -EINVAL; /* never cut silently */
        if (have)
            j->note[have++] = ' ';
        memcpy(j->note + have, v, strlen(v) + 1);
    } else if (!strcmp(k, "loops")) {
        return suite_int(v, 0, 1000, &j->loops);
    } else {
        return fsjob_suite_key(j, k, v); /* filesystem job keys (job_fs_suite.c), or -ENOENT */
    }
    return 0;
}

struct suite_ctx {
    struct bench_suite *s;
    struct bench_job defaults; /* keys before the first [job] */
    struct bench_job *cur;     /* the job being read, NULL before the first [job] */
};

/* A [name] header: a new job with the defaults so far. */
static int suite_section(struct suite_ctx *x, const char *nm, char *msg, size_t msglen)
{
    struct bench_suite *s = x->s;
    if (!nm[0] || strlen(nm) >= sizeof(x->cur->name) ||
        strspn(nm, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
            strlen(nm)) {
        rk_set_err(msg, msglen, "bad job name '%s' (letters, digits, _ and -)", nm);
        return -EINVAL;
    }
    for (int i = 0; i < s->njobs; i++) {
        if (!strcmp(s->jobs[i].name, nm)) {
            rk_set_err(msg, msglen, "job '%s' defined twice", nm);
            return -EINVAL;
        }
    }
    if (s->njobs >= BENCH_MAX_JOBS) {
        rk_set_err(msg, msglen, "more than %d jobs", BENCH_MAX_JOBS);
        return -EINVAL;
    }
    x->cur = &s->jobs[s->njobs++];
    *x->cur = x->defaults;
    snprintf(x->cur->name, sizeof(x->cur->name), "%s", nm);
    x->cur->title[0] = '\0';
    return 0;
}

/* rk_ini_fn of a suite file: suite keys and job defaults first, then [job] sections. */
static int suite_line(void *arg, const char *section, const char *k, const char *v, char *msg,
                      size_t msglen)
{
    struct suite_ctx *x = arg;
    struct bench_suite *s = x->s;
    if (!k)
        return suite_section(x, section, msg, msglen);
    if (!x->cur && !strcmp(k, "name")) {
        snprintf(s->name, sizeof(s->name), "%s", v);
        return 0;
    }
    if (!x->cur && !strcmp(k, "description")) {
        snprintf(s->description, sizeof(s->description), "%s", v);
        return 0;
    }
    if (!x->cur && !strcmp(k, "max_trials")) {
        if (suite_int(v, 1, BENCH_MAX_TRIALS, &s->max_trials) < 0) {
            rk_set_err(msg, msglen, "bad value '%s' for 'max_trials' (1..%d)", v, BENCH_MAX_TRIALS);
            return -EINVAL;
        }
        return 0;
    }
    if (!x->cur && !strcmp(k, "seed_config"))
        return suite_seed_config(s, v, msg, msglen);
    if (!x->cur && !strcmp(k, "reproduces")) {
        snprintf(s->reproduces, sizeof(s->reproduces), "%s", v);
        return 0;
    }
    int kr = suite_job_key(x->cur ? x->cur : &x->defaults, k, v);
    if (kr == -ENOENT) {
        rk_set_err(msg, msglen, "unknown key '%s'%s", k, x->cur ? " in a job section" : "");
        return -EINVAL;
    }
    if (kr < 0) {
        rk_set_err(msg, msglen, "bad value '%s' for '%s'", v, k);
        return -EINVAL;
    }
    return 0;
}

int bench_suite_parse(const char *path, struct bench_suite *s, char *err, size_t errlen)
{
    struct suite_ctx x = {
        .s = s,
        .defaults = {.rw = "randread", .bs = 4096, .iodepth = 1, .size = 256u << 20, .runtime = 5}};
    memset(s, 0, sizeof(*s));
    snprintf(s->path, sizeof(s->path), "%s", path);
    int r = rk_ini_parse(path, suite_line, &x, err, errlen);
    if (r < 0)
        return r;
    if (s->njobs == 0) {
        rk_set_err(err, errlen, "%s: no [job] sections", path);
        return -EINVAL;
    }
    if (s->name[0] == '\0') {
        /* Default the name to the file's base name without extension. */
        const char *b = strrchr(path, '/');
        snprintf(s->name, sizeof(s->name), "%s", b ? b + 1 : path);
        char *dot = strrchr(s->name, '.');
        if (dot && dot != s->name)
            *dot = '\0';
    }
    for (int i = 0; i < s->njobs; i++) {
        struct bench_job *j = &s->jobs[i];
        if (j->title[0] == '\0')
            memcpy(j->title, j->name, sizeof(j->name)); /* name is NUL-terminated, shorter */
        _Static_assert(sizeof(j->title) >= sizeof(j->name), "job title holds a job name");
        if (j->size < j->bs) {
            rk_set_err(err, errlen, "%s: job '%s': size smaller than bs", path, j->name);
            return -EINVAL;
        }
        int fr = fsjob_suite_check(path, j, err, errlen);
        if (fr < 0)
            return fr;
    }
    return 0;
}

int bench_suite_load(const char *name_or_path, struct bench_suite *s, char *err, size_t errlen)
{
    char buf[PATH_MAX], exe[PATH_MAX];
    if (strchr(name_or_path, '/') || access(name_or_path, R_OK) == 0)
        return bench_suite_parse(name_or_path, s, err, errlen);
    /* A bare name: the suites directory of the source tree, found from the environment, the
     * working directory or the binary's location (build dirs live inside the tree). */
    const char *dirs[4] = {getenv("RAIDKIT_SUITES_DIR"), NULL, "bench/suites", NULL};
    char srcdir[PATH_MAX];
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    if (src) {
        snprintf(srcdir, sizeof(srcdir), "%s/bench/suites", src);
        dirs[1] = srcdir;
    }
    char exedir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *sl = strrchr(exe, '/');
        if (sl)
            *sl = '\0';
        snprintf(exedir, sizeof(exedir), "%.*s/../bench/suites", (int)(sizeof(exedir) - 20), exe);
        dirs[3] = exedir;
    }
    for (int i = 0; i < 4; i++) {
        if (!dirs[i])
            continue;
        snprintf(buf, sizeof(buf), "%s/%s", dirs[i], name_or_path);
        if (access(buf, R_OK) == 0)
            return bench_suite_parse(buf, s, err, errlen);
        snprintf(buf, sizeof(buf), "%s/%s.ini", dirs[i], name_or_path);
        if (access(buf, R_OK) == 0)
            return bench_suite_parse(buf, s, err, errlen);
    }
    rk_set_err(err, errlen,
               "no suite '%s' (looked in $RAIDKIT_SUITES_DIR, bench/suites and next to the "
               "binary; give a path for your own file)",
               name_or_path);
    return -ENOENT;
}

uint64_t bench_suite_max_size(const struct bench_suite *s)
{
    uint64_t m = 0;
    for (int i = 0; i < s->njobs; i++)
        if (!s->jobs[i].tool[0] && s->jobs[i].size > m)
            m = s->jobs[i].size;
    return m;
}
