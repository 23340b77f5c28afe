/* How the management commands print a status document (manage.h): the status text, the job
 * line, the scrub mismatch list. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/manage.h"
#include "core/util.h"

#define MiB (1024.0 * 1024.0)

double mgmt_num(const cJSON *o, const char *key)
{
    const cJSON *n = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(n) ? n->valuedouble : 0;
}

const char *mgmt_str(const cJSON *o, const char *key)
{
    const cJSON *n = cJSON_GetObjectItem(o, key);
    return cJSON_IsString(n) ? n->valuestring : "";
}

/* One line describing a job object of the status document. */
void mgmt_job_line(const cJSON *job, char *out, size_t len)
{
    const char *kind = mgmt_str(job, "kind"), *state = mgmt_str(job, "state");
    if (!strcmp(kind, "none")) {
        snprintf(out, len, "none");
        return;
    }
    char what[64];
    if (!strcmp(kind, "rebuild") || !strcmp(kind, "re-add"))
        snprintf(what, sizeof(what), "%s of slot %.0f (%.0f bytes resynced)", kind,
                 mgmt_num(job, "slot"), mgmt_num(job, "resynced_bytes"));
    else if (!strcmp(kind, "resync"))
        snprintf(what, sizeof(what), "resync (%s, %.0f bytes resynced)",
                 cJSON_IsTrue(cJSON_GetObjectItem(job, "full")) ? "full" : "bitmap",
                 mgmt_num(job, "resynced_bytes"));
    else
        snprintf(what, sizeof(what), "scrub (%s)",
                 cJSON_IsTrue(cJSON_GetObjectItem(job, "repair")) ? "repair" : "check");
    double eta = mgmt_num(job, "eta_s");
    char etas[40] = ", ETA unknown";
    if (strcmp(state, "running"))
        etas[0] = '\0'; /* a finished job has no ETA */
    else if (eta >= 0 && eta < 1)
        snprintf(etas, sizeof(etas), ", ETA < 1 s");
    else if (eta >= 0)
        snprintf(etas, sizeof(etas), ", ETA %.0f s", eta);
    char at[40] = ""; /* no rate measured yet, or none (a scrub that compares nothing) */
    if (mgmt_num(job, "rate_mib_s") > 0)
        snprintf(at, sizeof(at), " at %.1f MiB/s", mgmt_num(job, "rate_mib_s"));
    snprintf(out, len, "%s %s: %.1f%%%s%s%s%s", what, state, mgmt_num(job, "percent"), at, etas,
             cJSON_GetObjectItem(job, "error") ? ", error: " : "", mgmt_str(job, "error"));
}

