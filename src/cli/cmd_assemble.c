/* `raidkit assemble --scan`: find the members of the configured arrays by their superblocks
 * among the paths and globs of the configuration file, in any order; name the files that belong
 * to another array or to none and skip them; report each array's state (exit status as
 * --test). Also the lookup behind `serve NAME`. docs/CLI.md "assemble". */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli/assemble.h"
#include "cli/cli.h"
#include "cli/report.h"
#include "core/util.h"
#include "meta/meta_int.h"
#include "meta/probe.h"
#include "raidkit/volume.h"

/* The array document rk_volume_info gives for one path, NULL when unreadable/out of memory. */
static cJSON *asm_read(const char *path)
{
    char err[256];
    char *t = rk_volume_info(&path, 1, true, err, sizeof(err));
    cJSON *d = t ? cJSON_Parse(t) : NULL;
    free(t);
    return d;
}

static const char *asm_str(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, k));
    return s ? s : "";
}

/* Does the superblock document d belong to array a (uuid, else the superblock name)? */
static bool asm_matches(const struct rk_conf_array *a, const cJSON *d)
{
    const cJSON *arr = cJSON_GetObjectItem(d, "array");
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "members"), 0);
    /* a truncated member is still this array's: its slot line names it (left out) */
    if (!cJSON_IsObject(arr) ||
        (strcmp(asm_str(m, "status"), "ok") && strcmp(asm_str(m, "status"), "truncated")))
        return false;
    if (a->uuid)
        return !strcasecmp(asm_str(arr, "uuid"), a->uuid);
    return !strcmp(asm_str(arr, "name"), a->sb_name);
}

/* Record path as skipped for reason. */
static void asm_skip(struct asm_result *res, const char *path, const char *reason)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "path", path);
    cJSON_AddStringToObject(s, "reason", reason);
    cJSON_AddItemToArray(res->skipped, s);
}

/* Look at one candidate file: a member of a (added to res), or skipped with the reason. */
static int asm_candidate(const struct rk_conf_array *a, const char *path, struct asm_result *res)
{
    char real[PATH_MAX], why[400];
    struct stat st;
    if (stat(path, &st) || !realpath(path, real)) {
        snprintf(why, sizeof(why), "not found: %s", strerror(errno));
        asm_skip(res, path, why);
        return 0;
    }
    if (S_ISDIR(st.st_mode))
        return 0; /* a glob matching a directory: not a member candidate */
    for (int i = 0; i < res->n; i++) {
        struct stat o;
        if (!strcmp(res->members[i], real) ||
            (!stat(res->members[i], &o) && o.st_dev == st.st_dev && o.st_ino == st.st_ino))
            return 0; /* matched twice (overlapping globs, a hard link): looked at once */
    }
    cJSON *d = asm_read(real);
    if (d && asm_matches(a, d)) {
        cJSON_Delete(d);
        if (res->n == RK_MAX_MEMBERS) {
            asm_skip(res, real, "more members than an array can have");
            return 0;
        }
        return (res->members[res->n++] = strdup(real)) ? 0 : -ENOMEM;
    }
    const cJSON *arr = d ? cJSON_GetObjectItem(d, "array") : NULL;
    const cJSON *m0 = d ? cJSON_GetArrayItem(cJSON_GetObjectItem(d, "members"), 0) : NULL;
    const char *cs = strstr(asm_str(m0, "reason"), "corrupt superblock: ");
    if (!strcmp(asm_str(m0, "status"), "corrupt") && cs) {
        /* the raidkit magic, but a check failed: a damaged member, not a foreign file */
        snprintf(why, sizeof(why), "%s", cs);
    } else if (cJSON_IsObject(arr) && strcmp(asm_str(m0, "status"), "ok")) {
        /* this array's or another's superblock, but the member is damaged (e.g. truncated) */
        meta_reason_show(why, sizeof(why), asm_str(m0, "status"), asm_str(m0, "reason"));
    } else if (cJSON_IsObject(arr)) {
        snprintf(why, sizeof(why), "member of another array, %s (%s)", asm_str(arr, "uuid"),
                 asm_str(arr, "name")[0] ? asm_str(arr, "name") : "no name");
    } else {
        char what[160];
        rk_probe_describe(real, what, sizeof(what));
        snprintf(why, sizeof(why), "not a raidkit member: %s", what);
    }
    cJSON_Delete(d);
    asm_skip(res, real, why);
    return 0;
}

