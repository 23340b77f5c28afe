/* One fio trial: the command line from a suite job, fio run as a child (stopped on Ctrl-C), and
 * the read and write rates taken from its JSON output. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench/run.h"
#include "core/util.h"

int run_fio_version(char *buf, size_t len)
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

/* fio's arguments for job j against t, writing JSON to outfile: a[] holds the texts, argv points
 * into them (NULL-terminated). */
struct fio_args {
    char a[40][700];
    char *argv[44];
};

static void fio_args(struct fio_args *fa, const struct bench_job *j, const struct run_target *t,
                     const char *outfile)
{
    int n = 0;
    const size_t al = sizeof(fa->a[0]);
    snprintf(fa->a[n++], al, "--name=%s", j->name);
    if (t->uri[0]) {
        snprintf(fa->a[n++], al, "--ioengine=nbd");
        snprintf(fa->a[n++], al, "--uri=%s", t->uri);
    } else {
        snprintf(fa->a[n++], al, "--ioengine=libaio");
        snprintf(fa->a[n++], al, "--direct=1");
        if (t->directory[0]) /* a filesystem job: fio's own file names (nrfiles) */
            snprintf(fa->a[n++], al, "--directory=%s", t->directory);
        else
            snprintf(fa->a[n++], al, "--filename=%s", t->filename);
    }
    snprintf(fa->a[n++], al, "--rw=%s", j->rw);
    snprintf(fa->a[n++], al, "--bs=%u", j->bs);
    snprintf(fa->a[n++], al, "--iodepth=%d", j->iodepth);
    snprintf(fa->a[n++], al, "--size=%" PRIu64, j->size);
    if (j->loops > 0) {
        snprintf(fa->a[n++], al, "--loops=%d", j->loops);
    } else {
        snprintf(fa->a[n++], al, "--ramp_time=%d", j->ramp);
        snprintf(fa->a[n++], al, "--runtime=%d", j->runtime);
        snprintf(fa->a[n++], al, "--time_based");
    }
    if (j->rwmixread > 0)
        snprintf(fa->a[n++], al, "--rwmixread=%d", j->rwmixread);
    if (j->fio_extra[0]) { /* a suite's extra options (fio equivalents of other tools) */
        char words[sizeof(j->fio_extra)];
        snprintf(words, sizeof(words), "%s", j->fio_extra);
        for (char *save = NULL, *w = strtok_r(words, " \t", &save); w && n < 36;
             w = strtok_r(NULL, " \t", &save))
            snprintf(fa->a[n++], al, "%s", w);
    }
    snprintf(fa->a[n++], al, "--output-format=json");
    snprintf(fa->a[n++], al, "--output=%s", outfile);
    fa->argv[0] = "fio";
    for (int i = 0; i < n; i++)
        fa->argv[i + 1] = fa->a[i];
    fa->argv[n + 1] = NULL;
}

void bench_fio_cmdline(const struct bench_job *j, bool nbd, char *buf, size_t len)
{
    struct fio_args fa;
    struct run_target t;
    memset(&t, 0, sizeof(t));
    if (nbd)
        snprintf(t.uri, sizeof(t.uri), "nbd+unix:///?socket=WORK/nbd.sock");
    else
        snprintf(t.filename, sizeof(t.filename), "FILE");
    fio_args(&fa, j, &t, "fio.json");
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; fa.argv[i] && o + 1 < len; i++) {
        int k = snprintf(buf + o, len - o, "%s%s", i ? " " : "", fa.argv[i]);
        if (k < 0)
            break;
        o += (size_t)k;
    }
}

/* fio's clat percentile P ("50.000000") of direction d in microseconds; 0 when absent. */
static double fio_pct(const cJSON *d, const char *p)
{
    const cJSON *pc = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(d, "clat_ns"), "percentile");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pc, p);
    return cJSON_IsNumber(v) ? v->valuedouble / 1000.0 : 0;
}

/* Run fio with argv (stderr to errfile) as run_child. Returns 0, -EINTR or -errno/-EIO. */
static int fio_child(char *const argv[], const char *errfile, char *err, size_t errlen)
{
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
    int st;
    int r = run_child_wait(pid, true, &st);
    if (r < 0)
        return r;
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
    return 0;
}

/* Read fio's JSON output file: MB/s of reads and writes of its first job, and the clat p50/p99
 * (microseconds) of the direction with more bytes into lat[2] (0 when fio gave none). */
static int fio_result(const char *outfile, double *rd, double *wr, double lat[2], char *err,
                      size_t errlen)
{
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
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(
            job0, rb->valuedouble >= wb->valuedouble ? "read" : "write");
        lat[0] = fio_pct(d, "50.000000");
        lat[1] = fio_pct(d, "99.000000");
    }
    cJSON_Delete(root);
    return r;
}

int run_fio(struct run_ctx *x, const struct bench_job *j, const struct run_target *t, double *rd,
            double *wr, char *err, size_t errlen)
{
    struct fio_args fa;
    char outfile[600], errfile[600];
    snprintf(outfile, sizeof(outfile), "%s/fio.json", x->work);
    snprintf(errfile, sizeof(errfile), "%s/fio.err", x->work);
    fio_args(&fa, j, t, outfile);
    unlink(outfile);
    int r = fio_child(fa.argv, errfile, err, errlen);
    x->lat[0] = x->lat[1] = 0;
    return r < 0 ? r : fio_result(outfile, rd, wr, x->lat, err, errlen);
}
