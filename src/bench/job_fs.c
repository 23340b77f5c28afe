/* Filesystem jobs: the trial loop over a configuration's filesystem jobs and the tools run in the
 * mounted filesystem (fs_mark, bonnie++, PostMark, dbench, sqlite3, a timed compile, fio on a
 * file; pgbench in job_fs_pg.c), each result parsed by src/bench/fsparse_*.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/fsparse.h"
#include "bench/job_fs.h"
#include "bench/run.h"
#include "core/util.h"

#define FSJOB_MAX_ARGS 40
/* The source tree of the compile job: googletest's, shipped by Debian's googletest package. */
#define FSJOB_COMPILE_SRC "/usr/src/googletest"

int fsjob_exec(char *const argv[], const char *in, const char *out)
{
    return fsjob_exec_in(argv, in, out, NULL);
}

int fsjob_exec_in(char *const argv[], const char *in, const char *out, const char *cwd)
{
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        if (cwd && chdir(cwd) < 0)
            _exit(126);
        int i = open(in ? in : "/dev/null", O_RDONLY);
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(i, 0);
        dup2(o, 1);
        dup2(o, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    int r = run_child_wait(pid, true, &st);
    if (r < 0)
        return r;
    if (run_interrupted)
        return -EINTR;
    return run_exit_code(st);
}

char *fsjob_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char tmp[4096];
    size_t k;
    while (m && (k = fread(tmp, 1, sizeof(tmp), f)) > 0)
        fwrite(tmp, 1, k, m);
    fclose(f);
    if (m)
        fclose(m);
    return buf;
}

/* Split text (copied into store) on blanks and append the words to argv from index k; returns
 * the new count (argv NULL-terminated). */
static int fsjob_words(char *store, size_t len, const char *text, char **argv, int k)
{
    snprintf(store, len, "%s", text);
    for (char *save = NULL, *w = strtok_r(store, " \t", &save); w && k < FSJOB_MAX_ARGS - 1;
         w = strtok_r(NULL, " \t", &save))
        argv[k++] = w;
    argv[k] = NULL;
    return k;
}

/* Run argv (output into WORK/fsjob.out), then parse; a failure reports the last output line. */
static char *fsjob_run_out(struct run_ctx *x, char *const argv[], const char *in, double *secs,
                           int *status, char *err, size_t errlen, const char *cwd)
{
    char out[600];
    snprintf(out, sizeof(out), "%.580s/fsjob.out", x->work);
    double t0 = run_mono();
    int r = fsjob_exec_in(argv, in, out, cwd);
    *secs = run_mono() - t0;
    *status = r;
    char *text = fsjob_slurp(out);
    unlink(out);
    if (r == 0 && text)
        return text;
    if (r != -EINTR) {
        char *last = text ? text : "";
        run_chomp(last);
        char *nl = strrchr(last, '\n');
        rk_set_err(err, errlen, "%s failed (status %d): %s", argv[0], r, nl ? nl + 1 : last);
    }
    free(text);
    return NULL;
}

/* Parse-result helper: a parser's error as a message. */
static int fsjob_parsed(int r, const char *tool, char *err, size_t errlen)
{
    if (r == -ERANGE) { /* not a failure: the tool declined to time it */
        rk_set_err(err, errlen,
                   "%s could not time it (+++++: under its minimum time; members in RAM or in "
                   "the host's page cache are too fast: a larger size or --model)",
                   tool);
        return -ERANGE;
    }
    if (r < 0)
        rk_set_err(err, errlen, "%s: no result in its output", tool);
    return r < 0 ? -EIO : 0;
}

/* The SQLite job: N single-statement transactions (args: N) INSERTing into an indexed table, as
 * PTS's SQLite test times them; sqlite3's default synchronous=FULL, journal DELETE. */