int asm_check_duplicates(const char *cmd, const struct rk_conf *c, const struct rk_conf_array *a)
{
    char *const *globs = a->nglobs ? a->globs : c->scan;
    int ng = a->nglobs ? a->nglobs : c->nscan, n = 0;
    const char *plain[RK_CONF_MAX_GLOBS];
    for (int g = 0; g < ng; g++)
        if (!strpbrk(globs[g], "*?[{~"))
            plain[n++] = globs[g];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            struct stat si, sj;
            bool same =
                !strcmp(plain[i], plain[j]) || (!stat(plain[i], &si) && !stat(plain[j], &sj) &&
                                                si.st_dev == sj.st_dev && si.st_ino == sj.st_ino);
            if (same) {
                if (!strcmp(plain[i], plain[j]))
                    fprintf(stderr, "raidkit %s: %s: array %s: member %s is listed twice\n", cmd,
                            c->path, a->name, plain[i]);
                else
                    fprintf(stderr,
                            "raidkit %s: %s: array %s: members %s and %s are the same file "
                            "(listed twice)\n",
                            cmd, c->path, a->name, plain[j], plain[i]);
                return CLI_EXIT_USAGE;
            }
        }
    return 0;
}

int asm_find(const struct rk_conf *c, const struct rk_conf_array *a, struct asm_result *res)
{
    memset(res, 0, sizeof(*res));
    res->skipped = cJSON_CreateArray();
    char *const *globs = a->nglobs ? a->globs : c->scan;
    int ng = a->nglobs ? a->nglobs : c->nscan, r = 0;
    for (int g = 0; !r && g < ng; g++) {
        glob_t gl;
        if (glob(globs[g], GLOB_NOCHECK | GLOB_BRACE | GLOB_TILDE, NULL, &gl)) {
            asm_skip(res, globs[g], "glob failed");
            continue;
        }
        for (size_t i = 0; !r && i < gl.gl_pathc; i++)
            r = asm_candidate(a, gl.gl_pathv[i], res);
        globfree(&gl);
    }
    if (r)
        return r;
    res->state = CLI_EXIT_BROKEN;
    if (res->n) {
        char err[256];
        char *t = rk_volume_info((const char *const *)res->members, res->n, true, err, sizeof(err));
        res->info = t ? cJSON_Parse(t) : NULL;
        free(t);
        if (res->info)
            res->state = cli_info_state(res->info);
        /* Two files claiming one slot with the same event (a byte copy of a member): which is
         * the real one cannot be proven, so the array is not healthy and serve NAME refuses. */
        const cJSON *m, *mem = res->info ? cJSON_GetObjectItem(res->info, "members") : NULL;
        cJSON_ArrayForEach(m, mem)
        {
            if (!strcmp(asm_str(m, "status"), "duplicate"))
                res->dup = m;
        }
        if (res->dup)
            res->state = CLI_EXIT_BROKEN;
    }
    return 0;
}

void asm_free(struct asm_result *res)
{
    for (int i = 0; i < res->n; i++)
        free(res->members[i]);
    cJSON_Delete(res->skipped);
    cJSON_Delete(res->info);
    memset(res, 0, sizeof(*res));
}

const char *asm_state_name(int state)
{
    switch (state) {
    case CLI_EXIT_OK:
        return "healthy";
    case CLI_EXIT_DEGRADED:
        return "degraded";
    case CLI_EXIT_RECOVERING:
        return "recovering";
    default:
        return "failed";
    }
}

