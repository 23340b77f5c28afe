/* Member paths on the command line (members.c): the same file given twice, and the files a
 * refused `create` made itself. */
#ifndef RK_CLI_MEMBERS_H
#define RK_CLI_MEMBERS_H

#include <stdbool.h>

#include "raidkit/device.h"

/*
 * The same member given twice among the n paths: the same string, or two paths (a symlink, a
 * hard link, ./x and x) of one file or device (same st_dev and st_ino). URIs (nbd://, rbd:)
 * compare as strings only. On a duplicate prints "raidkit CMD: member A and B are the same
 * file (given twice)" and returns CLI_EXIT_USAGE (a usage error: docs/CLI.md "Exit status");
 * else 0. Paths that cannot be stat'ed are compared as strings (the open names the problem).
 */
int cli_check_duplicates(const char *cmd, const char *const *paths, int n);

/* Which of the n paths do not exist yet (lstat ENOENT, not URIs): set in absent[i]. */
void cli_note_absent(const char *const *paths, int n, bool absent[RK_MAX_MEMBERS]);

/* After a refused `create`: remove the paths that were absent before it ran and are now regular
 * files (made by this run: `create --size` creates them), never anything that existed before.
 * Returns how many were removed. */
int cli_remove_created(const char *const *paths, int n, const bool absent[RK_MAX_MEMBERS]);

/* Before an offline command touches members a running server may hold: when another process
 * holds the lock of one of the n paths (cli_lock_holder), print "raidkit CMD: PATH is in use by
 * pid N (COMM): a running server holds it; stop it first (online: --control)" and return
 * CLI_EXIT_FAIL; else 0. */
int cli_refuse_busy(const char *cmd, const char *const *paths, int n);

#endif
