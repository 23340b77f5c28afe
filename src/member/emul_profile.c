/* Device-model profiles: the parameter table (RK_EMUL_PARAMS as data), its checks, and loading a
 * profile: the built-in table by name, or an INI file through the core INI reader. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/ini.h"
#include "core/util.h"
#include "member/emul_model.h"
#include "raidkit/emul.h"

static const char *const emul_names[] = {"sata-ssd-2014", "hdd-7200", NULL};

const char *const *rk_emul_profile_names(void)
{
    return emul_names;
}

#define EMUL_MODELS_SSD (1u << RK_EMUL_SSD)
#define EMUL_MODELS_HDD (1u << RK_EMUL_HDD)
#define EMUL_MODELS_ANY (EMUL_MODELS_SSD | EMUL_MODELS_HDD)
#define EMUL_REQ_REQ    true
#define EMUL_REQ_OPT    false
#define EMUL_ROW(type, field, models, unit, required, meaning)                                     \
    {#field,                                                                                       \
     RK_EMUL_##type,                                                                               \
     EMUL_MODELS_##models,                                                                         \
     EMUL_REQ_##required,                                                                          \
     offsetof(struct rk_emul_params, field),                                                       \
     unit,                                                                                         \
     meaning},

const struct rk_emul_field rk_emul_fields[] = {RK_EMUL_PARAMS(EMUL_ROW){NULL}};

static const char *emul_kind_name(enum rk_emul_kind k)
{
    return k == RK_EMUL_SSD ? "ssd" : k == RK_EMUL_HDD ? "hdd" : "unknown";
}

bool rk_emul_field_used(const struct rk_emul_field *f, const struct rk_emul_params *p)
{
    return (p->kind == RK_EMUL_SSD || p->kind == RK_EMUL_HDD) && (f->models & (1u << p->kind));
}

uint64_t rk_emul_field_get(const struct rk_emul_params *p, const struct rk_emul_field *f)
{
    const void *src = (const char *)p + f->offset;
    switch (f->type) {
    case RK_EMUL_U32:
        return *(const uint32_t *)src;
    case RK_EMUL_U64:
        return *(const uint64_t *)src;
    case RK_EMUL_BOOL:
        return *(const bool *)src;
    }
    return 0;
}

int rk_emul_params_check(const struct rk_emul_params *p, char *msg, size_t msglen)
{
    if (p->kind != RK_EMUL_SSD && p->kind != RK_EMUL_HDD) {
        rk_set_err(msg, msglen, "kind must be ssd or hdd");
        return -EINVAL;
    }
    const char *kind = emul_kind_name(p->kind);
    for (const struct rk_emul_field *f = rk_emul_fields; f->name; f++) {
        if (f->required && rk_emul_field_used(f, p) && rk_emul_field_get(p, f) == 0) {
            rk_set_err(msg, msglen, "incomplete %s profile: %s must be > 0", kind, f->name);
            return -EINVAL;
        }
    }
    if (p->kind == RK_EMUL_SSD && p->parallelism > EMUL_MAX_CHANNELS) {
        rk_set_err(msg, msglen, "inconsistent ssd profile: parallelism %u is not 1..%d",
                   p->parallelism, EMUL_MAX_CHANNELS);
        return -EINVAL;
    }
    if (p->afr_ppm >= 1000000 || p->ure_exp > 20) {
        rk_set_err(msg, msglen,
                   "inconsistent %s profile: afr_ppm %u is not 0..999999 or ure_exp %u "
                   "is not 0..20",
                   kind, p->afr_ppm, p->ure_exp);
        return -EINVAL;
    }
    if (p->kind == RK_EMUL_HDD &&
        (p->seek_track_us > p->seek_avg_us || p->seek_avg_us > p->seek_full_us)) {
        rk_set_err(msg, msglen,
                   "inconsistent hdd profile: want seek_track_us <= seek_avg_us <= seek_full_us "
                   "(%u, %u, %u)",
                   p->seek_track_us, p->seek_avg_us, p->seek_full_us);
        return -EINVAL;
    }
    return 0;
}

static int emul_set_bool(bool *dst, const char *key, const char *val, char *err, size_t errlen)
{
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no",
                                                                                "off"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!strcasecmp(val, yes[i]) || !strcasecmp(val, no[i])) {
            *dst = !strcasecmp(val, yes[i]);
            return 0;
        }
    }
    rk_set_err(err, errlen, "bad value '%s' for %s (true or false)", val, key);
    return -EINVAL;
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
    for (const struct rk_emul_field *f = rk_emul_fields; f->name; f++) {
        if (strcmp(key, f->name))
            continue;
        void *dst = (char *)p + f->offset;
        if (f->type == RK_EMUL_BOOL)
            return emul_set_bool(dst, key, val, err, errlen);
        /* Plain integers, or sizes with K/M/G/T (powers of 1024) for 64-bit fields. */
        uint64_t v;
        int r = rk_parse_u64(val, &v);
        if (r && f->type == RK_EMUL_U64)
            r = rk_parse_size(val, &v);
        if (r || (f->type == RK_EMUL_U32 && v > UINT32_MAX)) {
            rk_set_err(err, errlen, "bad value '%s' for %s (a non-negative integer%s)", val, key,
                       f->type == RK_EMUL_U64 ? ", K/M/G/T allowed" : "");
            return -EINVAL;
        }
        if (f->type == RK_EMUL_U32)
            *(uint32_t *)dst = (uint32_t)v;
        else
            *(uint64_t *)dst = v;
        return 0;
    }
    rk_set_err(err, errlen, "unknown key '%s'", key);
    return -EINVAL;
}

/* rk_ini_fn of a profile file: key = value lines only. */
static int emul_line(void *arg, const char *section, const char *key, const char *val, char *msg,
                     size_t msglen)
{
    if (!key || section[0]) {
        rk_set_err(msg, msglen, "unexpected section '[%s]' (a profile has only key = value lines)",
                   section);
        return -EINVAL;
    }
    return emul_set(arg, key, val, msg, msglen);
}

static int emul_load_file(const char *path, struct rk_emul_params *out, char *err, size_t errlen)
{
    struct rk_emul_params p = {0};
    char msg[256];
    int r = rk_ini_parse(path, emul_line, &p, err, errlen);
    if (r < 0)
        return r == -ENOENT ? -ENOENT : -EINVAL;
    if (!p.kind) {
        rk_set_err(err, errlen, "%s: missing 'kind = ssd|hdd'", path);
        return -EINVAL;
    }
    if (!p.name[0]) { /* default: the file name without directory and extension */
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        snprintf(p.name, sizeof(p.name), "%.*s", (int)strcspn(b, "."), b);
    }
    if (rk_emul_params_check(&p, msg, sizeof(msg)) < 0) {
        rk_set_err(err, errlen, "%s: %s", path, msg);
        return -EINVAL;
    }
    *out = p;
    return 0;
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