int asm_for_serve(const char *config, const char *name, struct rk_conf *conf,
                  const struct rk_conf_array **a, struct asm_result *res)
{
    char err[600] = "";
    memset(res, 0, sizeof(*res));
    if (rk_conf_load(config, conf, err, sizeof(err))) {
        fprintf(stderr, "raidkit serve: %s\n", err);
        return CLI_EXIT_USAGE; /* a configuration error: a restart cannot help (systemd) */
    }
    if (!(*a = rk_conf_find(conf, name))) {
        fprintf(stderr, "raidkit serve: %s is neither a member file nor an array of %s\n", name,
                conf->path);
        return CLI_EXIT_USAGE;
    }
    int d = asm_check_duplicates("serve", conf, *a);
    if (d)
        return d;
    if (asm_find(conf, *a, res)) {
        fprintf(stderr, "raidkit serve: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, res->skipped)
    {
        rk_warn("array %s: skipped %s: %s", name, asm_str(it, "path"), asm_str(it, "reason"));
    }
    if (!res->n) {
        fprintf(stderr,
                "raidkit serve: no member of array %s found (see raidkit assemble --scan)\n", name);
        return CLI_EXIT_FAIL;
    }
    if (res->dup) {
        fprintf(stderr,
                "raidkit serve: array %s: %s %s: two files hold the same member (a copy?); "
                "remove one from the configuration\n",
                name, asm_str(res->dup, "path"), asm_str(res->dup, "reason"));
        return CLI_EXIT_FAIL;
    }
    const cJSON *sl, *arr = res->info ? cJSON_GetObjectItem(res->info, "array") : NULL;
    const cJSON *list = arr ? cJSON_GetObjectItem(arr, "slots") : NULL;
    int usable = 0;
    cJSON_ArrayForEach(sl, list)
    {
        usable += cJSON_IsString(cJSON_GetObjectItem(sl, "path"));
    }
    rk_info("array %s: %d of %d members found, %d file%s left out (%s)", name, usable,
            cJSON_GetArraySize(list), res->n - usable, res->n - usable == 1 ? "" : "s",
            asm_state_name(res->state));
    return CLI_EXIT_OK;
}

/* The report of one array: text on stdout, or a JSON object added to out. */
/* The file of this array res found for slot that assembly leaves out (stale, truncated, ...),
 * as its rk_volume_info member object, or NULL. */
static const cJSON *asm_left_out(const struct asm_result *res, int slot)
{
    const cJSON *it, *mem = res->info ? cJSON_GetObjectItem(res->info, "members") : NULL;
    cJSON_ArrayForEach(it, mem)
    {
        const cJSON *sl = cJSON_GetObjectItem(it, "slot");
        if (strcmp(asm_str(it, "status"), "ok") && cJSON_IsNumber(sl) &&
            (int)sl->valuedouble == slot)
            return it;
    }
    return NULL;
}

/* One slot of the report: its JSON object added to slots, and (text) the line
 * "  slot N: active, PATH" / "missing" / "stale (event E < A), left out: PATH" /
 * "failed (recorded), no member". Returns 1 when a usable member holds it. */
static int asm_report_slot(const struct asm_result *res, const cJSON *arr, const cJSON *it,
                           cJSON *slots, bool text)
{
    const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(it, "path"));
    const char *rec = asm_str(it, "state");
    int slot = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(it, "slot"));
    const cJSON *lo = p ? NULL : asm_left_out(res, slot);
    char state[64], line[700];
    if (p) {
        snprintf(state, sizeof(state), "%s", rec);
        snprintf(line, sizeof(line), "%s, %s", rec, p);
    } else if (lo && !strcmp(asm_str(lo, "status"), "stale")) {
        snprintf(state, sizeof(state), "stale");
        snprintf(line, sizeof(line), "stale (event %.0f < %.0f), left out: %s",
                 cJSON_GetNumberValue(cJSON_GetObjectItem(lo, "event")),
                 cJSON_GetNumberValue(cJSON_GetObjectItem(arr, "event")), asm_str(lo, "path"));
    } else if (lo) {
        snprintf(state, sizeof(state), "%s", asm_str(lo, "status"));
        snprintf(line, sizeof(line), "%s, left out: %s %s", state, asm_str(lo, "path"),
                 asm_str(lo, "reason"));
    } else if (!strcmp(rec, "active")) {
        snprintf(state, sizeof(state), "missing");
        snprintf(line, sizeof(line), "missing");
    } else {
        snprintf(state, sizeof(state), "%s", rec);
        snprintf(line, sizeof(line), "%s (recorded), no member", rec);
    }
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "slot", slot);
    cJSON_AddStringToObject(s, "state", state);
    cJSON_AddStringToObject(s, "recorded", rec);
    if (p || lo)
        cJSON_AddStringToObject(s, "path", p ? p : asm_str(lo, "path"));
    else
        cJSON_AddNullToObject(s, "path");
    cJSON_AddItemToArray(slots, s);
    if (text)
        printf("  slot %d: %s\n", slot, line);
    return p ? 1 : 0;
}

