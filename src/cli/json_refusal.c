/* --json refusals (json_refusal.h): stdout held in memory, stderr teed, one JSON document out. */
#include "cli/json_refusal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <cjson/cJSON.h>

/* The one command of the process. */
static struct {
    bool on;
    pid_t owner; /* a forked child never prints the held output */
    const char *command;
    FILE *real_out; /* fd 1 */
    char *out;      /* held stdout */
    size_t out_len, out_cap;
    char err_line[1024]; /* the best error line seen on stderr */
    char cur[1024];      /* the stderr line being written */
    size_t cur_len;
    int err_rank; /* rank of err_line (jr_rank) */
} jr;

static ssize_t jr_out_write(void *c, const char *buf, size_t len)
{
    (void)c;
    if (jr.out_len + len + 1 > jr.out_cap) {
        size_t cap = (jr.out_cap ? jr.out_cap * 2 : 4096);
        while (cap < jr.out_len + len + 1)
            cap *= 2;
        char *n = realloc(jr.out, cap);
        if (!n) {
            errno = ENOMEM;
            return -1;
        }
        jr.out = n;
        jr.out_cap = cap;
    }
    memcpy(jr.out + jr.out_len, buf, len);
    jr.out_len += len;
    jr.out[jr.out_len] = '\0';
    return (ssize_t)len;
}

/* How good an error message line is: 3 "raidkit CMD: ..." (the one-line error), 2 a log line of
 * level error, 1 any other line, 0 none. */
static int jr_rank(const char *l)
{
    if (!strncmp(l, "raidkit ", 8) || !strncmp(l, "raidkit:", 8))
        return 3;
    if (strstr(l, "error raidkit: ") || !strncmp(l, "<3>raidkit: ", 12))
        return 2;
    return l[0] ? 1 : 0;
}

static void jr_line_done(void)
{
    jr.cur[jr.cur_len] = '\0';
    int r = jr_rank(jr.cur);
    if (r && r >= jr.err_rank) {
        memcpy(jr.err_line, jr.cur, jr.cur_len + 1);
        jr.err_rank = r;
    }
    jr.cur_len = 0;
}

static ssize_t jr_err_write(void *c, const char *buf, size_t len)
{
    (void)c;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(STDERR_FILENO, buf + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n' || buf[i] == '\r') {
            if (jr.cur_len)
                jr_line_done();
        } else if (jr.cur_len + 1 < sizeof(jr.cur)) {
            jr.cur[jr.cur_len++] = buf[i];
        }
    }
    return (ssize_t)len;
}

static bool jr_wants_json(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            return false;
        if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
            return true;
    }
    return false;
}

int cli_json_begin(const char *command, int argc, char **argv)
{
    if (!jr_wants_json(argc, argv))
        return 0;
    cookie_io_functions_t out_fns = {.write = jr_out_write};
    cookie_io_functions_t err_fns = {.write = jr_err_write};
    FILE *o = fopencookie(NULL, "w", out_fns);
    FILE *e = o ? fopencookie(NULL, "w", err_fns) : NULL;
    if (!e) {
        if (o)
            fclose(o);
        return -ENOMEM;
    }
    setvbuf(e, NULL, _IONBF, 0);
    fflush(stdout);
    fflush(stderr);
    jr.on = true;
    jr.owner = getpid();
    jr.command = command;
    jr.real_out = stdout;
    stdout = o;
    stderr = e;
    return 0;
}

/* The message of the error line: without a timestamp/level and the "raidkit CMD: " prefix. */
static const char *jr_message(int rc)
{
    static char fallback[64];
    const char *m = jr.err_line;
    const char *p = strstr(m, "raidkit: ");
    if (jr.err_rank == 2 && p)
        return p + 9;
    size_t cl = strlen(jr.command);
    if (!strncmp(m, "raidkit ", 8) && !strncmp(m + 8, jr.command, cl) && m[8 + cl] == ':')
        m += 8 + cl + 1 + (m[9 + cl] == ' ');
    else if (!strncmp(m, "raidkit: ", 9))
        m += 9;
    if (m[0])
        return m;
    snprintf(fallback, sizeof(fallback), "failed (exit status %d)", rc);
    return fallback;
}

int cli_json_end(int rc)
{
    if (!jr.on || getpid() != jr.owner)
        return rc;
    fflush(stdout);
    fflush(stderr);
    if (jr.cur_len)
        jr_line_done();
    FILE *held = stdout;
    stdout = jr.real_out;
    jr.on = false;
    cJSON *d = NULL;
    if (rc != 0 && jr.out_len) {
        const char *end = NULL;
        d = cJSON_ParseWithOpts(jr.out, &end, 1);
    }
    const cJSON *ok = d && cJSON_IsObject(d) ? cJSON_GetObjectItem(d, "ok") : NULL;
    const cJSON *es = ok ? cJSON_GetObjectItem(d, "error") : NULL;
    if (rc == 0 || (d && !(cJSON_IsFalse(ok) && cJSON_IsString(es)))) {
        /* success, or the command's own failure document (info's description): unchanged */
        if (jr.out_len)
            fwrite(jr.out, 1, jr.out_len, stdout);
    } else {
        /* a local refusal, or the server's {"ok": false, "error": "...", ...}: the one shape
         * (any other member of a server reply is kept) */
        cJSON *doc = d ? d : cJSON_CreateObject();
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "code", rc);
        cJSON_AddStringToObject(e, "message",
                                d && es->valuestring[0] ? es->valuestring : jr_message(rc));
        cJSON_AddStringToObject(e, "command", jr.command);
        if (d) {
            cJSON_ReplaceItemInObject(doc, "error", e);
        } else {
            cJSON_AddBoolToObject(doc, "ok", false);
            cJSON_AddItemToObject(doc, "error", e);
        }
        d = NULL;
        char *t = cJSON_Print(doc);
        if (t)
            puts(t);
        free(t);
        cJSON_Delete(doc);
    }
    cJSON_Delete(d);
    fflush(stdout);
    fclose(held);
    free(jr.out);
    jr.out = NULL;
    jr.out_len = jr.out_cap = 0;
    return rc;
}
