/* The pgbench job: a private PostgreSQL cluster in the mounted filesystem, started and stopped by
 * the harness around `pgbench -i` and the measured `pgbench` run. The server listens only on a
 * unix socket in the cluster's directory (no TCP); as root it runs as the postgres user, since
 * PostgreSQL refuses to run as root. */
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/fsparse.h"
#include "bench/job_fs.h"
#include "bench/run.h"
#include "core/util.h"

#define PG_MAX_ARGS 40
#define PG_USER     "postgres"

int fsjob_pg_bindir(char *buf, size_t len)
{
    DIR *dir = opendir("/usr/lib/postgresql");
    long best = -1;
    if (!dir)
        return -ENOENT;
    for (struct dirent *e; (e = readdir(dir));) {
        char p[512];
        long v = strtol(e->d_name, NULL, 10);
        snprintf(p, sizeof(p), "/usr/lib/postgresql/%.100s/bin/pgbench", e->d_name);
        if (v > best && access(p, X_OK) == 0) {
            snprintf(p, sizeof(p), "/usr/lib/postgresql/%.100s/bin/initdb", e->d_name);
            if (access(p, X_OK) == 0)
                best = v;
        }
    }
    closedir(dir);
    if (best < 0)
        return -ENOENT;
    snprintf(buf, len, "/usr/lib/postgresql/%ld/bin", best);
    return 0;
}

/* argv of "[runuser -u postgres --] BIN/prog" into a; returns the next index. */
static int pg_argv(char **a, char *prog, size_t plen, const char *bindir, const char *name)
{
    int k = 0;
    if (geteuid() == 0) {
        a[k++] = "runuser";
        a[k++] = "-u";
        a[k++] = PG_USER;
        a[k++] = "--";
    }
    snprintf(prog, plen, "%s/%s", bindir, name);
    a[k++] = prog;
    return k;
}

/* Run argv into WORK/pg.out; on failure a message naming what with its last line. */
static int pg_run(struct run_ctx *x, char **argv, const char *what, char **text, char *err,
                  size_t errlen)
{
    char out[600];
    snprintf(out, sizeof(out), "%.580s/pg.out", x->work);
    int r = fsjob_exec(argv, NULL, out);
    char *t = fsjob_slurp(out);
    unlink(out);
    if (r == 0) {
        if (text)
            *text = t;
        else
            free(t);
        return 0;
    }
    if (r != -EINTR) {
        char *last = t ? t : "";
        run_chomp(last);
        char *nl = strrchr(last, '\n');
        rk_set_err(err, errlen, "%s failed (status %d): %s", what, r, nl ? nl + 1 : last);
    }
    free(t);
    return r == -EINTR ? -EINTR : -EIO;
}

/* Append the words of text to a from k (store holds them); returns the new count. */
static int pg_words(char *store, size_t len, const char *text, char **a, int k)
{
    snprintf(store, len, "%s", text);
    for (char *save = NULL, *w = strtok_r(store, " \t", &save); w && k < PG_MAX_ARGS - 1;
         w = strtok_r(NULL, " \t", &save))
        a[k++] = w;
    a[k] = NULL;
    return k;
}

int fsjob_pgbench(struct run_ctx *x, const struct bench_job *j, struct fsdev *d, double *tps,
                  char *err, size_t errlen)
{
    char bindir[256], top[700], data[720], prog[300], opts[800], logf[720];
    char *a[PG_MAX_ARGS], words[256], *text = NULL;
    if (fsjob_pg_bindir(bindir, sizeof(bindir)) < 0) {
        rk_set_err(err, errlen, "PostgreSQL is not installed (Debian package postgresql)");
        return -ENOENT;
    }
    snprintf(top, sizeof(top), "%s/pg", d->mnt);
    snprintf(data, sizeof(data), "%s/data", top);
    snprintf(logf, sizeof(logf), "%s/log", top);
    mkdir(top, 0755);
    struct passwd *pw = geteuid() == 0 ? getpwnam(PG_USER) : NULL;
    if (geteuid() == 0 && (!pw || chown(top, pw->pw_uid, pw->pw_gid) < 0)) {
        rk_set_err(err, errlen, "no user '%s' to run PostgreSQL as (Debian package postgresql)",
                   PG_USER);
        return -ENOENT;
    }
    /* The port only names the socket file .s.PGSQL.PORT in the cluster directory. */
    char port[16];
    snprintf(port, sizeof(port), "%d", 20000 + (int)(getpid() % 20000));
    int k = pg_argv(a, prog, sizeof(prog), bindir, "initdb");
    char *init[] = {"-D", data, "-A", "trust", "-U", PG_USER, "--no-instructions", NULL};
    memcpy(a + k, init, sizeof(init));
    int r = pg_run(x, a, "initdb", NULL, err, errlen);
    if (r < 0)
        return r;
    snprintf(opts, sizeof(opts), "-k %s -c listen_addresses= -p %s", top, port);
    k = pg_argv(a, prog, sizeof(prog), bindir, "pg_ctl");
    char *start[] = {"-D", data, "-o", opts, "-w", "-l", logf, "start", NULL};
    memcpy(a + k, start, sizeof(start));
    r = pg_run(x, a, "pg_ctl start", NULL, err, errlen);
    if (r == 0) {
        k = pg_argv(a, prog, sizeof(prog), bindir, "pgbench");
        char *conn[] = {"-h", top, "-p", port, "-U", PG_USER, "-i", "-q"};
        memcpy(a + k, conn, sizeof(conn));
        k = pg_words(words, sizeof(words), j->init_args, a, k + 8);
        a[k++] = PG_USER;
        a[k] = NULL;
        r = pg_run(x, a, "pgbench -i", NULL, err, errlen);
    }
    if (r == 0) {
        k = pg_argv(a, prog, sizeof(prog), bindir, "pgbench");
        char *conn[] = {"-h", top, "-p", port, "-U", PG_USER};
        memcpy(a + k, conn, sizeof(conn));
        k = pg_words(words, sizeof(words), j->args, a, k + 6);
        a[k++] = PG_USER;
        a[k] = NULL;
        r = pg_run(x, a, "pgbench", &text, err, errlen);
    }
    /* Always stop the cluster (even after a failure or Ctrl-C): the filesystem is unmounted
     * next. */
    char serr[300];
    k = pg_argv(a, prog, sizeof(prog), bindir, "pg_ctl");
    char *stop[] = {"-D", data, "-m", "fast", "-w", "stop", NULL};
    memcpy(a + k, stop, sizeof(stop));
    volatile sig_atomic_t was = run_interrupted;
    run_interrupted = 0;
    int rs = pg_run(x, a, "pg_ctl stop", NULL, serr, sizeof(serr));
    run_interrupted = was;
    if (r == 0 && rs < 0) {
        rk_set_err(err, errlen, "%s", serr);
        r = rs;
    }
    if (r == 0 && fsparse_pgbench(text, tps) < 0) {
        rk_set_err(err, errlen, "pgbench: no \"tps = \" line in its output");
        r = -EIO;
    }
    free(text);
    return r;
}
