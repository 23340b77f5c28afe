/* The INI reader (core/ini.h): libinih parses; the line reader given to it strips leading blanks
 * and comments, refuses lines that do not fit libinih's buffer, counts file lines and reports
 * section headers. Debian's libinih is built without INI_CALL_HANDLER_ON_NEW_SECTION and
 * INI_HANDLER_LINENO, so after each header line the reader hands libinih one extra line holding
 * only INI_MARK, which reaches the handler as "a header of this section"; the extra lines are why
 * libinih's line numbers go through a map to file lines. */
#include "core/ini.h"

#include <errno.h>
#include <ini.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/util.h"

/* Key of the extra line after a header: a control character no file line can start a key with
 * (the reader refuses it). */
#define INI_MARK "\x01"

/* One line handed to libinih: the file line it came from and its text (for messages). */
struct ini_line {
    int lineno;
    char *text;
};

struct ini_ctx {
    FILE *f;
    rk_ini_fn *fn;
    void *arg;
    char *buf; /* getline buffer */
    size_t cap;
    int lineno;           /* file line of the last line read */
    bool mark_next;       /* the last line was a header: hand libinih the mark next */
    struct ini_line *map; /* libinih's line n (from 1) is map[n - 1] */
    int nmap, capmap;
    int err;      /* first error (negative errno), 0 = none */
    int err_line; /* its file line */
    char msg[320];
};

static void ini_fail(struct ini_ctx *c, int err, const char *msg)
{
    if (c->err)
        return;
    c->err = err;
    c->err_line = c->lineno;
    snprintf(c->msg, sizeof(c->msg), "%s", msg);
}

/* Remember which file line libinih's next line is. Returns false (and fails) on ENOMEM. */
static bool ini_map(struct ini_ctx *c, const char *text)
{
    if (c->nmap == c->capmap) {
        int cap = c->capmap ? 2 * c->capmap : 64;
        struct ini_line *m = realloc(c->map, (size_t)cap * sizeof(*m));
        if (!m) {
            ini_fail(c, -ENOMEM, "out of memory");
            return false;
        }
        c->map = m;
        c->capmap = cap;
    }
    char *t = strdup(text);
    if (!t) {
        ini_fail(c, -ENOMEM, "out of memory");
        return false;
    }
    c->map[c->nmap++] = (struct ini_line){.lineno = c->lineno, .text = t};
    return true;
}

/* Cut a comment off s: from a '#' or ';' at the start or after a blank. */
static void ini_cut_comment(char *s)
{
    for (char *p = s; *p; p++) {
        if ((*p == '#' || *p == ';') && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
            *p = '\0';
            return;
        }
    }
}

/* libinih's line reader: the next line into str (num bytes), or NULL at the end or an error. */
static char *ini_read(char *str, int num, void *stream)
{
    struct ini_ctx *c = stream;
    if (c->err)
        return NULL;
    if (c->mark_next) {
        c->mark_next = false;
        snprintf(str, (size_t)num, "%s=", INI_MARK);
        return ini_map(c, c->map[c->nmap - 1].text) ? str : NULL;
    }
    ssize_t n = getline(&c->buf, &c->cap, c->f);
    if (n < 0) {
        if (ferror(c->f))
            ini_fail(c, -EIO, "read error");
        return NULL;
    }
    c->lineno++;
    char *s = c->buf;
    if (c->lineno == 1 && !strncmp(s, "\xEF\xBB\xBF", 3))
        s += 3; /* UTF-8 byte order mark */
    s += strspn(s, " \t\r\f\v");
    s[strcspn(s, "\r\n")] = '\0';
    ini_cut_comment(s);
    size_t len = strlen(s);
    if (len >= (size_t)num) {
        char m[64];
        snprintf(m, sizeof(m), "line too long (at most %d characters)", num - 1);
        ini_fail(c, -EINVAL, m);
        return NULL;
    }
    if (s[0] == INI_MARK[0]) {
        ini_fail(c, -EINVAL, "control character at the start of a line");
        return NULL;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        s[--len] = '\0';
    if (s[0] == '[' && s[len - 1] != ']') {
        char m[256];
        snprintf(m, sizeof(m), "bad section header '%.200s'", s);
        ini_fail(c, -EINVAL, m);
        return NULL;
    }
    if (!ini_map(c, s))
        return NULL;
    c->mark_next = s[0] == '[';
    memcpy(str, s, len + 1);
    return str;
}

/* libinih's handler: trims the section name and passes the line on to the caller's fn. */
static int ini_line_handler(void *user, const char *section, const char *name, const char *value)
{
    struct ini_ctx *c = user;
    if (c->err)
        return 1;
    char sec[64];
    const char *p = section + strspn(section, " \t");
    size_t n = strlen(p);
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    snprintf(sec, sizeof(sec), "%.*s", (int)n, p);
    bool header = !strcmp(name, INI_MARK);
    char msg[sizeof(c->msg)] = "";
    int r = c->fn(c->arg, sec, header ? NULL : name, header ? NULL : value, msg, sizeof(msg));
    if (r < 0)
        ini_fail(c, r, msg[0] ? msg : strerror(-r));
    /* Always "go on": the reader stops at the next line once an error is recorded. */
    return 1;
}

int rk_ini_parse(const char *path, rk_ini_fn *fn, void *arg, char *err, size_t errlen)
{
    struct ini_ctx c = {.fn = fn, .arg = arg};
    c.f = fopen(path, "r");
    if (!c.f) {
        int e = errno;
        rk_set_err(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    int rc = ini_parse_stream(ini_read, &c, ini_line_handler, &c);
    if (rc == -2)
        ini_fail(&c, -ENOMEM, "out of memory");
    /* rc > 0: libinih's first error, a line it could not parse (the handler never fails). */
    if (rc > 0 && rc <= c.nmap) {
        const struct ini_line *l = &c.map[rc - 1];
        if (!c.err || l->lineno <= c.err_line) {
            c.err = -EINVAL;
            c.err_line = l->lineno;
            snprintf(c.msg, sizeof(c.msg), "expected 'key = value' or '[section]', got '%.200s'",
                     l->text);
        }
    }
    if (c.err)
        rk_set_err(err, errlen, "%s:%d: %s", path, c.err_line, c.msg);
    for (int i = 0; i < c.nmap; i++)
        free(c.map[i].text);
    free(c.map);
    free(c.buf);
    fclose(c.f);
    return c.err;
}