static int fsjob_sqlite(struct run_ctx *x, const struct bench_job *j, struct fsdev *d, double *secs,
                        char *err, size_t errlen)
{
    long n = j->args[0] ? strtol(j->args, NULL, 10) : 200, rows = -1;
    char sql[600], db[700];
    snprintf(sql, sizeof(sql), "%.580s/sqlite.sql", x->work);
    snprintf(db, sizeof(db), "%s/bench.db", d->mnt);
    FILE *f = fopen(sql, "w");
    if (!f || n <= 0) {
        if (f)
            fclose(f);
        rk_set_err(err, errlen, n <= 0 ? "sqlite: bad args '%s' (a row count)" : "%s: cannot write",
                   n <= 0 ? j->args : sql);
        return -EIO;
    }
    fputs("CREATE TABLE pts1 ('I' SMALLINT NOT NULL, 'DT' TIMESTAMP NOT NULL DEFAULT "
          "CURRENT_TIMESTAMP, 'F1' VARCHAR(4) NOT NULL, 'F2' VARCHAR(16) NOT NULL);\n"
          "CREATE INDEX pts1_i ON pts1 (I);\n",
          f);
    for (long i = 0; i < n; i++)
        fprintf(f, "INSERT INTO pts1 (I, F1, F2) VALUES (%ld, 'abcd', 'abcdefghijklmnop');\n",
                (i * 7919) % 32768);
    fputs("SELECT 'rows', count(*) FROM pts1;\n", f);
    fclose(f);
    char *argv[] = {"sqlite3", "-batch", db, NULL};
    int st;
    char *text = fsjob_run_out(x, argv, sql, secs, &st, err, errlen, NULL);
    unlink(sql);
    if (!text)
        return st == -EINTR ? -EINTR : -EIO;
    int r = fsparse_sqlite_rows(text, &rows);
    free(text);
    if (r < 0 || rows != n) {
        rk_set_err(err, errlen, "sqlite: %ld rows after %ld INSERTs", rows, n);
        return -EIO;
    }
    return 0;
}

/* The compile job: the googletest tree copied into the filesystem (not timed), then `make -j2`
 * of the sources named in args (words starting with '-' are compiler flags) timed. */
static int fsjob_compile(struct run_ctx *x, const struct bench_job *j, struct fsdev *d,
                         double *secs, char *err, size_t errlen)
{
    char src[700], mk[600], words[sizeof(j->args)], *w[FSJOB_MAX_ARGS];
    snprintf(src, sizeof(src), "%s/src", d->mnt);
    char *cp[] = {"cp", "-a", FSJOB_COMPILE_SRC, src, NULL};
    if (run_cmd(cp, NULL, 0, false) != 0) {
        rk_set_err(err, errlen, "cp -a %s %s failed", FSJOB_COMPILE_SRC, src);
        return -EIO;
    }
    sync();
    snprintf(mk, sizeof(mk), "%.580s/compile.mk", x->work);
    FILE *f = fopen(mk, "w");
    if (!f) {
        rk_set_err(err, errlen, "%s: %s", mk, strerror(errno));
        return -EIO;
    }
    int n = fsjob_words(words, sizeof(words), j->args, w, 0);
    fputs("FLAGS =", f);
    for (int i = 0; i < n; i++)
        if (w[i][0] == '-')
            fprintf(f, " %s", w[i]);
    fputs("\nall:", f);
    for (int i = 0; i < n; i++)
        if (w[i][0] != '-')
            fprintf(f, " %s.o", w[i]);
    fputs("\n%.cc.o: %.cc\n\tc++ $(FLAGS) -c $< -o $@\n%.c.o: %.c\n\tcc $(FLAGS) -c $< -o $@\n", f);
    fclose(f);
    char *argv[] = {"make", "-s", "-j2", "-C", src, "-f", mk, NULL};
    int st;
    char *text = fsjob_run_out(x, argv, NULL, secs, &st, err, errlen, NULL);
    unlink(mk);
    int r = text ? 0 : st == -EINTR ? -EINTR : -EIO;
    free(text);
    return r;
}

