/* Progress, JSON output and lock holders for the commands (report.h). */
#include "cli/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/util.h"

#define MiB (1024.0 * 1024.0)

/* The bar on the screen (one job per process), cleared before any log line (rk_log_set_before):
 * the log line then starts at column 0 and the next update redraws the bar below it. */
static struct cli_progress *progress_shown;

static void progress_clear(void)
{
    if (progress_shown && progress_shown->drawn) {
        fputs("\r\033[K", stderr);
        progress_shown->drawn = false;
    }
}

void cli_progress_init(struct cli_progress *p, const char *what, enum cli_progress_mode mode)
{
    memset(p, 0, sizeof(*p));
    p->what = what;
    p->last_step = -1;
    if (mode == CLI_PROGRESS_ON || (mode == CLI_PROGRESS_AUTO && isatty(2)))
        p->bar = true;
    else if (mode == CLI_PROGRESS_AUTO)
        p->lines = true;
}

void cli_progress_update(struct cli_progress *p, uint64_t pos, uint64_t end, double rate,
                         double eta_s)
{
    double pct = end ? 100.0 * (double)pos / (double)end : 100.0;
    char eta[32] = "ETA unknown", at[40] = ""; /* no rate yet (or none): none shown */
    if (rate > 0)
        snprintf(at, sizeof(at), " at %.1f MiB/s", rate / MiB);
    if (end && pos >= end)
        snprintf(eta, sizeof(eta), "done"); /* a finished job has no ETA */
    else if (eta_s >= 0 && eta_s < 1)
        snprintf(eta, sizeof(eta), "ETA < 1 s");
    else if (eta_s >= 0)
        snprintf(eta, sizeof(eta), "ETA %.0f s", eta_s);
    if (p->bar) {
        char bar[21];
        int fill = (int)(pct / 5.0);
        for (int i = 0; i < 20; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[20] = '\0';
        if (!progress_shown) {
            progress_shown = p;
            rk_log_set_before(progress_clear);
        }
        char line[256];
        snprintf(line, sizeof(line), "\rraidkit %s: [%s] %5.1f%%%s, %s\033[K", p->what, bar, pct,
                 at, eta);
        rk_log_raw(line, &p->drawn);
        return;
    }
    int step = (int)(pct / 10.0);
    if (p->lines && step != p->last_step) {
        p->last_step = step;
        rk_info("%s: %.1f%%%s, %s", p->what, pct, at, eta);
    }
}

void cli_progress_end(struct cli_progress *p)
{
    if (progress_shown == p) {
        rk_log_set_before(NULL);
        progress_shown = NULL;
    }
    if (p->drawn)
        fputc('\n', stderr);
    p->drawn = false;
}

int cli_print_json(cJSON *j)
{
    char *t = j ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    if (!t)
        return CLI_EXIT_FAIL;
    puts(t);
    free(t);
    return CLI_EXIT_OK;
}

/* The command name of pid ("?" when gone). */
static void lock_comm(long pid, char *out, size_t len)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/%ld/comm", pid);
    FILE *f = fopen(p, "r");
    if (!f || !fgets(out, (int)len, f))
        snprintf(out, len, "?");
    if (f)
        fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

int cli_lock_holder(const char *path, char *out, size_t len)
{
    struct stat st;
    if (stat(path, &st))
        return -errno;
    FILE *f = fopen("/proc/locks", "r");
    if (!f)
        return -ENOENT;
    /* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (OFDLCK entries show pid -1). */
    char line[256];
    int r = -ENOENT;
    while (r && fgets(line, sizeof(line), f)) {
        char kind[16], adv[16], mode[16];
        long pid;
        unsigned maj, min;
        unsigned long long ino;
        const char *s = strchr(line, ':');
        if (!s || sscanf(s + 1, "%15s %15s %15s %ld %x:%x:%llu", kind, adv, mode, &pid, &maj, &min,
                         &ino) != 7)
            continue;
        if (ino != (unsigned long long)st.st_ino || maj != major(st.st_dev) ||
            min != minor(st.st_dev) || strcmp(mode, "WRITE"))
            continue;
        if (pid > 0) {
            char comm[64];
            lock_comm(pid, comm, sizeof(comm));
            snprintf(out, len, "pid %ld (%s)", pid, comm);
        } else {
            snprintf(out, len, "an open file description (%s lock, pid unknown)", kind);
        }
        r = 0;
    }
    fclose(f);
    return r;
}

const char *cli_busy_hint(const char *const *paths, int n, char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char who[128];
        if (cli_lock_holder(paths[i], who, sizeof(who)) == 0) {
            snprintf(out, len, "; %s is in use by %s", paths[i], who);
            break;
        }
    }
    return out;
}