void mgmt_print_status(const cJSON *st)
{
    char sz[32], line[256];
    printf("array:    %s %s\n", mgmt_str(st, "name")[0] ? mgmt_str(st, "name") : "(no name)",
           mgmt_str(st, "array_uuid"));
    printf("level:    %s, %s, chunk %.0f KiB, %.0f slots, event %.0f\n", mgmt_str(st, "level"),
           rk_format_size((uint64_t)mgmt_num(st, "size"), sz, sizeof(sz)),
           mgmt_num(st, "chunk") / 1024, mgmt_num(st, "members"), mgmt_num(st, "event"));
    char unsynced[64] = "";
    const cJSON *job = cJSON_GetObjectItem(st, "job");
    bool resyncing =
        !strcmp(mgmt_str(job, "kind"), "resync") && !strcmp(mgmt_str(job, "state"), "running");
    if (mgmt_needs_resync(st)) /* "needs resync" only while no resync runs (docs/CLI.md) */
        snprintf(unsynced, sizeof(unsynced), ", %s (%.0f unsynced regions)",
                 resyncing ? "resyncing" : "needs resync",
                 mgmt_num(cJSON_GetObjectItem(st, "bitmap"), "unsynced"));
    printf("state:    %s%s%s\n",
           cJSON_IsTrue(cJSON_GetObjectItem(st, "degraded")) ? "degraded" : "healthy", unsynced,
           cJSON_IsTrue(cJSON_GetObjectItem(st, "read_only")) ? ", read-only" : "");
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "slots"))
    {
        char state[48];
        const char *s = mgmt_str(it, "state");
        if (cJSON_GetObjectItem(it, "rebuild_percent"))
            snprintf(state, sizeof(state), "%s %.1f%%", s, mgmt_num(it, "rebuild_percent"));
        else
            snprintf(state, sizeof(state), "%s", s);
        const cJSON *path = cJSON_GetObjectItem(it, "path");
        printf("slot %-3.0f  %-16s %s\n", mgmt_num(it, "slot"), state,
               cJSON_IsString(path) ? path->valuestring : "-");
        const cJSON *io = cJSON_GetObjectItem(it, "io");
        if (cJSON_IsObject(io))
            printf("          reads %.0f (%.1f MiB), writes %.0f (%.1f MiB), errors %.0f\n",
                   mgmt_num(io, "reads"), mgmt_num(io, "read_bytes") / MiB, mgmt_num(io, "writes"),
                   mgmt_num(io, "write_bytes") / MiB, mgmt_num(io, "errors"));
        const cJSON *conn = cJSON_GetObjectItem(it, "connection"); /* remote (nbd, rbd) members */
        const cJSON *kind = cJSON_GetObjectItem(it, "kind");
        if (cJSON_IsString(conn))
            printf("          %s member, %s, mean latency %.0f us\n",
                   cJSON_IsString(kind) ? kind->valuestring : "remote", conn->valuestring,
                   mgmt_num(it, "latency_us"));
        const cJSON *rc = cJSON_GetObjectItem(it, "reconnect"); /* served URI members */
        const cJSON *rs = cJSON_GetObjectItem(rc, "state");
        const cJSON *re = cJSON_GetObjectItem(rc, "last_error");
        if (cJSON_IsString(rs) && strcmp(rs->valuestring, "none"))
            printf("          reconnect: %s, %.0f attempt(s)%s%s\n", rs->valuestring,
                   mgmt_num(rc, "attempts"), cJSON_IsString(re) ? ", last: " : "",
                   cJSON_IsString(re) ? re->valuestring : "");
    }
    mgmt_job_line(cJSON_GetObjectItem(st, "job"), line, sizeof(line));
    printf("job:      %s\n", line);
    const cJSON *ls = cJSON_GetObjectItem(st, "last_scrub");
    if (cJSON_IsObject(ls)) {
        time_t t = (time_t)mgmt_num(ls, "finished_at");
        char when[64] = "";
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
        printf(
            "scrub:    last finished %s: %.0f mismatches, %.0f repaired, %.0f read errors%s\n",
            when, mgmt_num(ls, "mismatches"), mgmt_num(ls, "repaired"), mgmt_num(ls, "read_errors"),
            cJSON_IsTrue(cJSON_GetObjectItem(ls, "nothing_compared")) ? MGMT_SCRUB_UNCOMPARED : "");
    } else {
        printf("scrub:    never run since start\n");
    }
    const cJSON *ga = cJSON_GetObjectItem(st, "gather"); /* raid5/raid6 stripe gathering */
    const cJSON *wo = cJSON_GetObjectItem(ga, "write_outs");
    if (cJSON_IsObject(ga) && !cJSON_IsTrue(cJSON_GetObjectItem(ga, "on")))
        printf("gather:   off\n");
    else if (cJSON_IsObject(ga))
        printf(
            "gather:   hold %.0f us, %.0f of %.0f stripes held; %.0f writes held; %.0f full-stripe"
            " + %.0f partial write-outs (whole %.0f, timeout %.0f, flush %.0f, fua %.0f, memory"
            " %.0f, other %.0f)\n",
            mgmt_num(ga, "hold_us"), mgmt_num(ga, "stripes_held"), mgmt_num(ga, "entries"),
            mgmt_num(ga, "writes_held"), mgmt_num(ga, "full_stripe_writes"),
            mgmt_num(ga, "partial_writes"), mgmt_num(wo, "whole"), mgmt_num(wo, "timeout"),
            mgmt_num(wo, "flush"), mgmt_num(wo, "fua"), mgmt_num(wo, "memory"),
            mgmt_num(wo, "other"));
    cli_cache_print_status(cJSON_GetObjectItem(st, "cache"));
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "bad_ranges"))
    {
        printf("unreadable: slot %.0f data bytes [%.0f, %.0f) could not be rebuilt (reads there "
               "fail)\n",
               mgmt_num(it, "slot"), mgmt_num(it, "offset"),
               mgmt_num(it, "offset") + mgmt_num(it, "len"));
    }
}

/* One line per scrub mismatch location (aoff < 0: the place holds parity, no array data). */
void mgmt_print_mismatch(double slot, double moff, double len, double aoff, const char *kind,
                         const char *fixed, const char *parity, double q_slot)
{
    char where[96] = "", par[80] = "";
    if (aoff >= 0)
        snprintf(where, sizeof(where), ", array bytes [%.0f, %.0f)", aoff, aoff + len);
    if (parity && !strcmp(parity, "P+Q"))
        snprintf(par, sizeof(par), " (parity P) and slot %.0f (parity Q)", q_slot);
    else if (parity)
        snprintf(par, sizeof(par), " (parity %s)", parity);
    /* A parity place holds no data: "slot 3 (parity P) bytes [A, B)" of its data area. */
    printf("mismatch: slot %.0f%s %s [%.0f, %.0f)%s: %s, repaired %s\n", slot, par,
           par[0] ? "bytes" : "data bytes", moff, moff + len, where, kind, fixed);
}

/* The mismatch_list of a status reply's last_scrub, printed by mgmt_print_mismatch. */
void mgmt_print_mismatch_list(const cJSON *st)
{
    const cJSON *ls = cJSON_GetObjectItem(st, "last_scrub"), *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(ls, "mismatch_list"))
    {
        const cJSON *ao = cJSON_GetObjectItem(it, "array_offset");
        const char *par = cJSON_GetStringValue(cJSON_GetObjectItem(it, "parity"));
        mgmt_print_mismatch(mgmt_num(it, "slot"), mgmt_num(it, "member_offset"),
                            mgmt_num(it, "len"), cJSON_IsNumber(ao) ? ao->valuedouble : -1,
                            mgmt_str(it, "kind"), mgmt_str(it, "repaired"), par,
                            mgmt_num(it, "q_slot"));
    }
}