/* fs_mark, bonnie++, PostMark, dbench: the tool with args, its output parsed. */
static int fsjob_generic(struct run_ctx *x, const struct bench_job *j, struct fsdev *d,
                         double *value, char *err, size_t errlen)
{
    char *argv[FSJOB_MAX_ARGS], words[sizeof(j->args)], dir[700], cfg[600];
    int k = 0;
    const char *in = NULL;
    snprintf(dir, sizeof(dir), "%s/%s", d->mnt, j->tool);
    if (!strcmp(j->tool, "fsmark")) {
        argv[k++] = "fs_mark";
        argv[k++] = "-d"; /* relative: fs_mark takes less than 40 bytes of directory path */
        argv[k++] = "fsmark";
    } else if (!strcmp(j->tool, "bonnie")) {
        mkdir(dir, 0755);
        char *a[] = {"bonnie++", "-q", "-u", "root", "-d", dir};
        memcpy(argv, a, sizeof(a));
        k = 6;
    } else if (!strcmp(j->tool, "dbench")) {
        argv[k++] = "dbench";
        argv[k++] = "-D";
        argv[k++] = d->mnt;
    } else { /* postmark: args are "KEY VALUE; KEY VALUE" lines of its command file */
        snprintf(cfg, sizeof(cfg), "%.580s/postmark.cfg", x->work);
        FILE *f = fopen(cfg, "w");
        if (!f)
            return -EIO;
        fprintf(f, "set location %s\n", d->mnt);
        snprintf(words, sizeof(words), "%s", j->args);
        for (char *save = NULL, *l = strtok_r(words, ";", &save); l; l = strtok_r(NULL, ";", &save))
            fprintf(f, "set %s\n", l + strspn(l, " "));
        fputs("run\nquit\n", f);
        fclose(f);
        argv[k++] = "postmark";
        argv[k] = NULL;
        in = cfg;
    }
    if (strcmp(j->tool, "postmark"))
        fsjob_words(words, sizeof(words), j->args, argv, k);
    double secs;
    int st;
    char *text = fsjob_run_out(x, argv, in, &secs, &st, err, errlen, d->mnt);
    if (in)
        unlink(in);
    if (!text)
        return st == -EINTR ? -EINTR : -EIO;
    int r;
    if (!strcmp(j->tool, "fsmark"))
        r = fsparse_fsmark(text, value);
    else if (!strcmp(j->tool, "bonnie"))
        r = fsparse_bonnie(text, j->metric, value);
    else if (!strcmp(j->tool, "dbench"))
        r = fsparse_dbench(text, value);
    else
        r = fsparse_postmark(text, value);
    free(text);
    return fsjob_parsed(r, argv[0], err, errlen);
}

/* The program a tool needs, and its Debian package, for the "not installed" note. */
static const char *fsjob_prog(const char *tool, const char **pkg)
{
    static const struct {
        const char *tool, *prog, *pkg;
    } progs[] = {{"fsmark", "fs_mark", "fsmark"},
                 {"bonnie", "bonnie++", "bonnie++"},
                 {"postmark", "postmark", "postmark"},
                 {"dbench", "dbench", "dbench"},
                 {"sqlite", "sqlite3", "sqlite3"},
                 {"compile", "make", "make"},
                 {"fio", "fio", "fio"}};
    for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
        if (!strcmp(progs[i].tool, tool)) {
            *pkg = progs[i].pkg;
            return progs[i].prog;
        }
    }
    return NULL;
}

int fsjob_tool(struct run_ctx *x, const struct bench_job *j, struct fsdev *d, double *value,
               char *err, size_t errlen)
{
    if (!strcmp(j->tool, "pgbench"))
        return fsjob_pgbench(x, j, d, value, err, errlen);
    if (!strcmp(j->tool, "sqlite"))
        return fsjob_sqlite(x, j, d, value, err, errlen);
    if (!strcmp(j->tool, "compile"))
        return fsjob_compile(x, j, d, value, err, errlen);
    if (!strcmp(j->tool, "fio")) {
        struct run_target t = {0};
        double rd = 0, wr = 0;
        snprintf(t.directory, sizeof(t.directory), "%.580s/fio", d->mnt);
        if (mkdir(t.directory, 0755) < 0) {
            rk_set_err(err, errlen, "%s: %s", t.directory, strerror(errno));
            return -EIO;
        }
        int r = run_fio(x, j, &t, &rd, &wr, err, errlen);
        *value = rd + wr;
        return r;
    }
    return fsjob_generic(x, j, d, value, err, errlen);
}

