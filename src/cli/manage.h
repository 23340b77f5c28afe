/* Helpers of the management commands (cmd_manage.c) kept apart from it: which options each
 * command takes, the --test state of a status document. */
#ifndef RK_CLI_MANAGE_H
#define RK_CLI_MANAGE_H

#include <cjson/cJSON.h>

#include "raidkit/raid.h"

/* 0 when option c (its long name lname, NULL when given as a short option) applies to command
 * cmd (status, fail, replace, scrub; any other command takes every option), else
 * CLI_EXIT_USAGE after the message "raidkit CMD: option '--X' does not apply to CMD". */
int mgmt_applies_to(const char *cmd, int c, const char *lname);

/* The --test exit code of a status document (cli/report.h): unreadable ranges or a failed
 * rebuild CLI_EXIT_BROKEN, a running rebuild/resync CLI_EXIT_RECOVERING, degraded
 * CLI_EXIT_DEGRADED, else CLI_EXIT_OK. */
int mgmt_state(const cJSON *st);

#endif