/* The report of one array: text on stdout, or a JSON object added to out. */
static void asm_report(const struct rk_conf_array *a, struct asm_result *res, cJSON *out)
{
    const cJSON *arr = res->info ? cJSON_GetObjectItem(res->info, "array") : NULL, *it;
    cJSON *o = cJSON_CreateObject(), *slots = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "name", a->name);
    cJSON_AddStringToObject(o, "uuid", arr ? asm_str(arr, "uuid") : (a->uuid ? a->uuid : ""));
    cJSON_AddStringToObject(o, "level", arr ? asm_str(arr, "level") : "");
    cJSON_AddStringToObject(o, "state", asm_state_name(res->state));
    int nslots = cJSON_GetArraySize(arr ? cJSON_GetObjectItem(arr, "slots") : NULL);
    int usable = 0, left = 0;
    const cJSON *mem = res->info ? cJSON_GetObjectItem(res->info, "members") : NULL;
    cJSON_ArrayForEach(it, mem)
    {
        left += strcmp(asm_str(it, "status"), "ok") != 0;
    }
    const cJSON *slot_list = arr ? cJSON_GetObjectItem(arr, "slots") : NULL;
    cJSON_ArrayForEach(it, slot_list)
    {
        usable += cJSON_IsString(cJSON_GetObjectItem(it, "path"));
    }
    char lo[48] = "";
    if (left)
        snprintf(lo, sizeof(lo), ", %d file%s left out", left, left == 1 ? "" : "s");
    if (!out && arr)
        printf("array %s: %s %s, %d members found: %s (of %d slots%s)\n", a->name,
               asm_str(arr, "uuid"), asm_str(arr, "level"), usable, asm_state_name(res->state),
               nslots, lo);
    else if (!out)
        printf("array %s: no member found: %s\n", a->name, asm_state_name(res->state));
    cJSON_AddNumberToObject(o, "members_found", usable);
    cJSON_AddNumberToObject(o, "slots_total", nslots);
    cJSON_AddNumberToObject(o, "left_out", left);
    cJSON_ArrayForEach(it, slot_list)
    {
        asm_report_slot(res, arr, it, slots, !out);
    }
    cJSON_ArrayForEach(it, mem)
    {
        /* A file of this array assembly will not use and no slot line names (e.g. replaced). */
        const cJSON *sl = cJSON_GetObjectItem(it, "slot");
        if (strcmp(asm_str(it, "status"), "ok") &&
            (!cJSON_IsNumber(sl) || asm_left_out(res, (int)sl->valuedouble) != it ||
             cJSON_IsString(cJSON_GetObjectItem(cJSON_GetArrayItem(slot_list, (int)sl->valuedouble),
                                                "path")))) {
            char why[400];
            meta_reason_show(why, sizeof(why), asm_str(it, "status"), asm_str(it, "reason"));
            asm_skip(res, asm_str(it, "path"), why);
        }
    }
    cJSON_ArrayForEach(it, res->skipped)
    {
        if (!out)
            printf("  skipped  %s: %s\n", asm_str(it, "path"), asm_str(it, "reason"));
    }
    cJSON_AddItemToObject(o, "slots", slots);
    cJSON_AddItemToObject(o, "skipped", res->skipped);
    res->skipped = NULL;
    if (out)
        cJSON_AddItemToArray(out, o);
    else
        cJSON_Delete(o);
}

