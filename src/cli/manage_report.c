/* Option applicability, --test states and scrub JSON of the management commands (manage.h). */
#include "cli/manage.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report.h"

static const char *jstr(const cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
    return s ? s : "";
}

/* The options each management command takes (short letters of mgmt_parse's table); another
 * command's option is a usage error. A command not listed takes all. */
static const struct {
    const char *cmd, *opts;
} mgmt_applies[] = {
    {"status", "cjth"},     {"fail", "csjh"},        {"replace", "cswrWjPNDfh"},
    {"scrub", "cRrnjPNDh"}, {"re-add", "csrWjPNDh"},
};

int mgmt_applies_to(const char *cmd, int c, const char *lname)
{
    for (size_t i = 0; i < sizeof(mgmt_applies) / sizeof(mgmt_applies[0]); i++) {
        if (strcmp(mgmt_applies[i].cmd, cmd) || strchr(mgmt_applies[i].opts, c))
            continue;
        char shortname[3] = {'-', (char)c, '\0'};
        fprintf(stderr, "raidkit %s: option '%s%s' does not apply to %s (see raidkit %s --help)\n",
                cmd, lname ? "--" : "", lname ? lname : shortname, cmd, cmd);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

bool mgmt_needs_resync(const cJSON *st)
{
    const cJSON *u = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "bitmap"), "unsynced");
    return cJSON_IsNumber(u) && u->valuedouble > 0;
}

int mgmt_state(const cJSON *st)
{
    const cJSON *job = cJSON_GetObjectItem(st, "job");
    const char *kind = jstr(job, "kind"), *state = jstr(job, "state");
    if (cJSON_GetArraySize(cJSON_GetObjectItem(st, "bad_ranges")) > 0 ||
        (!strcmp(kind, "rebuild") && !strcmp(state, "failed")))
        return CLI_EXIT_BROKEN;
    if ((!strcmp(kind, "rebuild") || !strcmp(kind, "resync")) && !strcmp(state, "running"))
        return CLI_EXIT_RECOVERING;
    if (mgmt_needs_resync(st)) /* no resync runs, yet copies or parity may disagree */
        return CLI_EXIT_RECOVERING;
    return cJSON_IsTrue(cJSON_GetObjectItem(st, "degraded")) ? CLI_EXIT_DEGRADED : CLI_EXIT_OK;
}
