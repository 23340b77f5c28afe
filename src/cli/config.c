/* The array configuration file (config.h). */
#include "cli/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ini.h"
#include "core/util.h"

/* Parser state: the array of the current section (NULL in [scan] or before any section). */
struct conf_ctx {
    struct rk_conf *c;
    struct rk_conf_array *cur;
    bool in_scan;
};

/* Append the blank-separated words of v to list (at most RK_CONF_MAX_GLOBS). */
static int conf_words(char **list, int *n, const char *v, char *msg, size_t msglen)
{
    char *copy = strdup(v), *save = NULL;
    if (!copy)
        return -ENOMEM;
    for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (*n >= RK_CONF_MAX_GLOBS) {
            rk_set_err(msg, msglen, "more than %d member paths", RK_CONF_MAX_GLOBS);
            free(copy);
            return -EINVAL;
        }
        if (!(list[(*n)++] = strdup(w))) {
            free(copy);
            return -ENOMEM;
        }
    }
    free(copy);
    return 0;
}

/* yes/no/true/false/1/0 into *out. */
static int conf_bool(const char *key, const char *v, int *out, char *msg, size_t msglen)
{
    if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
        *out = 1;
    else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
        *out = 0;
    else {
        rk_set_err(msg, msglen, "bad %s '%s' (yes or no)", key, v);
        return -EINVAL;
    }
    return 0;
}

/* uuid = VALUE: 32 hex digits, dashes anywhere; stored lower case in the 8-4-4-4-12 form. */
static int conf_uuid(const char *v, char **out, char *msg, size_t msglen)
{
    char hex[33];
    int n = 0;
    for (const char *p = v; *p; p++) {
        if (*p == '-')
            continue;
        if (!isxdigit((unsigned char)*p) || n == 32) {
            rk_set_err(msg, msglen, "bad uuid '%s' (32 hex digits)", v);
            return -EINVAL;
        }
        hex[n++] = (char)tolower((unsigned char)*p);
    }
    hex[n] = '\0';
    if (n != 32) {
        rk_set_err(msg, msglen, "bad uuid '%s' (32 hex digits)", v);
        return -EINVAL;
    }
    char f[37];
    snprintf(f, sizeof(f), "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
    return (*out = strdup(f)) ? 0 : -ENOMEM;
}

/* A `[section]` header. */
static int conf_section(struct conf_ctx *x, const char *section, char *msg, size_t msglen)
{
    x->cur = NULL;
    x->in_scan = !strcmp(section, "scan");
    if (x->in_scan)
        return 0;
    if (strncmp(section, "array ", 6) || !section[6]) {
        rk_set_err(msg, msglen, "unknown section [%s] ([scan] or [array NAME])", section);
        return -EINVAL;
    }
    const char *name = section + 6;
    while (*name == ' ')
        name++;
    if (rk_conf_find(x->c, name)) {
        rk_set_err(msg, msglen, "array '%s' named twice", name);
        return -EINVAL;
    }
    if (x->c->n >= RK_CONF_MAX_ARRAYS) {
        rk_set_err(msg, msglen, "more than %d arrays", RK_CONF_MAX_ARRAYS);
        return -EINVAL;
    }
    x->cur = &x->c->arr[x->c->n++];
    x->cur->degraded = x->cur->read_only = -1;
    return (x->cur->name = strdup(name)) ? 0 : -ENOMEM;
}

/* key = value of an [array] section. */
static int conf_array_key(struct rk_conf_array *a, const char *key, const char *v, char *msg,
                          size_t msglen)
{
    char **str = NULL;
    if (!strcmp(key, "members"))
        return conf_words(a->globs, &a->nglobs, v, msg, msglen);
    if (!strcmp(key, "uuid"))
        return a->uuid ? (rk_set_err(msg, msglen, "uuid given twice"), -EINVAL)
                       : conf_uuid(v, &a->uuid, msg, msglen);
    if (!strcmp(key, "degraded"))
        return conf_bool(key, v, &a->degraded, msg, msglen);
    if (!strcmp(key, "read-only"))
        return conf_bool(key, v, &a->read_only, msg, msglen);
    if (!strcmp(key, "threads")) {
        uint64_t t;
        if (rk_parse_u64(v, &t) || t < 1 || t > 1024) {
            rk_set_err(msg, msglen, "bad threads '%s' (1..1024)", v);
            return -EINVAL;
        }
        a->threads = (int)t;
        return 0;
    }
    if (!strcmp(key, "array-name"))
        str = &a->sb_name;
    else if (!strcmp(key, "listen"))
        str = &a->listen;
    else if (!strcmp(key, "control"))
        str = &a->control;
    else if (!strcmp(key, "export"))
        str = &a->export_name;
    else if (!strcmp(key, "pidfile"))
        str = &a->pidfile;
    if (!str) {
        rk_set_err(msg, msglen,
                   "unknown key '%s' (uuid, array-name, members, listen, control, "
                   "export, pidfile, degraded, read-only, threads)",
                   key);
        return -EINVAL;
    }
    free(*str);
    return (*str = strdup(v)) ? 0 : -ENOMEM;
}

static int conf_line(void *arg, const char *section, const char *key, const char *value, char *msg,
                     size_t msglen)
{
    struct conf_ctx *x = arg;
    if (!key)
        return conf_section(x, section, msg, msglen);
    if (x->in_scan) {
        if (strcmp(key, "members")) {
            rk_set_err(msg, msglen, "unknown key '%s' in [scan] (members)", key);
            return -EINVAL;
        }
        return conf_words(x->c->scan, &x->c->nscan, value, msg, msglen);
    }
    if (!x->cur) {
        rk_set_err(msg, msglen, "'%s' outside a section ([scan] or [array NAME])", key);
        return -EINVAL;
    }
    return conf_array_key(x->cur, key, value, msg, msglen);
}

int rk_conf_load(const char *path, struct rk_conf *c, char *err, size_t errlen)
{
    struct conf_ctx x = {.c = c};
    if (!path)
        path = RK_CONF_DEFAULT;
    if (!(c->path = strdup(path)))
        return -ENOMEM;
    int r = rk_ini_parse(path, conf_line, &x, err, errlen);
    for (int i = 0; !r && i < c->n; i++) {
        struct rk_conf_array *a = &c->arr[i];
        if (!a->uuid && !a->sb_name && !(a->sb_name = strdup(a->name)))
            r = -ENOMEM;
        if (!r && !a->nglobs && !c->nscan) {
            rk_set_err(err, errlen, "%s: array '%s' has no members and there is no [scan]", path,
                       a->name);
            r = -EINVAL;
        }
    }
    return r;
}

void rk_conf_free(struct rk_conf *c)
{
    for (int i = 0; i < c->n; i++) {
        struct rk_conf_array *a = &c->arr[i];
        for (int g = 0; g < a->nglobs; g++)
            free(a->globs[g]);
        free(a->name);
        free(a->uuid);
        free(a->sb_name);
        free(a->listen);
        free(a->control);
        free(a->export_name);
        free(a->pidfile);
    }
    for (int g = 0; g < c->nscan; g++)
        free(c->scan[g]);
    free(c->path);
    memset(c, 0, sizeof(*c));
}

const struct rk_conf_array *rk_conf_find(const struct rk_conf *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (c->arr[i].name && !strcmp(c->arr[i].name, name))
            return &c->arr[i];
    return NULL;
}
