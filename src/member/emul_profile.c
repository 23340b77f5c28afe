/* Device-model profiles: the built-in table by name, or a small INI file (`key = value`, field
 * names of struct rk_emul_params, `#` comments) with errors that name the line. */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"
#include "member/emul_model.h"
#include "raidkit/emul.h"

static const char *const emul_names[] = {"sata-ssd-2014", "hdd-7200", NULL};

const char *const *rk_emul_profile_names(void)
{
    return emul_names;
}

enum { F_U32, F_U64, F_BOOL };

struct emul_field {
    const char *key;
    int type;
    size_t off;
};

#define EF(k, t)                                                                                   \
    {                                                                                              \
#k, t, offsetof(struct rk_emul_params, k)                                                  \
    }
static const struct emul_field emul_fields[] = {
    EF(capacity, F_U64),      EF(read_latency_us, F_U32), EF(write_latency_us, F_U32),
    EF(read_iops, F_U32),     EF(write_iops, F_U32),      EF(read_bw, F_U64),
    EF(write_bw, F_U64),      EF(parallelism, F_U32),     EF(rpm, F_U32),
    EF(seek_track_us, F_U32), EF(seek_avg_us, F_U32),     EF(seek_full_us, F_U32),
    EF(outer_bw, F_U64),      EF(inner_bw, F_U64),        EF(zones, F_U32),
    EF(reorder, F_BOOL),      EF(queue_depth, F_U32),     EF(write_cache, F_U32),
    EF(cache_cmds, F_U32),    EF(cmd_read_us, F_U32),     EF(cmd_write_us, F_U32),
    EF(seed, F_U64),
};

static char *emul_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Set one key; returns 0 or -EINVAL with a message (without the line prefix) in err. */
static int emul_set(struct rk_emul_params *p, const char *key, const char *val, char *err,
                    size_t errlen)
{
    if (!strcmp(key, "name")) {
        if (!*val || strlen(val) >= sizeof(p->name)) {
            rk_set_err(err, errlen, "bad name '%s' (1..63 characters)", val);
            return -EINVAL;
        }
        snprintf(p->name, sizeof(p->name), "%s", val);
        return 0;
    }
    if (!strcmp(key, "kind")) {
        if (!strcasecmp(val, "ssd"))
            p->kind = RK_EMUL_SSD;
        else if (!strcasecmp(val, "hdd"))
            p->kind = RK_EMUL_HDD;
        else {
            rk_set_err(err, errlen, "bad kind '%s' (ssd or hdd)", val);
            return -EINVAL;
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof(emul_fields) / sizeof(emul_fields[0]); i++) {
        const struct emul_field *f = &emul_fields[i];
        if (strcmp(key, f->key))
            continue;
        void *dst = (char *)p + f->off;
        uint64_t v;
        if (f->type == F_BOOL) {
            if (!strcasecmp(val, "1") || !strcasecmp(val, "true") || !strcasecmp(val, "yes") ||
                !strcasecmp(val, "on"))
                *(bool *)dst = true;
            else if (!strcasecmp(val, "0") || !strcasecmp(val, "false") || !strcasecmp(val, "no") ||
                     !strcasecmp(val, "off"))
                *(bool *)dst = false;
            else {
                rk_set_err(err, errlen, "bad value '%s' for %s (true or false)", val, key);
                return -EINVAL;
            }
            return 0;
        }
        /* Plain integers, or sizes with K/M/G/T (powers of 1024) for byte fields. */
        int r = rk_parse_u64(val, &v);
        if (r && f->type == F_U64)
            r = rk_parse_size(val, &v);
        if (r || (f->type == F_U32 && v > UINT32_MAX)) {
            rk_set_err(err, errlen, "bad value '%s' for %s (a non-negative integer%s)", val, key,
                       f->type == F_U64 ? ", K/M/G/T allowed" : "");
            return -EINVAL;
        }
        if (f->type == F_U32)
            *(uint32_t *)dst = (uint32_t)v;
        else
            *(uint64_t *)dst = v;
        return 0;
    }
    rk_set_err(err, errlen, "unknown key '%s'", key);
    return -EINVAL;
}

static int emul_load_file(const char *path, struct rk_emul_params *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        rk_set_err(err, errlen, "%s: %s", path, strerror(e));
        return e == ENOENT ? -ENOENT : -EINVAL;
    }
    struct rk_emul_params p = {0};
    char line[512], msg[256];
    int lineno = 0, r = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            rk_set_err(err, errlen, "%s:%d: line too long", path, lineno);
            r = -EINVAL;
            goto out;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = emul_trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rk_set_err(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
            r = -EINVAL;
            goto out;
        }
        *eq = '\0';
        r = emul_set(&p, emul_trim(s), emul_trim(eq + 1), msg, sizeof(msg));
        if (r) {
            rk_set_err(err, errlen, "%s:%d: %s", path, lineno, msg);
            goto out;
        }
    }
    if (!p.kind) {
        rk_set_err(err, errlen, "%s: missing 'kind = ssd|hdd'", path);
        r = -EINVAL;
        goto out;
    }
    if (!p.name[0]) { /* default: the file name without directory and extension */
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        snprintf(p.name, sizeof(p.name), "%.*s", (int)strcspn(b, "."), b);
    }
    struct emul_model m;
    if (emul_model_init(&m, &p, 1ull << 30)) {
        rk_set_err(err, errlen, "%s: incomplete or inconsistent %s profile (%s)", path,
                   p.kind == RK_EMUL_SSD ? "ssd" : "hdd",
                   p.kind == RK_EMUL_SSD
                       ? "read_iops, write_iops, read_bw, write_bw > 0; parallelism 1..64"
                       : "rpm, outer_bw, inner_bw, zones, queue_depth > 0; "
                         "seek_track_us <= seek_avg_us <= seek_full_us");
        r = -EINVAL;
        goto out;
    }
    *out = p;
out:
    fclose(f);
    return r;
}

int rk_emul_profile_load(const char *name_or_path, struct rk_emul_params *out, char *err,
                         size_t errlen)
{
    if (!name_or_path || !*name_or_path || !out) {
        rk_set_err(err, errlen, "no profile given");
        return -EINVAL;
    }
    for (const struct rk_emul_params *b = emul_builtin_profiles; b->name[0]; b++) {
        if (!strcmp(b->name, name_or_path)) {
            *out = *b;
            return 0;
        }
    }
    /* Anything that looks like a path is a file; a bare word is an unknown built-in. */
    if (!strchr(name_or_path, '/') && !strstr(name_or_path, ".ini")) {
        rk_set_err(err, errlen,
                   "no profile '%s' (built-in: sata-ssd-2014, hdd-7200; or a path "
                   "to an INI file)",
                   name_or_path);
        return -ENOENT;
    }
    return emul_load_file(name_or_path, out, err, errlen);
}
