/* Control socket server: status (volume state, job progress, last scrub, member I/O counters),
 * fail, replace and scrub for a served volume, one JSON line in and one JSON line out. */
#include "meta/control.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/util.h"
#include "raidkit/raid.h"

struct rk_control {
    int fd;      /* listening socket */
    int stop[2]; /* pipe: a byte in stop[1] ends the thread */
    char path[108];
    struct rk_volume *v;
    pthread_t thread;
};

static const char *ctl_job_kind(int k)
{
    return k == RK_JOB_REBUILD ? "rebuild" : k == RK_JOB_SCRUB ? "scrub" : "none";
}

static const char *ctl_job_state(int s)
{
    switch (s) {
    case RK_JOB_RUNNING:
        return "running";
    case RK_JOB_DONE:
        return "done";
    case RK_JOB_FAILED:
        return "failed";
    default:
        return "idle";
    }
}

char *rk_control_status_json(struct rk_volume *v)
{
    char *base = rk_volume_status_json(v);
    if (!base)
        return NULL;
    cJSON *root = cJSON_Parse(base);
    free(base);
    if (!root)
        return NULL;
    struct rk_dev *raid = rk_volume_raid(v);
    struct rk_raid_progress p;
    rk_raid_progress(raid, &p);
    double pct = p.end ? 100.0 * (double)p.pos / (double)p.end : 100.0;

    cJSON *slots = cJSON_GetObjectItem(root, "slots");
    cJSON *it;
    cJSON_ArrayForEach(it, slots)
    {
        cJSON *sn = cJSON_GetObjectItem(it, "slot");
        if (!cJSON_IsNumber(sn))
            continue;
        uint32_t s = (uint32_t)sn->valuedouble;
        if (rk_raid_slot_state(raid, s) == RK_SLOT_REBUILDING && p.kind == RK_JOB_REBUILD &&
            p.slot == s)
            cJSON_AddNumberToObject(it, "rebuild_percent", pct);
        struct rk_dev *m = rk_raid_member(raid, s);
        if (!m)
            continue;
        cJSON *st = cJSON_AddObjectToObject(it, "io");
        if (!st)
            continue;
        cJSON_AddNumberToObject(st, "reads", (double)atomic_load(&m->stats.reads));
        cJSON_AddNumberToObject(st, "writes", (double)atomic_load(&m->stats.writes));
        cJSON_AddNumberToObject(st, "read_bytes", (double)atomic_load(&m->stats.read_bytes));
        cJSON_AddNumberToObject(st, "write_bytes", (double)atomic_load(&m->stats.write_bytes));
        cJSON_AddNumberToObject(st, "errors", (double)atomic_load(&m->stats.errors));
    }

    cJSON *job = cJSON_AddObjectToObject(root, "job");
    if (job) {
        cJSON_AddStringToObject(job, "kind", ctl_job_kind(p.kind));
        cJSON_AddStringToObject(job, "state", ctl_job_state(p.state));
        if (p.kind != RK_JOB_NONE) {
            if (p.kind == RK_JOB_REBUILD)
                cJSON_AddNumberToObject(job, "slot", p.slot);
            else
                cJSON_AddBoolToObject(job, "repair", p.repair);
            cJSON_AddNumberToObject(job, "percent", pct);
            cJSON_AddNumberToObject(job, "start", (double)p.start);
            cJSON_AddNumberToObject(job, "pos", (double)p.pos);
            cJSON_AddNumberToObject(job, "end", (double)p.end);
            cJSON_AddNumberToObject(job, "rate_mib_s", p.rate / (1024.0 * 1024.0));
            cJSON_AddNumberToObject(job, "rate_limit_mib_s",
                                    (double)p.rate_limit / (1024.0 * 1024.0));
            cJSON_AddNumberToObject(job, "eta_s", p.eta);
            cJSON_AddNumberToObject(job, "mismatches", (double)p.mismatches);
            cJSON_AddNumberToObject(job, "repaired", (double)p.repaired);
            cJSON_AddNumberToObject(job, "bad_ranges", (double)p.bad_ranges);
            if (p.error)
                cJSON_AddStringToObject(job, "error", strerror(-p.error));
        }
    }
    if (p.scrubbed) {
        cJSON *ls = cJSON_AddObjectToObject(root, "last_scrub");
        if (ls) {
            cJSON_AddNumberToObject(ls, "mismatches", (double)p.last_mismatches);
            cJSON_AddNumberToObject(ls, "repaired", (double)p.last_repaired);
            cJSON_AddNumberToObject(ls, "read_errors", (double)p.last_errors);
            cJSON_AddNumberToObject(ls, "finished_at", (double)p.last_finished);
        }
    } else {
        cJSON_AddNullToObject(root, "last_scrub");
    }
    struct rk_raid_bad_range bad[64];
    int nb = rk_raid_bad_ranges(raid, bad, 64);
    cJSON *ba = cJSON_AddArrayToObject(root, "bad_ranges");
    for (int i = 0; ba && i < nb && i < 64; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddNumberToObject(o, "slot", bad[i].slot);
        cJSON_AddNumberToObject(o, "offset", (double)bad[i].member_off);
        cJSON_AddNumberToObject(o, "len", (double)bad[i].len);
        cJSON_AddItemToArray(ba, o);
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

/* {"ok":false,"error":msg} */
static char *ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *ctl_error(const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddBoolToObject(o, "ok", false);
    cJSON_AddStringToObject(o, "error", msg);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return t;
}

static char *ctl_ok(const char *key, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddBoolToObject(o, "ok", true);
    if (key)
        cJSON_AddStringToObject(o, key, msg);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return t;
}

/* A non-negative integer field; -1 when absent or bad. */
static int64_t ctl_uint(const cJSON *req, const char *key, int64_t max)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(req, key);
    if (!cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble > (double)max ||
        n->valuedouble != (double)(int64_t)n->valuedouble)
        return -1;
    return (int64_t)n->valuedouble;
}

static char *ctl_cmd(struct rk_volume *v, const cJSON *req, const char *cmd)
{
    struct rk_dev *raid = rk_volume_raid(v);
    uint32_t members = rk_raid_geometry(raid)->members;
    if (!strcmp(cmd, "status")) {
        char *st = rk_control_status_json(v);
        if (!st)
            return NULL;
        size_t n = strlen(st) + 32;
        char *t = malloc(n);
        if (t)
            snprintf(t, n, "{\"ok\":true,\"status\":%s}", st);
        free(st);
        return t;
    }
    if (!strcmp(cmd, "fail") || !strcmp(cmd, "replace")) {
        int64_t slot = ctl_uint(req, "slot", RK_MAX_MEMBERS * 4);
        if (slot < 0)
            return ctl_error("%s needs \"slot\": a slot number", cmd);
        if (slot >= members)
            return ctl_error("slot %" PRId64 " out of range: the array has slots 0..%" PRIu32, slot,
                             members - 1);
        if (!strcmp(cmd, "fail")) {
            int st = rk_raid_slot_state(raid, (uint32_t)slot);
            if (st == RK_SLOT_FAILED || st == RK_SLOT_MISSING)
                return ctl_error("slot %" PRId64 " is already %s", slot,
                                 st == RK_SLOT_FAILED ? "failed" : "missing");
            int r = rk_raid_fail_slot(raid, (uint32_t)slot);
            if (r == -EBUSY)
                return ctl_error("refused: failing slot %" PRId64
                                 " would lose data (no other copy of some of it is active)",
                                 slot);
            if (r)
                return ctl_error("fail slot %" PRId64 ": %s", slot, strerror(-r));
            return ctl_ok("message", "slot marked failed");
        }
        const cJSON *with = cJSON_GetObjectItemCaseSensitive(req, "with");
        if (!cJSON_IsString(with) || !with->valuestring[0])
            return ctl_error("replace needs \"with\": the new member's path");
        if (with->valuestring[0] != '/')
            return ctl_error("replace: \"with\" must be an absolute path, got '%s'",
                             with->valuestring);
        int64_t rate = 0;
        if (cJSON_GetObjectItemCaseSensitive(req, "rate")) {
            rate = ctl_uint(req, "rate", INT64_MAX / 2);
            if (rate < 0)
                return ctl_error("replace: bad \"rate\" (bytes per second, 0 = unlimited)");
        }
        char err[600] = "";
        int r = rk_volume_replace(v, (uint32_t)slot, with->valuestring, (uint64_t)rate, err,
                                  sizeof(err));
        if (r)
            return ctl_error("%s", err[0] ? err : strerror(-r));
        return ctl_ok("message", "rebuild started");
    }
    if (!strcmp(cmd, "scrub")) {
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(req, "repair");
        if (rep && !cJSON_IsBool(rep))
            return ctl_error("scrub: \"repair\" must be true or false");
        int64_t rate = 0;
        if (cJSON_GetObjectItemCaseSensitive(req, "rate")) {
            rate = ctl_uint(req, "rate", INT64_MAX / 2);
            if (rate < 0)
                return ctl_error("scrub: bad \"rate\" (bytes per second, 0 = unlimited)");
        }
        struct rk_dev *top = rk_volume_dev(v);
        bool repair = cJSON_IsTrue(rep);
        if (repair && top != raid)
            return ctl_error("scrub --repair refused: the volume is read-only");
        int r = rk_raid_scrub_start(raid, repair, (uint64_t)rate);
        if (r == -EBUSY) {
            struct rk_raid_progress p;
            rk_raid_progress(raid, &p);
            return ctl_error("a %s is running; one job at a time", ctl_job_kind(p.kind));
        }
        if (r)
            return ctl_error("scrub: %s", strerror(-r));
        return ctl_ok("message", "scrub started");
    }
    return ctl_error("unknown command '%.64s' (status, fail, replace, scrub)", cmd);
}

char *rk_control_handle(struct rk_volume *v, const char *line)
{
    cJSON *req = cJSON_Parse(line);
    char *reply;
    if (!req || !cJSON_IsObject(req)) {
        reply = ctl_error("bad request: not a JSON object");
        goto out;
    }
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(req, "cmd");
    if (!cJSON_IsString(cmd)) {
        reply = ctl_error("bad request: no \"cmd\" string");
        goto out;
    }
    reply = ctl_cmd(v, req, cmd->valuestring);
out:
    cJSON_Delete(req);
    return reply;
}

/* Write all of buf; false on error. */
static bool ctl_write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

static bool ctl_reply(int fd, char *reply)
{
    bool ok = reply && ctl_write_all(fd, reply, strlen(reply)) && ctl_write_all(fd, "\n", 1);
    free(reply);
    return ok;
}

/* Serve one connection: lines until EOF, an error, a too-long line or the 10 s timeout. */
static void ctl_client(struct rk_control *c, int fd)
{
    char *line = malloc(RK_CONTROL_LINE_MAX + 1);
    size_t used = 0;
    if (!line)
        return;
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    for (;;) {
        char *nl = memchr(line, '\n', used);
        if (nl) {
            *nl = '\0';
            size_t consumed = (size_t)(nl - line) + 1;
            if (!ctl_reply(fd, rk_control_handle(c->v, line)))
                break;
            memmove(line, line + consumed, used - consumed);
            used -= consumed;
            continue;
        }
        if (used >= RK_CONTROL_LINE_MAX) {
            ctl_reply(fd, ctl_error("request line longer than %d bytes", RK_CONTROL_LINE_MAX));
            break;
        }
        ssize_t n = recv(fd, line + used, RK_CONTROL_LINE_MAX - used, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0 && used) { /* last line without newline */
                line[used] = '\0';
                ctl_reply(fd, rk_control_handle(c->v, line));
            }
            break;
        }
        used += (size_t)n;
    }
    free(line);
}