/* Why filesystem job j cannot run here (its tool or tree is missing): message in err, true. */
static bool fsjob_missing(const struct bench_job *j, char *err, size_t errlen)
{
    const char *pkg = NULL, *prog = fsjob_prog(j->tool, &pkg);
    char bindir[256];
    if (prog && !run_have_prog(prog)) {
        rk_set_err(err, errlen, "%s is not installed (Debian package %s)", prog, pkg);
        return true;
    }
    if (!strcmp(j->tool, "compile") && access(FSJOB_COMPILE_SRC, R_OK) < 0) {
        rk_set_err(err, errlen, "%s is missing (Debian package googletest)", FSJOB_COMPILE_SRC);
        return true;
    }
    if (!strcmp(j->tool, "pgbench") && fsjob_pg_bindir(bindir, sizeof(bindir)) < 0) {
        rk_set_err(err, errlen,
                   "PostgreSQL's initdb/pg_ctl/pgbench are missing (Debian "
                   "package postgresql)");
        return true;
    }
    const char *fsprog = !strcmp(j->fs, "xfs")     ? "xfs_repair"
                         : !strcmp(j->fs, "btrfs") ? "btrfs"
                                                   : "e2fsck";
    if (!run_have_prog(fsprog)) {
        rk_set_err(err, errlen, "%s is not installed (Debian package %s)", fsprog,
                   !strcmp(j->fs, "xfs")     ? "xfsprogs"
                   : !strcmp(j->fs, "btrfs") ? "btrfs-progs"
                                             : "e2fsprogs");
        return true;
    }
    return false;
}

/* Mark cell skipped with reason (printed once per configuration and job). */
static void fsjob_skip(const struct bench_config *bc, const struct bench_job *j,
                       struct bench_cell *cell, const char *why)
{
    cell->skipped = true;
    snprintf(cell->note, sizeof(cell->note), "skipped: %.*s", (int)sizeof(cell->note) - 10, why);
    fprintf(stderr, "[bench] %s %s %s\n", bc->name, j->name, cell->note);
}

/* One trial of job j on d: mkfs + mount, the tool, umount + check. Returns 0 with *v, or the
 * first error (-EUCLEAN: the check failed) with a message in err. With a cache, the hits and
 * misses of the tool's run (not of mkfs, mount or the check) are added to cell. */
static int fsjob_trial(struct run_ctx *x, const struct bench_job *j, struct fsdev *d,
                       struct bench_cell *cell, double *v, char *err, size_t errlen)
{
    char cerr[300] = "";
    uint64_t h0[4], h1[4];
    int r = fsdev_mkfs_mount(d, j->fs, j->fs_size, err, errlen);
    if (r < 0)
        return r;
    bool h0_ok = d->cache_mode[0] && bench_cache_hits(d->ctl, h0) == 0;
    r = fsjob_tool(x, j, d, v, err, errlen);
    if (r == 0 && h0_ok && bench_cache_hits(d->ctl, h1) == 0)
        run_cell_add_hits(cell, h0, h1);
    int rc = fsdev_umount_check(d, cerr, sizeof(cerr));
    if (rc == -EUCLEAN || (r == 0 && rc < 0)) {
        rk_set_err(err, errlen, "%s", cerr);
        return rc;
    }
    return r;
}

/* The trials of filesystem job j (index ji) on configuration c, device d up. */
static void fsjob_cell(struct run_ctx *x, int c, int ji, struct fsdev *d)
{
    struct bench_report *rep = x->rep;
    const struct bench_config *bc = &rep->configs[c];
    const struct bench_job *j = &x->suite.jobs[ji];
    struct bench_cell *cell = &rep->cells[c][ji];
    char err[300] = "", eta[32];
    if (fsjob_missing(j, err, sizeof(err))) {
        fsjob_skip(bc, j, cell, err);
        run_eta_plan(x, j, -rep->min_trials);
        return;
    }
    while (!run_interrupted && run_cell_more(x, cell, 0, 0)) {
        double v = 0;
        int r = fsjob_trial(x, j, d, cell, &v, err, sizeof(err));
        if (r == -EINTR || run_interrupted)
            break;
        if (r == -ERANGE && cell->ntrials == 0) { /* too fast to time: said, not failed */
            fsjob_skip(bc, j, cell, err);
            break;
        }
        if (r < 0) {
            snprintf(cell->note, sizeof(cell->note), "%.*s", (int)sizeof(cell->note) - 1, err);
            fprintf(stderr, "[bench] %s %s: %s\n", bc->name, j->name, err);
            if (r == -EUCLEAN)
                rep->fs_check_failures++;
            break;
        }
        run_cell_add(cell, v, 0, 0);
        run_eta_trial(x, j, cell->ntrials <= rep->min_trials, eta, sizeof(eta));
        fprintf(stderr, "[bench] %-10s %-12s trial %d: %9.2f %s on %s  (RSD %.1f%%)  ETA %s\n",
                bc->name, j->name, cell->ntrials, v, j->unit, d->fs,
                bench_rsd(cell->trials, cell->ntrials), eta);
    }
    if (cell->ntrials < rep->min_trials)
        run_eta_plan(x, j, cell->ntrials - rep->min_trials);
}

