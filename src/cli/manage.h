/* Helpers of the management commands (cmd_manage.c: status, fail; cmd_manage_jobs.c: replace,
 * re-add, scrub; manage_ctl.c: the control-socket client) kept apart from them: which options each
 * command takes, the --test state of a status document (manage_report.c), and how a status
 * document is printed (manage_print.c). */
#ifndef RK_CLI_MANAGE_H
#define RK_CLI_MANAGE_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include <sys/types.h>

#include "cli/report.h"
#include "raidkit/raid.h"

/* Output choices of the running command (one command per process, set by mgmt_parse or
 * mgmt_set_json): --json, and how a job reports progress (--progress / --no-progress). */
extern bool mgmt_json;
extern enum cli_progress_mode mgmt_progress;

/* The options of the management commands (mgmt_parse). */
struct mgmt_opts {
    const char *control, *with;
    int64_t slot;
    uint64_t rate;
    bool json, wait, repair, no_wait, test, degraded, force;
};

/* Parse argv of management command cmd (status, fail, replace, re-add, scrub) into *o, refusing
 * options cmd does not take (mgmt_applies_to). 0 (optind at the first operand), -1 after
 * printing usage for --help, or CLI_EXIT_USAGE after a one-line message. */
int mgmt_parse(const char *cmd, const char *usage, int argc, char **argv, struct mgmt_opts *o);

/* The status document of the server at control socket path: *reply gets the reply (the
 * caller frees it, also on failure), the result points into it ("status"), NULL after a
 * message prefixed by cmd. */
cJSON *mgmt_status(const char *cmd, const char *path, cJSON **reply);
/* True when the served volume at path runs a resync now. */
bool mgmt_resync_running(const char *path);
/* Adaptive poll: sleep *us microseconds, then double it up to max_us. */
void mgmt_backoff(useconds_t *us, useconds_t max_us);
/* Poll the server at path until its job is no longer running (progress per mgmt_progress),
 * print the final job line on stderr (--json: the job, or a scrub's last_scrub, on stdout).
 * CLI_EXIT_OK, or CLI_EXIT_FAIL when the job failed or the server could not be asked. */
int mgmt_wait_job(const char *cmd, const char *path);

/* 0 when option c (its long name lname, NULL when given as a short option) applies to command
 * cmd (status, fail, replace, scrub; any other command takes every option), else
 * CLI_EXIT_USAGE after the message "raidkit CMD: option '--X' does not apply to CMD". */
int mgmt_applies_to(const char *cmd, int c, const char *lname);

/* The --test exit code of a status document (cli/report.h): unreadable ranges or a failed
 * rebuild CLI_EXIT_BROKEN, a running rebuild/resync or "needs resync" (mgmt_needs_resync)
 * CLI_EXIT_RECOVERING, degraded CLI_EXIT_DEGRADED, else CLI_EXIT_OK. */
int mgmt_state(const cJSON *st);

/* Does the status document say "needs resync": regions a resync has not reached yet
 * (bitmap.unsynced > 0), e.g. a read-only start of a dirty array, where no resync runs, or a
 * resync that stopped? Such regions may differ between copies (reads take the first in-sync
 * copy) or hold stale parity. */
bool mgmt_needs_resync(const cJSON *st);

/* Member key of JSON object o as a number (0 when absent) or a string ("" when absent). */
double mgmt_num(const cJSON *o, const char *key);
const char *mgmt_str(const cJSON *o, const char *key);
/* One line (at most len bytes into out) describing a job object of the status document. */
void mgmt_job_line(const cJSON *job, char *out, size_t len);
/* The text of `raidkit status` for status document st, on stdout. */
void mgmt_print_status(const cJSON *st);
/* One scrub mismatch location on stdout (aoff < 0: the place holds parity, no array data);
 * slot, member offset moff, length len and aoff in bytes; kind and fixed name what was found;
 * parity "P", "Q" (the parity slot holds) or "P+Q" (slot holds P, q_slot Q), NULL for data. */
void mgmt_print_mismatch(double slot, double moff, double len, double aoff, const char *kind,
                         const char *fixed, const char *parity, double q_slot);
/* One line per mismatch of st's last_scrub.mismatch_list, on stdout. */
void mgmt_print_mismatch_list(const cJSON *st);

/* The end of a scrub's result line when it had nothing to compare against (nothing_compared). */
#define MGMT_SCRUB_UNCOMPARED " (nothing compared: no redundancy left)"

/*
 * Offline replace/re-add/scrub (manage_offline.c), before the open that writes superblocks
 * (docs/CLI.md "replace", "re-add", "scrub"): read the n member paths' superblocks read-only.
 * A slot recorded active whose member is not given is missing; only `own` (the slot the command
 * acts on; -1 none) may be missing without --degraded (allow), as for serve, when the open is
 * writable. An `own` slot that is active with its member given, or out of range, is refused.
 * *degraded: open degraded; *need (may be NULL): bytes a member of slot `own` needs (data
 * offset + data size; 0 unknown). 0, or CLI_EXIT_FAIL after a one-line message on stderr.
 */
int mgmt_offline_check(const char *cmd, int n, char **paths, int64_t own, bool allow, bool writable,
                       bool *degraded, uint64_t *need);
/* replace offline: the new member path (local; URIs pass) opens read-write and holds at least
 * need bytes (0: not checked). 0 or CLI_EXIT_FAIL after a message. */
int mgmt_new_member_check(const char *path, uint64_t need);
/* re-add offline: MEMBER path holds this array's superblock (read with the n array members) for
 * slot. 0 or CLI_EXIT_FAIL after a message naming what it holds instead. */
int mgmt_readd_member_check(const char *path, int n, char **paths, int64_t slot);

#endif
