/* `raidkit info`: describe the superblocks of member files (read-only), name what a file that is
 * no raidkit member holds, and with --test put the array's state in the exit code (report.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/report.h"
#include "meta/probe.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

static const char info_usage[] =
    "Usage: raidkit info [--json] [--test] MEMBER...\n"
    "\n"
    "Read the superblocks of MEMBER files (read-only) and show the array they belong to: UUID,\n"
    "name, level, chunk, size, event counter, clean/dirty, and each member's slot and state.\n"
    "Unreadable, foreign, stale or corrupt members are named with the reason; a file that holds\n"
    "no raidkit superblock is named with what it holds (a file system, zeroes, ...); a member\n"
    "shorter than its superblock says is named truncated (its slot counts as missing); the\n"
    "exit status is then 1. A member whose superblock has the raidkit magic but fails a check\n"
    "(checksum, version, a field out of bounds) is named \"corrupt superblock: CHECK\" and the\n"
    "exit status is 6. A degraded or failed array alone exits 0: its state is the exit status\n"
    "only with --test (as mdadm).\n"
    "\n"
    "  -j, --json   print one JSON document (for scripts)\n"
    "  -t, --test   exit status = the array's state as the given members leave it: 0 healthy,\n"
    "               3 degraded, 4 recovering (rebuild or resync pending, or not shut\n"
    "               down cleanly), 5 failed\n"
    "  -h, --help   show this help\n";

static const char *info_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Add "content" to every member of doc that holds no readable raidkit superblock; print them
 * (text mode). Returns how many there were. */
static int info_foreign_content(cJSON *doc, bool print)
{
    int bad = 0;
    cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(doc, "members"))
    {
        const char *st = info_str(m, "status");
        if (strcmp(st, "not-raidkit") && strcmp(st, "unreadable"))
            continue;
        char what[160];
        rk_probe_describe(info_str(m, "path"), what, sizeof(what));
        cJSON_AddStringToObject(m, "content", what);
        if (print && !bad++)
            printf("Not raidkit members:\n");
        else if (!print)
            bad++;
        if (print)
            printf("  %s: %s\n", info_str(m, "path"), what);
    }
    return bad;
}

/* The --test state of the array doc describes (report.h codes). */
int cli_info_state(const cJSON *doc)
{
    const cJSON *a = cJSON_GetObjectItem(doc, "array"), *s;
    if (!cJSON_IsObject(a))
        return CLI_EXIT_BROKEN;
    struct rk_raid_geom g = {0};
    if (rk_level_parse(info_str(a, "level"), &g.level))
        return CLI_EXIT_BROKEN;
    g.chunk = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "chunk"));
    g.data_offset = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "data_offset"));
    uint32_t alive = 0;
    /* Not shut down cleanly counts as recovering too: the next writable start replays the
     * partial parity log and resyncs what the bitmap marks (or the whole array). */
    bool recovering = cJSON_IsTrue(cJSON_GetObjectItem(a, "resync_pending")) ||
                      cJSON_IsFalse(cJSON_GetObjectItem(a, "clean"));
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(a, "slots"))
    {
        uint32_t slot = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItem(s, "slot"));
        if (slot >= RK_MAX_MEMBERS)
            return CLI_EXIT_BROKEN;
        g.members = slot + 1 > g.members ? slot + 1 : g.members;
        g.data_size[slot] = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(s, "data_size"));
        const char *st = info_str(s, "state");
        bool given = cJSON_IsString(cJSON_GetObjectItem(s, "path"));
        if (!strcmp(st, "rebuilding") && given)
            recovering = true;
        if (!strcmp(st, "active") && given)
            alive |= 1u << slot;
    }
    if (rk_raid_geom_survives(&g, alive) != 1)
        return CLI_EXIT_BROKEN;
    if (recovering)
        return CLI_EXIT_RECOVERING;
    return alive == (g.members >= 32 ? ~0u : (1u << g.members) - 1) ? CLI_EXIT_OK
                                                                    : CLI_EXIT_DEGRADED;
}

/* Parse info's options; 0, -1 after --help, or CLI_EXIT_USAGE. */
static int info_parse(int argc, char **argv, bool *json, bool *test)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"test", no_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jth", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            *json = true;
            break;
        case 't':
            *test = true;
            break;
        case 'h':
            fputs(info_usage, stdout);
            return -1;
        default:
            fprintf(stderr, "raidkit info: unknown option '%s' (see raidkit info --help)\n",
                    argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

int cli_info(int argc, char **argv)
{
    bool json = false, test = false;
    int r = info_parse(argc, argv, &json, &test);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    int n = argc - optind;
    if (n <= 0) {
        fprintf(stderr, "raidkit info: no members given (see raidkit info --help)\n");
        return CLI_EXIT_USAGE;
    }
    const char *const *paths = (const char *const *)argv + optind;
    char err[512] = "";
    char *jtext = rk_volume_info(paths, n, true, err, sizeof(err));
    cJSON *doc = jtext ? cJSON_Parse(jtext) : NULL;
    free(jtext);
    if (!doc) {
        fprintf(stderr, "raidkit info: %s\n", err[0] ? err : "cannot read any member");
        return CLI_EXIT_FAIL;
    }
    int bad;
    if (json) {
        bad = info_foreign_content(doc, false);
        char *t = cJSON_Print(doc);
        if (t)
            puts(t);
        free(t);
    } else {
        char *text = rk_volume_info(paths, n, false, err, sizeof(err));
        if (text) {
            fputs(text, stdout);
            size_t len = strlen(text);
            if (len && text[len - 1] != '\n')
                fputc('\n', stdout);
        }
        free(text);
        bad = info_foreign_content(doc, true);
    }
    int state = cli_info_state(doc), truncated = 0, corrupt = 0, unreadable = 0;
    cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(doc, "members"))
    {
        const char *st = info_str(m, "status");
        truncated += !strcmp(st, "truncated");
        unreadable += !strcmp(st, "unreadable");
        if (!strcmp(st, "corrupt")) {
            /* One line per damaged member: which check failed (the reason ends with it). */
            const char *why = strstr(info_str(m, "reason"), "corrupt superblock: ");
            corrupt++;
            fprintf(stderr, "raidkit info: %s: %s\n", info_str(m, "path"),
                    why ? why : info_str(m, "reason"));
        }
    }
    cJSON_Delete(doc);
    if (test && state)
        return state;
    if (bad > unreadable)
        fprintf(stderr, "raidkit info: %d of %d member%s %s not a raidkit member (no superblock)\n",
                bad - unreadable, n, n == 1 ? "" : "s", bad - unreadable == 1 ? "is" : "are");
    if (unreadable)
        fprintf(stderr, "raidkit info: %d of %d member%s cannot be read\n", unreadable, n,
                n == 1 ? "" : "s");
    if (truncated)
        fprintf(stderr,
                "raidkit info: %d of %d member%s %s shorter than %s superblock says "
                "(truncated)\n",
                truncated, n, n == 1 ? "" : "s", truncated == 1 ? "is" : "are",
                truncated == 1 ? "its" : "their");
    /* A damaged raidkit member is worse than a file that is none: its own code. */
    if (corrupt)
        return CLI_EXIT_CORRUPT;
    return bad || truncated ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