/* Append what (prefixed by why when it failed) to configuration c's note; a failure marks the
 * configuration failed and fails the run (listed under Failed). */
static void fsjob_config_note(struct bench_report *rep, int c, bool failed, const char *why,
                              const char *what)
{
    struct bench_config *bc = &rep->configs[c];
    size_t n = strlen(bc->note);
    snprintf(bc->note + n, sizeof(bc->note) - n, "%s%s%.*s", n ? "; " : "", failed ? why : "",
             (int)(sizeof(bc->note) - n), what);
    if (failed) {
        rep->fs_check_failures++;
        bc->failed = true;
    }
}

/* A cache-MODE configuration after its last trial: the cache drained and the backing alone
 * checked (fsdev_cache_drain_check). The result is appended to the configuration's note; a
 * failure fails the run as a failed check does. */
static void fsjob_cache_drained(struct run_ctx *x, int c, struct fsdev *d)
{
    const struct bench_config *bc = &x->rep->configs[c];
    char msg[300] = "";
    if (!d->checked)
        return; /* no trial, or its check failed: that is reported already */
    int r = fsdev_cache_drain_check(d, msg, sizeof(msg));
    fprintf(stderr, "[bench] %s: %s%s\n", bc->name, r < 0 ? "FAILED: " : "", msg);
    fsjob_config_note(x->rep, c, r < 0, "filesystem check failed: ", msg);
}

void fsjob_config(struct run_ctx *x, int c)
{
    struct bench_report *rep = x->rep;
    const struct bench_config *bc = &rep->configs[c];
    const char *why = NULL;
    char err[512] = "";
    uint64_t size = 0;
    /* A suite of filesystem jobs only never started the back-end, which says this otherwise. */
    if (bench_backend_find(bc->kind)->own_models && x->have_emul && !bc->note[0])
        snprintf(rep->configs[c].note, sizeof(bc->note), "its own models, not --model's");
    if (!fsdev_supported(bc->kind))
        why = "no filesystem path for this configuration (raidkit levels, plain, "
              "btrfs-PROFILE and cache-* have one)";
    else if (geteuid() != 0)
        why = "needs root (loop devices, mount)";
    else if (!run_have_prog("losetup"))
        why = "losetup is not installed (Debian package util-linux)";
    for (int ji = 0; ji < x->suite.njobs; ji++) {
        const struct bench_job *j = &x->suite.jobs[ji];
        if (!j->tool[0])
            continue;
        if (why || bc->skipped) {
            fsjob_skip(bc, j, &rep->cells[c][ji], why ? why : bc->note);
            run_eta_plan(x, j, -rep->min_trials);
        }
        size = j->fs_size > size ? j->fs_size : size;
    }
    if (why || bc->skipped)
        return;
    struct fsdev *d = calloc(1, sizeof(*d));
    int r = d ? fsdev_up(x, bc, size, d, err, sizeof(err)) : -ENOMEM;
    if (r < 0) {
        fprintf(stderr, "[bench] %s filesystem device: %s\n", bc->name, err);
        for (int ji = 0; ji < x->suite.njobs; ji++)
            if (x->suite.jobs[ji].tool[0])
                snprintf(rep->cells[c][ji].note, sizeof(rep->cells[c][ji].note),
                         "filesystem device: %.140s", err);
    } else {
        fprintf(stderr, "[bench] %s: filesystem device %s (%llu MiB), mounted on %s\n", bc->name,
                d->loops[0], (unsigned long long)(size >> 20), d->mnt);
        for (int ji = 0; ji < x->suite.njobs && !run_interrupted; ji++)
            if (x->suite.jobs[ji].tool[0])
                fsjob_cell(x, c, ji, d);
        if (d->cache_mode[0] && !run_interrupted)
            fsjob_cache_drained(x, c, d);
    }
    if (d && fsdev_down(d, err, sizeof(err)) < 0) {
        fprintf(stderr, "[bench] %s: %s\n", bc->name, err);
        fsjob_config_note(rep, c, true, "filesystem device teardown failed: ", err);
    }
    free(d);
}