static void *ctl_thread(void *arg)
{
    struct rk_control *c = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN},
                              {.fd = c->stop[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        ctl_client(c, fd);
        close(fd);
    }
    return NULL;
}

int rk_control_start(const char *path, struct rk_volume *v, struct rk_control **out, char *err,
                     size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    int r;
    *out = NULL;
    if (!path || !path[0] || strlen(path) >= sizeof(sa.sun_path)) {
        rk_set_err(err, errlen, "control socket path must be 1..%zu bytes",
                   sizeof(sa.sun_path) - 1);
        return -EINVAL;
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            rk_set_err(err, errlen, "control socket %s: a file that is not a socket exists there",
                       path);
            return -EEXIST;
        }
        unlink(path); /* stale socket of an earlier run */
    }
    struct rk_control *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->v = v;
    c->stop[0] = c->stop[1] = -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    memcpy(c->path, path, strlen(path) + 1);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(c->fd, 8) ||
        pipe2(c->stop, O_CLOEXEC)) {
        r = -errno;
        rk_set_err(err, errlen, "control socket %s: %s", path, strerror(-r));
        goto fail;
    }
    chmod(path, 0600);
    r = -pthread_create(&c->thread, NULL, ctl_thread, c);
    if (r) {
        rk_set_err(err, errlen, "control thread: %s", strerror(-r));
        unlink(path);
        goto fail;
    }
    *out = c;
    return 0;
fail:
    if (c->fd >= 0)
        close(c->fd);
    if (c->stop[0] >= 0) {
        close(c->stop[0]);
        close(c->stop[1]);
    }
    free(c);
    return r;
}

void rk_control_stop(struct rk_control *c)
{
    if (!c)
        return;
    ssize_t w;
    do
        w = write(c->stop[1], "x", 1);
    while (w < 0 && errno == EINTR);
    pthread_join(c->thread, NULL);
    close(c->fd);
    close(c->stop[0]);
    close(c->stop[1]);
    unlink(c->path);
    free(c);
}
