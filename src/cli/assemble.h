/* Finding the members of a configured array by their superblocks (cmd_assemble.c), shared by
 * `assemble --scan` and `serve NAME`. */
#ifndef RK_CLI_ASSEMBLE_H
#define RK_CLI_ASSEMBLE_H

#include <cjson/cJSON.h>

#include "cli/config.h"
#include "raidkit/device.h"

/* What a scan found for one array. */
struct asm_result {
    char *members[RK_MAX_MEMBERS]; /* canonical paths of its members, in the order found */
    int n;
    cJSON *skipped;   /* [{path, reason}]: another array's members, non-members, missing paths */
    cJSON *info;      /* rk_volume_info JSON of the members, NULL when none */
    int state;        /* --test code of cli/report.h: 0, 3, 4 or 5 (no member: 5) */
    const cJSON *dup; /* in info: a file claiming a slot another file holds with the same event
                         (a copy), NULL when none; the state is then 5 */
};

/* Expand a's member globs (or c's [scan] globs), read every file's superblock and keep those of
 * array a (by uuid, else by the superblock name). 0, or -ENOMEM; asm_free res either way. */
int asm_find(const struct rk_conf *c, const struct rk_conf_array *a, struct asm_result *res);
void asm_free(struct asm_result *res);

/* The same file listed twice among a's plain paths (words without glob characters; overlapping
 * globs are looked at once, not an error): the same word, or two paths of one inode. Prints
 * "raidkit CMD: FILE: array NAME: members A and B are the same file" and returns CLI_EXIT_USAGE;
 * else 0. */
int asm_check_duplicates(const char *cmd, const struct rk_conf *c, const struct rk_conf_array *a);

/* serve NAME: load config (NULL: the default file) into *conf, find array name (*a) and its
 * members (res; every skipped file logged as a warning). CLI_EXIT_OK, CLI_EXIT_USAGE (a file
 * that cannot be read or parsed, no such array, a file listed twice), or CLI_EXIT_FAIL (no
 * member found) after a message. rk_conf_free(conf) and
 * asm_free(res) either way. */
int asm_for_serve(const char *config, const char *name, struct rk_conf *conf,
                  const struct rk_conf_array **a, struct asm_result *res);

/* "healthy", "degraded", "recovering" or "failed" for a state code. */
const char *asm_state_name(int state);

#endif
