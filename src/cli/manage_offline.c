/* Offline replace, re-add and scrub: the checks that run on the members' superblocks (read
 * only) before the writable open, so a refused command writes nothing (manage.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/manage.h"
#include "meta/meta_int.h"
#include "raidkit/member_nbd.h"
#include "raidkit/volume.h"

/* Offline, before the open that writes the superblocks: what the n members' superblocks say
 * (read-only, rk_volume_info; nothing written). Slots recorded active whose member is not among
 * the paths are missing: only `own` (the slot re-add or replace acts on, -1 for none) may be
 * missing without --degraded (`allow`), exactly as for serve; a writable open with another slot
 * missing is refused naming them. replace/re-add of an `own` slot that is active with its member
 * given is refused too, and an `own` slot out of range. *degraded: how to open; *need (NULL:
 * not wanted): the bytes a member of slot `own` must hold (data offset + its data size), 0 when
 * unknown. 0, or CLI_EXIT_FAIL after a one-line message. */
int mgmt_offline_check(const char *cmd, int n, char **paths, int64_t own, bool allow, bool writable,
                       bool *degraded, uint64_t *need)
{
    char err[512] = "", miss[200] = "";
    char *t = rk_volume_info((const char *const *)paths, n, true, err, sizeof(err));
    cJSON *d = t ? cJSON_Parse(t) : NULL;
    free(t);
    const cJSON *a = d ? cJSON_GetObjectItem(d, "array") : NULL, *s;
    *degraded = allow || !writable;
    int nmiss = 0, rc = 0;
    size_t len = 0;
    if (need)
        *need = 0;
    int members = cJSON_IsObject(a) ? (int)mgmt_num(a, "members") : 0;
    if (own >= 0 && members > 0 && own >= members) {
        fprintf(stderr, "raidkit %s: slot %" PRId64 " out of range: the array has slots 0..%d\n",
                cmd, own, members - 1);
        cJSON_Delete(d);
        return CLI_EXIT_FAIL;
    }
    const cJSON *slots = cJSON_IsObject(a) ? cJSON_GetObjectItem(a, "slots") : NULL;
    cJSON_ArrayForEach(s, slots)
    {
        int slot = (int)mgmt_num(s, "slot");
        bool given = cJSON_IsString(cJSON_GetObjectItem(s, "path"));
        if (slot == own && need)
            *need = (uint64_t)mgmt_num(a, "data_offset") + (uint64_t)mgmt_num(s, "data_size");
        if (strcmp(mgmt_str(s, "state"), "active"))
            continue;
        if (slot == own && given) {
            fprintf(stderr,
                    "raidkit %s: slot %d is active: nothing to %s (its member %s is given); "
                    "offline, leave its member out; online, `raidkit fail --slot %d` first\n",
                    cmd, slot, cmd, mgmt_str(s, "path"), slot);
            rc = CLI_EXIT_FAIL;
            break;
        }
        if (given)
            continue;
        if (slot == own) {
            *degraded = true; /* the slot this command fills */
            continue;
        }
        if (len < sizeof(miss))
            len +=
                (size_t)snprintf(miss + len, sizeof(miss) - len, "%s%d", nmiss ? ", " : "", slot);
        nmiss++;
    }
    if (!rc && nmiss && !allow && writable) {
        fprintf(stderr,
                "raidkit %s: slot%s %s %s active but not given (missing); give %s member%s, or "
                "--degraded to run without %s\n",
                cmd, nmiss > 1 ? "s" : "", miss, nmiss > 1 ? "are" : "is",
                nmiss > 1 ? "their" : "its", nmiss > 1 ? "s" : "", nmiss > 1 ? "them" : "it");
        rc = CLI_EXIT_FAIL;
    }
    if (nmiss)
        *degraded = true;
    cJSON_Delete(d);
    return rc;
}

/* replace offline, before anything is written: the new member at path (a local file or device)
 * must be writable and hold at least need bytes (0: unknown, not checked). 0, or CLI_EXIT_FAIL
 * after a one-line message. The library repeats every check (rk_volume_replace). */
int mgmt_new_member_check(const char *path, uint64_t need)
{
    if (rk_member_is_uri(path))
        return 0;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat st;
    uint64_t size = 0;
    if (fd < 0 || fstat(fd, &st)) {
        fprintf(stderr, "raidkit replace: new member %s: cannot open for writing: %s\n", path,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        return CLI_EXIT_FAIL;
    }
    if (S_ISBLK(st.st_mode))
        (void)ioctl(fd, BLKGETSIZE64, &size);
    else
        size = (uint64_t)st.st_size;
    close(fd);
    if (need && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) && size < need) {
        fprintf(stderr,
                "raidkit replace: new member %s: %" PRIu64 " bytes, the slot needs %" PRIu64
                " (data offset + data size)\n",
                path, size, need);
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* re-add offline, before anything is written: MEMBER (path, local) must hold this array's
 * superblock for slot: read with the n array members (rk_volume_info, read-only), it must be
 * this array's (status stale or ok) and claim slot. 0, or CLI_EXIT_FAIL after one line naming
 * what it is. The library repeats every check (rk_volume_readd). */
int mgmt_readd_member_check(const char *path, int n, char **paths, int64_t slot)
{
    if (rk_member_is_uri(path) || n >= RK_MAX_MEMBERS)
        return 0;
    const char *all[RK_MAX_MEMBERS];
    for (int i = 0; i < n; i++)
        all[i] = paths[i];
    all[n] = path;
    char err[512] = "";
    char *t = rk_volume_info(all, n + 1, true, err, sizeof(err));
    cJSON *d = t ? cJSON_Parse(t) : NULL;
    free(t);
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "members"), n);
    const char *st = mgmt_str(m, "status");
    int rc = 0;
    if (m && strcmp(st, "stale") && strcmp(st, "ok") && strcmp(st, "foreign")) {
        char why[400];
        fprintf(stderr, "raidkit re-add: %s: %s\n", path,
                meta_reason_show(why, sizeof(why), st, mgmt_str(m, "reason")));
        rc = CLI_EXIT_FAIL;
    } else if (m && (int64_t)mgmt_num(m, "slot") != slot) {
        fprintf(stderr,
                "raidkit re-add: %s is the old member of slot %.0f, not of slot %" PRId64 "\n",
                path, mgmt_num(m, "slot"), slot);
        rc = CLI_EXIT_FAIL;
    }
    cJSON_Delete(d);
    return rc;
}
