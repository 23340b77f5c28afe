/* Member paths on the command line: duplicates, and cleaning up after a refused create
 * (members.h). */
#include "cli/members.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/report.h"
#include "raidkit/member_nbd.h"

int cli_check_duplicates(const char *cmd, const char *const *paths, int n)
{
    struct stat st[RK_MAX_MEMBERS];
    bool ok[RK_MAX_MEMBERS];
    if (n > RK_MAX_MEMBERS)
        n = RK_MAX_MEMBERS; /* the member count is refused elsewhere */
    for (int i = 0; i < n; i++)
        ok[i] = !rk_member_is_uri(paths[i]) && stat(paths[i], &st[i]) == 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            bool same = ok[i] && ok[j]
                            ? st[i].st_dev == st[j].st_dev && st[i].st_ino == st[j].st_ino
                            : !strcmp(paths[i], paths[j]);
            if (!same)
                continue;
            if (!strcmp(paths[i], paths[j]))
                fprintf(stderr, "raidkit %s: member %s given twice\n", cmd, paths[i]);
            else
                fprintf(stderr, "raidkit %s: members %s and %s are the same file (given twice)\n",
                        cmd, paths[j], paths[i]);
            return CLI_EXIT_USAGE;
        }
    return 0;
}

void cli_note_absent(const char *const *paths, int n, bool absent[RK_MAX_MEMBERS])
{
    struct stat st;
    for (int i = 0; i < n && i < RK_MAX_MEMBERS; i++)
        absent[i] = !rk_member_is_uri(paths[i]) && lstat(paths[i], &st) < 0 && errno == ENOENT;
}

int cli_remove_created(const char *const *paths, int n, const bool absent[RK_MAX_MEMBERS])
{
    struct stat st;
    int removed = 0;
    for (int i = 0; i < n && i < RK_MAX_MEMBERS; i++)
        if (absent[i] && lstat(paths[i], &st) == 0 && S_ISREG(st.st_mode) && !unlink(paths[i]))
            removed++;
    return removed;
}

int cli_refuse_busy(const char *cmd, const char *const *paths, int n)
{
    for (int i = 0; i < n; i++) {
        char who[128];
        if (!rk_member_is_uri(paths[i]) && cli_lock_holder(paths[i], who, sizeof(who)) == 0) {
            fprintf(stderr,
                    "raidkit %s: %s is in use by %s: a running server holds it; stop it first "
                    "(online: --control)\n",
                    cmd, paths[i], who);
            return CLI_EXIT_FAIL;
        }
    }
    return 0;
}
