/* The control-socket client of the management commands (docs/CLI.md "Online management: the
 * control socket"): one JSON request line, one reply line; refusals and unreachable sockets as
 * one stderr line (and a JSON document under --json); waiting for a server's job with progress. */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/members.h"
#include "cli/manage.h"
#include "cli/report.h"
#include "core/util.h"
#include "ctl/control.h"
#include "raidkit/member_nbd.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

#define MiB (1024.0 * 1024.0)

/* Output choices of the running command (one command per process): --json, and how a job
 * reports progress (--progress / --no-progress). */
bool mgmt_json;
enum cli_progress_mode mgmt_progress;

void mgmt_set_json(bool on)
{
    mgmt_json = on;
}

bool mgmt_json_on(void)
{
    return mgmt_json;
}

/* One line "raidkit CMD: MESSAGE" on stderr for a request that got no usable reply, and with
 * --json the same as {"ok": false, "error": MESSAGE} on stdout, as a server refusal is;
 * cli_json_end (json_refusal.h) prints it in the one refusal shape of docs/CLI.md. */
static void __attribute__((format(printf, 2, 3)))
mgmt_no_reply(const char *cmd, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "raidkit %s: %s\n", cmd, msg);
    if (mgmt_json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddBoolToObject(j, "ok", false);
        cJSON_AddStringToObject(j, "error", msg);
        cli_print_json(j);
    }
}

/* Send one request line to the control socket and parse the reply. NULL with a message on
 * stderr (prefixed by cmd) when the socket or the reply is unusable. */
static cJSON *mgmt_request(const char *cmd, const char *path, const char *line)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    cJSON *reply = NULL;
    char *buf = NULL;
    int fd = -1;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        mgmt_no_reply(cmd, "control socket path too long: %s", path);
        return NULL;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        mgmt_no_reply(cmd,
                      "cannot connect to control socket %s: %s (is `raidkit serve --control %s` "
                      "running?)",
                      path, strerror(errno), path);
        goto out;
    }
    size_t len = strlen(line);
    if (send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len || send(fd, "\n", 1, MSG_NOSIGNAL) != 1) {
        mgmt_no_reply(cmd, "sending to %s: %s", path, strerror(errno));
        goto out;
    }
    size_t cap = 1 << 16, used = 0;
    buf = malloc(cap + 1);
    while (buf && used < cap) {
        ssize_t n = recv(fd, buf + used, cap - used, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
        if (memchr(buf + used - (size_t)n, '\n', (size_t)n))
            break;
    }
    if (!buf || !used) {
        mgmt_no_reply(cmd, "no reply from %s", path);
        goto out;
    }
    buf[used] = '\0';
    reply = cJSON_Parse(buf);
    if (!reply || !cJSON_IsObject(reply)) {
        cJSON_Delete(reply);
        reply = NULL;
        mgmt_no_reply(cmd, "bad reply from %s", path);
    }
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return reply;
}

/* Print the reply's error and return CLI_EXIT_FAIL, or CLI_EXIT_OK when it says ok. */
int mgmt_check(const char *cmd, const cJSON *reply)
{
    if (cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok")))
        return CLI_EXIT_OK;
    const cJSON *e = cJSON_GetObjectItem(reply, "error");
    fprintf(stderr, "raidkit %s: %s\n", cmd, cJSON_IsString(e) ? e->valuestring : "failed");
    if (mgmt_json) /* --json: a refusal is a document on stdout too */
        cli_print_json(cJSON_Duplicate(reply, true));
    return CLI_EXIT_FAIL;
}

/* Build {"cmd":...} plus fields and run it; returns the reply (NULL on transport errors). */
cJSON *mgmt_call(const char *cmd, const char *path, cJSON *req)
{
    char *line = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    if (!line)
        return NULL;
    cJSON *r = mgmt_request(cmd, path, line);
    free(line);
    return r;
}

/* Fetch the status document (the "status" member of the reply) or NULL. */
cJSON *mgmt_status(const char *cmd, const char *path, cJSON **reply)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "cmd", "status");
    *reply = mgmt_call(cmd, path, req);
    if (!*reply || mgmt_check(cmd, *reply))
        return NULL;
    return cJSON_GetObjectItem(*reply, "status");
}

/* True when the served volume at path runs a resync now. */
bool mgmt_resync_running(const char *path)
{
    cJSON *reply;
    cJSON *st = mgmt_status("scrub", path, &reply);
    const cJSON *job = st ? cJSON_GetObjectItem(st, "job") : NULL;
    bool yes = job && !strcmp(mgmt_str(job, "kind"), "resync") &&
               !strcmp(mgmt_str(job, "state"), "running");
    cJSON_Delete(reply);
    return yes;
}

/* Adaptive poll (issue 13 item 4): sleep *us, then double it up to max_us, so a small job is
 * seen ending within a few milliseconds and a long one costs a poll per max_us. */
void mgmt_backoff(useconds_t *us, useconds_t max_us)
{
    usleep(*us);
    *us = *us * 2 < max_us ? *us * 2 : max_us;
}

/* Poll status until the job is no longer running; print the final job line on stderr.
 * Returns the final job state's exit status. */
int mgmt_wait_job(const char *cmd, const char *path)
{
    struct cli_progress prog;
    cli_progress_init(&prog, cmd, mgmt_progress);
    useconds_t us = 2000;
    for (;;) {
        cJSON *reply;
        cJSON *st = mgmt_status(cmd, path, &reply);
        if (!st) {
            cJSON_Delete(reply);
            return CLI_EXIT_FAIL;
        }
        const cJSON *job = cJSON_GetObjectItem(st, "job");
        char line[256];
        mgmt_job_line(job, line, sizeof(line));
        bool running = !strcmp(mgmt_str(job, "state"), "running");
        bool failed = !strcmp(mgmt_str(job, "state"), "failed");
        if (running)
            cli_progress_update(&prog, (uint64_t)(mgmt_num(job, "percent") * 100), 10000,
                                mgmt_num(job, "rate_mib_s") * MiB, mgmt_num(job, "eta_s"));
        if (!running) {
            cli_progress_end(&prog);
            fprintf(stderr, "raidkit %s: %s\n", cmd, line);
            if (mgmt_json) {
                /* A scrub that ran prints its result (last_scrub), anything else the job. */
                const cJSON *src = job;
                if (!strcmp(mgmt_str(job, "kind"), "scrub") && !failed)
                    src = cJSON_GetObjectItem(st, "last_scrub");
                cli_print_json(cJSON_Duplicate(src, true));
            } else if (!strcmp(mgmt_str(job, "kind"), "scrub")) {
                printf("scrub finished: %.0f mismatches, %.0f repaired, %.0f read errors%s\n",
                       mgmt_num(job, "mismatches"), mgmt_num(job, "repaired"),
                       mgmt_num(job, "bad_ranges"),
                       cJSON_IsTrue(cJSON_GetObjectItem(job, "nothing_compared"))
                           ? MGMT_SCRUB_UNCOMPARED
                           : "");
                if (!failed)
                    mgmt_print_mismatch_list(st);
            }
            cJSON_Delete(reply);
            return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
        }
        cJSON_Delete(reply);
        mgmt_backoff(&us, 200000);
    }
}
