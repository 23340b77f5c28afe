/* `raidkit replace|re-add|scrub`: the jobs of the management commands, online (a request to
 * the server, optionally waiting for the job) or offline directly on the member files (the job
 * runs in the foreground with progress on stderr). */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/members.h"
#include "cli/manage.h"
#include "cli/report.h"
#include "core/util.h"
#include "ctl/control.h"
#include "raidkit/member_nbd.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

#define MiB (1024.0 * 1024.0)

static const char replace_usage[] =
    "Usage: raidkit replace --slot N --with NEWMEMBER [--force] [--rate MIB] [--wait] [--json]\n"
    "                       [--progress|--no-progress] (--control PATH | [--degraded] MEMBER...)\n"
    "\n"
    "Rebuild slot N onto NEWMEMBER (an existing file or device, at least as large as the slot\n"
    "needs, holding neither another array's superblock nor a file system, partition table or\n"
    "other signature unless --force; random bytes are fine). The slot must be failed or missing: "
    "fail\n"
    "an active member first (raidkit fail). Online with --control (the rebuild runs in the\n"
    "server; see raidkit status), or offline on the MEMBER files (in the foreground with\n"
    "progress on stderr). The rebuild offset is checkpointed: a restart resumes it.\n"
    "\n"
    "  -s, --slot N        the slot to rebuild\n"
    "  -w, --with PATH     the new member\n"
    "  -f, --force         overwrite a new member that holds another array's superblock or a\n"
    "                      file system / partition table signature\n"
    "  -r, --rate MIB      at most MIB MiB/s (default unlimited)\n"
    "  -W, --wait          online: wait until the rebuild ended\n"
    "  -c, --control PATH  the control socket of a running `raidkit serve --control PATH`\n"
    "      --degraded      offline: run although slots other than N are missing (not given)\n"
    "  -j, --json          print the result as JSON\n"
    "  -P, --progress      draw a progress bar on stderr even when it is no terminal\n"
    "      --no-progress   no progress output (default: a bar on a terminal, else a log line\n"
    "                      per 10 %)\n"
    "  -h, --help          show this help\n";

static const char readd_usage[] =
    "Usage: raidkit re-add --slot N MEMBER [--rate MIB] [--wait] [--json]\n"
    "                      [--progress|--no-progress] (--control PATH | [--degraded] "
    "ARRAYMEMBER...)\n"
    "\n"
    "Take the old member of slot N (failed or missing) back with the content it had when it\n"
    "left, like mdadm --re-add: when the write-intent bitmap proves what changed since, only\n"
    "those regions are resynced; otherwise (no bitmap, the member older than the bitmap's last\n"
    "clear, unreadable ranges recorded) it is rebuilt whole, and the output says why. MEMBER\n"
    "must carry this array's superblock with the member UUID recorded for slot N. Online with\n"
    "--control, or offline over the array's other members. Checkpointed: a restart resumes it.\n"
    "\n"
    "  -s, --slot N        the slot to take the member back into\n"
    "  -r, --rate MIB      at most MIB MiB/s (default unlimited)\n"
    "  -W, --wait          online: wait until the re-add ended\n"
    "  -c, --control PATH  the control socket of a running `raidkit serve --control PATH`\n"
    "      --degraded      offline: run although slots other than N are missing (not given)\n"
    "  -j, --json          print the result as JSON\n"
    "  -P, --progress      draw a progress bar on stderr even when it is no terminal\n"
    "      --no-progress   no progress output\n"
    "  -h, --help          show this help\n";