static const char assemble_usage[] =
    "Usage: raidkit assemble --scan [--config FILE] [--json] [NAME...]\n"
    "\n"
    "Find the members of every array of the configuration file (or of the arrays NAME) by their\n"
    "superblocks among the paths and globs it lists, in any order. Files of another array and\n"
    "files that hold no raidkit superblock are named and skipped. Prints each array's slots\n"
    "and state; the exit status is the worst state: 0 healthy, 3 degraded, 4 recovering,\n"
    "5 failed (no or too few members), 2 a configuration file that cannot be read or parsed\n"
    "(or a NAME it does not hold), or the same file listed twice. `raidkit serve NAME` serves\n"
    "an array found this way.\n"
    "\n"
    "  -s, --scan          look for the members (the only mode for now)\n"
    "  -C, --config FILE   the configuration file (default " RK_CONF_DEFAULT ")\n"
    "  -j, --json          print {\"arrays\": [...]} as JSON\n"
    "  -h, --help          show this help\n";

int cli_assemble(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"scan", no_argument, NULL, 's'},
        {"config", required_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL;
    bool scan = false, json = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":sC:jh", longopts, NULL)) != -1) {
        if (c == 's')
            scan = true;
        else if (c == 'C')
            config = optarg;
        else if (c == 'j')
            json = true;
        else if (c == 'h') {
            fputs(assemble_usage, stdout);
            return CLI_EXIT_OK;
        } else {
            fprintf(stderr, "raidkit assemble: %s '%s' (see raidkit assemble --help)\n",
                    c == ':' ? "option needs a value:" : "unknown option", argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    if (!scan) {
        fprintf(stderr, "raidkit assemble: --scan is required (see raidkit assemble --help)\n");
        return CLI_EXIT_USAGE;
    }
    struct rk_conf conf = {0};
    char err[600] = "";
    if (rk_conf_load(config, &conf, err, sizeof(err))) {
        fprintf(stderr, "raidkit assemble: %s\n", err);
        rk_conf_free(&conf);
        return CLI_EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++)
        if (!rk_conf_find(&conf, argv[i])) {
            fprintf(stderr, "raidkit assemble: no array '%s' in %s\n", argv[i], conf.path);
            rk_conf_free(&conf);
            return CLI_EXIT_USAGE;
        }
    cJSON *doc = json ? cJSON_CreateObject() : NULL;
    cJSON *list = json ? cJSON_AddArrayToObject(doc, "arrays") : NULL;
    int worst = CLI_EXIT_OK;
    for (int i = 0; i < conf.n; i++) {
        const struct rk_conf_array *a = &conf.arr[i];
        bool wanted = optind == argc;
        for (int k = optind; k < argc; k++)
            wanted |= !strcmp(argv[k], a->name);
        struct asm_result res;
        if (!wanted)
            continue;
        if (asm_check_duplicates("assemble", &conf, a)) {
            worst = CLI_EXIT_USAGE;
            break;
        }
        if (asm_find(&conf, a, &res)) {
            asm_free(&res);
            fprintf(stderr, "raidkit assemble: out of memory\n");
            worst = CLI_EXIT_FAIL;
            break;
        }
        asm_report(a, &res, list);
        worst = res.state > worst ? res.state : worst;
        asm_free(&res);
    }
    if (doc && worst != CLI_EXIT_FAIL && worst != CLI_EXIT_USAGE)
        cli_print_json(doc);
    else
        cJSON_Delete(doc);
    rk_conf_free(&conf);
    return worst;
}