static const char scrub_usage[] =
    "Usage: raidkit scrub [--repair] [--rate MIB] [--no-wait] [--json] [--progress|--no-progress]\n"
    "                     (--control PATH | [--degraded] MEMBER...)\n"
    "\n"
    "Compare every copy (raid1/10) or parity (raid5/6) of the array and count mismatched\n"
    "chunks/stripes. --repair rewrites what the redundancy can tell is wrong: raid1 with 3+\n"
    "copies by majority, 2 copies from the first copy; raid5 parity from the data; raid6 the\n"
    "one chunk P and Q locate (else parity from the data); a degraded raid6 is checked against\n"
    "the parity it has but not repaired (docs/CLI.md \"What scrub can and cannot know\").\n"
    "Arrays without redundancy are read completely (read errors are counted). Prints\n"
    "\"scrub finished: N mismatches, R repaired, E read errors\", then one line per mismatch\n"
    "(the first 64): \"mismatch: slot S data bytes [A, B)[, array bytes [X, Y)]: KIND,\n"
    "repaired none|data|parity|copy\" (a parity place: \"slot S (parity P|Q) bytes [A, B)\");\n"
    "exit 0 when it ran.\n"
    "\n"
    "  -R, --repair        fix mismatches\n"
    "  -r, --rate MIB      at most MIB MiB/s (default unlimited)\n"
    "  -n, --no-wait       online: only start it (see raidkit status)\n"
    "  -c, --control PATH  the control socket of a running `raidkit serve --control PATH`\n"
    "      --degraded      offline --repair: run with members missing (a check, which writes\n"
    "                      nothing, scrubs what it is given)\n"
    "  -j, --json          print the result (counts and mismatch_list) as JSON\n"
    "  -P, --progress      draw a progress bar on stderr even when it is no terminal\n"
    "      --no-progress   no progress output (default: a bar on a terminal, else a log line\n"
    "                      per 10 %)\n"
    "  -h, --help          show this help\n";

/* Offline job: report progress (cli_progress) until it ends (polled from 2 ms, doubling to 0.5 s).
 */
static int mgmt_offline_wait(const char *cmd, struct rk_dev *raid)
{
    struct rk_raid_progress p;
    struct cli_progress prog;
    cli_progress_init(&prog, cmd, mgmt_progress);
    useconds_t us = 2000;
    for (;;) {
        rk_raid_progress(raid, &p);
        if (p.state != RK_JOB_RUNNING)
            break;
        cli_progress_update(&prog, p.pos, p.end, p.rate, p.eta);
        mgmt_backoff(&us, 500000);
    }
    int r = rk_raid_job_wait(raid);
    rk_raid_progress(raid, &p);
    cli_progress_end(&prog);
    if (!mgmt_json || r)
        fprintf(stderr, "raidkit %s: %5.1f%% done%s%s\n", cmd,
                p.end ? 100.0 * (double)p.pos / (double)p.end : 100.0, r ? ": " : "",
                r ? strerror(-r) : "");
    return r;
}

static int mgmt_open(const char *cmd, int argc, char **argv, bool ro, bool degraded,
                     struct rk_volume **vol)
{
    struct rk_open_opts oo = {.degraded = degraded, .read_only = ro};
    char err[512] = "";
    int r = rk_volume_open((const char *const *)argv, argc, &oo, vol, err, sizeof(err));
    char hint[4200];
    if (r)
        fprintf(stderr, "raidkit %s: %s%s\n", cmd, err[0] ? err : strerror(-r),
                cli_busy_hint((const char *const *)argv, argc, hint, sizeof(hint)));
    return r;
}

/* Offline replace/re-add: every check of the command over a read-only assembly
 * (rk_volume_precheck) before the writable open, so a refusal writes nothing. 0, or
 * CLI_EXIT_FAIL after one line. */
static int mgmt_precheck(const char *cmd, int n, char **paths, enum rk_precheck_op op, int64_t slot,
                         const char *member, bool force)
{
    struct rk_precheck pc = {.op = op, .slot = (uint32_t)slot, .member = member, .force = force};
    char err[600] = "";
    /* The writable open after it logs the same warnings (a stale member, "started degraded"):
     * once is enough. A refusal is its own one line. */
    enum rk_log_level lvl = rk_log_get_level();
    rk_log_set_level(lvl < RK_LOG_ERROR ? lvl : RK_LOG_ERROR);
    int r = rk_volume_precheck((const char *const *)paths, n, &pc, err, sizeof(err));
    rk_log_set_level(lvl);
    if (r)
        fprintf(stderr, "raidkit %s: %s\n", cmd, err[0] ? err : strerror(-r));
    return r ? CLI_EXIT_FAIL : 0;
}

/* A resync the writable open started (a dirty array) runs first: replace and re-add refuse
 * to start beside a running job. */
static void mgmt_resync_first(struct rk_volume *vol)
{
    struct rk_dev *raid = rk_volume_raid(vol);
    struct rk_raid_progress pr;
    if (rk_raid_progress(raid, &pr) == 0 && pr.kind == RK_JOB_RESYNC && pr.state == RK_JOB_RUNNING)
        rk_raid_job_wait(raid);
}

/* Print obj (consumed) with "slot", "with" and "result" added, as replace --json's result. */
static int mgmt_print_result(cJSON *obj, int64_t slot, const char *with, const char *result)
{
    cJSON_AddNumberToObject(obj, "slot", (double)slot);
    cJSON_AddStringToObject(obj, "with", with);
    cJSON_AddStringToObject(obj, "result", result);
    return cli_print_json(obj);
}

int cli_replace(int argc, char **argv)
{
    struct mgmt_opts o;
    int r = mgmt_parse("replace", replace_usage, argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    int n = argc - optind;
    if (o.slot < 0 || !o.with || (!o.control && n <= 0) || (o.control && n > 0)) {
        fprintf(stderr, "raidkit replace: needs --slot N, --with NEWMEMBER and either --control "
                        "PATH or the MEMBER files (see raidkit replace --help)\n");
        return CLI_EXIT_USAGE;
    }
    if (o.control && o.degraded) {
        fprintf(stderr, "raidkit replace: --degraded applies offline only (MEMBER files)\n");
        return CLI_EXIT_USAGE;
    }
    char abs[PATH_MAX];
    if (rk_member_is_uri(o.with)) /* a remote member's URI is used as given */
        snprintf(abs, sizeof(abs), "%s", o.with);
    else if (!realpath(o.with, abs)) {
        fprintf(stderr, "raidkit replace: new member %s: %s\n", o.with, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (o.control) {
        cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "cmd", "replace");
        cJSON_AddNumberToObject(req, "slot", (double)o.slot);
        cJSON_AddStringToObject(req, "with", abs);
        cJSON_AddNumberToObject(req, "rate", (double)o.rate);
        if (o.force)
            cJSON_AddBoolToObject(req, "force", true);
        cJSON *reply = mgmt_call("replace", o.control, req);
        int rc = reply ? mgmt_check("replace", reply) : CLI_EXIT_FAIL;
        if (rc || (o.json && !o.wait)) {
            if (!rc)
                return mgmt_print_result(reply, o.slot, abs, "rebuilding");
            cJSON_Delete(reply);
            return rc;
        }
        cJSON_Delete(reply);
        if (!o.wait) {
            if (!o.json)
                printf("slot %" PRId64 ": rebuilding onto %s\n", o.slot, abs);
            return CLI_EXIT_OK;
        }
        /* --wait: the last line says how it ended (stdout after the job's stderr lines). */
        int wr = mgmt_wait_job("replace", o.control);
        if (!wr && !o.json)
            printf("slot %" PRId64 ": rebuilt onto %s\n", o.slot, abs);
        return wr;
    }
    struct rk_volume *vol = NULL;
    bool degraded;
    uint64_t need;
    /* Members a running server holds: refused first (else the open would take the others,
     * perhaps a stale one, as the array). */
    if (cli_refuse_busy("replace", (const char *const *)argv + optind, n) ||
        cli_refuse_busy("replace", (const char *const[]){abs}, 1) ||
        mgmt_offline_check("replace", n, argv + optind, o.slot, o.degraded, true, &degraded,
                           &need) ||
        mgmt_new_member_check(abs, need) ||
        mgmt_precheck("replace", n, argv + optind, RK_PRECHECK_REPLACE, o.slot, abs, o.force) ||
        mgmt_open("replace", n, argv + optind, false, degraded, &vol))
        return CLI_EXIT_FAIL;
    char err[600] = "";
    mgmt_resync_first(vol);
    r = rk_volume_replace_with(vol, (uint32_t)o.slot, abs, o.rate, o.force ? RK_REPLACE_FORCE : 0,
                               err, sizeof(err));
    if (r) {
        fprintf(stderr, "raidkit replace: %s\n", err[0] ? err : strerror(-r));
        rk_volume_close(vol);
        return CLI_EXIT_FAIL;
    }
    r = mgmt_offline_wait("replace", rk_volume_raid(vol));
    int rc = rk_volume_close(vol);
    if (r || rc) {
        fprintf(stderr, "raidkit replace: %s\n", strerror(-(r ? r : rc)));
        return CLI_EXIT_FAIL;
    }
    if (o.json)
        return mgmt_print_result(cJSON_CreateObject(), o.slot, abs, "rebuilt");
    printf("slot %" PRId64 ": rebuilt onto %s\n", o.slot, abs);
    return CLI_EXIT_OK;
}

int cli_scrub(int argc, char **argv)
{
    struct mgmt_opts o;
    int r = mgmt_parse("scrub", scrub_usage, argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    int n = argc - optind;
    if ((!o.control && n <= 0) || (o.control && n > 0)) {
        fprintf(stderr, "raidkit scrub: needs either --control PATH or the MEMBER files (see "
                        "raidkit scrub --help)\n");
        return CLI_EXIT_USAGE;
    }
    if (o.control && o.degraded) {
        fprintf(stderr, "raidkit scrub: --degraded applies offline only (MEMBER files)\n");
        return CLI_EXIT_USAGE;
    }
    if (o.control) {
        /* A resync (after a crash, or the initial sync) runs first: its regions are not in
         * sync yet, so a scrub waits for it rather than report them. */
        if (mgmt_resync_running(o.control) && mgmt_wait_job("scrub", o.control))
            return CLI_EXIT_FAIL;
        cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "cmd", "scrub");
        cJSON_AddBoolToObject(req, "repair", o.repair);
        cJSON_AddNumberToObject(req, "rate", (double)o.rate);
        cJSON *reply = mgmt_call("scrub", o.control, req);
        int rc = reply ? mgmt_check("scrub", reply) : CLI_EXIT_FAIL;
        cJSON_Delete(reply);
        if (rc)
            return rc;
        return o.no_wait ? CLI_EXIT_OK : mgmt_wait_job("scrub", o.control);
    }
    struct rk_volume *vol = NULL;
    bool degraded;
    if (cli_refuse_busy("scrub", (const char *const *)argv + optind, n) ||
        mgmt_offline_check("scrub", n, argv + optind, -1, o.degraded, o.repair, &degraded, NULL) ||
        mgmt_open("scrub", n, argv + optind, !o.repair, degraded, &vol))
        return CLI_EXIT_FAIL;
    struct rk_dev *raid = rk_volume_raid(vol);
    mgmt_resync_first(vol); /* the resync this writable open started comes first */
    r = rk_raid_scrub_start(raid, o.repair, o.rate);
    if (!r)
        r = mgmt_offline_wait("scrub", raid);
    struct rk_raid_progress p;
    rk_raid_progress(raid, &p);
    struct rk_raid_mismatch mm[RK_RAID_MISMATCH_MAX];
    int nmm = rk_raid_scrub_mismatches(raid, true, mm, RK_RAID_MISMATCH_MAX);
    /* --json: the same last_scrub object the control socket's status gives */
    cJSON *st = o.json && !r ? rk_control_status_tree(vol) : NULL;
    cJSON *ls = st ? cJSON_DetachItemFromObject(st, "last_scrub") : NULL;
    cJSON_Delete(st);
    int rc = rk_volume_close(vol);
    if (r || rc || (o.json && !cJSON_IsObject(ls))) {
        fprintf(stderr, "raidkit scrub: %s\n", strerror(r || rc ? -(r ? r : rc) : ENOMEM));
        cJSON_Delete(ls);
        return CLI_EXIT_FAIL;
    }
    if (o.json)
        return cli_print_json(ls);
    printf("scrub finished: %" PRIu64 " mismatches, %" PRIu64 " repaired, %" PRIu64
           " read errors%s\n",
           p.last_mismatches, p.last_repaired, p.last_errors,
           p.last_uncompared ? MGMT_SCRUB_UNCOMPARED : "");
    for (int i = 0; i < nmm && i < RK_RAID_MISMATCH_MAX; i++)
        mgmt_print_mismatch(mm[i].slot, (double)mm[i].member_off, (double)mm[i].len,
                            mm[i].array_off == RK_RAID_NO_ARRAY_OFF ? -1 : (double)mm[i].array_off,
                            rk_raid_mismatch_kind_name(mm[i].kind), rk_raid_fix_name(mm[i].fixed),
                            rk_raid_mismatch_parity_name(mm[i].parity), mm[i].q_slot);
    return CLI_EXIT_OK;
}

int cli_readd(int argc, char **argv)
{
    struct mgmt_opts o;
    int r = mgmt_parse("re-add", readd_usage, argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    int n = argc - optind - 1;
    if (o.slot < 0 || n < 0 || o.with || (!o.control && n == 0) || (o.control && n > 0)) {
        fprintf(stderr, "raidkit re-add: needs --slot N, the MEMBER and either --control PATH or "
                        "the array's other members (see raidkit re-add --help)\n");
        return CLI_EXIT_USAGE;
    }
    if (o.control && o.degraded) {
        fprintf(stderr, "raidkit re-add: --degraded applies offline only (ARRAYMEMBER files)\n");
        return CLI_EXIT_USAGE;
    }
    char abs[PATH_MAX], err[600] = "", note[300] = "";
    if (rk_member_is_uri(argv[optind]))
        snprintf(abs, sizeof(abs), "%s", argv[optind]);
    else if (!realpath(argv[optind], abs)) {
        fprintf(stderr, "raidkit re-add: member %s: %s\n", argv[optind], strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (o.control) {
        cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "cmd", "re-add");
        cJSON_AddNumberToObject(req, "slot", (double)o.slot);
        cJSON_AddStringToObject(req, "member", abs);
        cJSON_AddNumberToObject(req, "rate", (double)o.rate);
        cJSON *reply = mgmt_call("re-add", o.control, req);
        int rc = reply ? mgmt_check("re-add", reply) : CLI_EXIT_FAIL;
        if (!rc && o.json && !o.wait) {
            cJSON_AddNumberToObject(reply, "slot", (double)o.slot);
            cJSON_AddStringToObject(reply, "member", abs);
            return cli_print_json(reply);
        }
        if (!rc)
            (o.json ? fprintf(stderr, "raidkit re-add: %s\n", mgmt_str(reply, "message"))
                    : printf("%s\n", mgmt_str(reply, "message")));
        fflush(stdout); /* the first line, before --wait's progress on stderr */
        cJSON_Delete(reply);
        if (rc)
            return rc;
        return o.wait ? mgmt_wait_job("re-add", o.control) : CLI_EXIT_OK;
    }
    struct rk_volume *vol = NULL;
    bool degraded;
    if (cli_refuse_busy("re-add", (const char *const *)argv + optind, n + 1) ||
        mgmt_offline_check("re-add", n, argv + optind + 1, o.slot, o.degraded, true, &degraded,
                           NULL) ||
        mgmt_readd_member_check(abs, n, argv + optind + 1, o.slot) ||
        mgmt_precheck("re-add", n, argv + optind + 1, RK_PRECHECK_READD, o.slot, abs, false) ||
        mgmt_open("re-add", n, argv + optind + 1, false, degraded, &vol))
        return CLI_EXIT_FAIL;
    mgmt_resync_first(vol);
    r = rk_volume_readd(vol, (uint32_t)o.slot, abs, o.rate, note, sizeof(note), err, sizeof(err));
    if (r) {
        fprintf(stderr, "raidkit re-add: %s\n", err[0] ? err : strerror(-r));
        rk_volume_close(vol);
        return CLI_EXIT_FAIL;
    }
    if (!o.json)
        printf("%s\n", note);
    r = mgmt_offline_wait("re-add", rk_volume_raid(vol));
    struct rk_raid_progress p;
    rk_raid_progress(rk_volume_raid(vol), &p);
    int rc = rk_volume_close(vol);
    if (r || rc) {
        fprintf(stderr, "raidkit re-add: %s\n", strerror(-(r ? r : rc)));
        return CLI_EXIT_FAIL;
    }
    if (o.json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "message", note);
        cJSON_AddNumberToObject(j, "resynced_bytes", (double)p.resynced);
        cJSON_AddStringToObject(j, "member", abs);
        cJSON_AddNumberToObject(j, "slot", (double)o.slot);
        cJSON_AddStringToObject(j, "result", "re-added");
        return cli_print_json(j);
    }
    printf("slot %" PRId64 ": re-added %s, %" PRIu64 " bytes resynced\n", o.slot, abs, p.resynced);
    return CLI_EXIT_OK;
}
