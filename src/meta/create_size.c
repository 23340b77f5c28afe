/* `create`: the size of each member the new array uses (--size) and the warnings about space it
 * leaves unused (create_size.h). */
#include "meta/create_size.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "raidkit/raid.h"

/* Members named in one warning before ", and N more". */
#define CREATE_SIZE_NAMES 4

int create_size_pick(const char *path, bool growable, uint64_t cur, uint64_t want, uint64_t *size,
                     char *err, size_t errlen)
{
    if (want && !growable && cur < want) {
        char a[32], b[32];
        rk_set_err(err, errlen,
                   "member %s has %" PRIu64 " bytes (%s), less than --size %s, and a device or "
                   "remote export cannot be extended: give a smaller --size, or none to use "
                   "each member whole",
                   path, cur, rk_format_size(cur, a, sizeof(a)),
                   rk_format_size(want, b, sizeof(b)));
        return -ENOSPC;
    }
    *size = want ? want : cur;
    return 0;
}

/* SIZE as `create --size` takes it back: the largest unit that divides it. */
static void create_size_arg(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (u < 3 && v && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%" PRIu64, v);
    else
        snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
}

/* Append "PATH (SIZE)" of member i to list (", " between, at most CREATE_SIZE_NAMES names). */
static void create_size_name(char *list, size_t len, int *named, const char *path, uint64_t bytes)
{
    char s[32];
    size_t at = strlen(list);
    if ((*named)++ < CREATE_SIZE_NAMES && at < len)
        snprintf(list + at, len - at, "%s%s (%s)", at ? ", " : "", path,
                 rk_format_size(bytes, s, sizeof(s)));
}

/* ", and N more" when more than CREATE_SIZE_NAMES were counted. */
static void create_size_more(char *list, size_t len, int named)
{
    size_t at = strlen(list);
    if (named > CREATE_SIZE_NAMES && at < len)
        snprintf(list + at, len - at, ", and %d more", named - CREATE_SIZE_NAMES);
}

void create_size_report(const char *const *paths, int n, const uint64_t *cur,
                        const struct rk_sb *sb, uint64_t want)
{
    char list[512] = "", a[32], b[32], c[32];
    int named = 0;
    uint64_t beyond = 0;
    for (int i = 0; want && i < n; i++)
        if (cur[i] > want) {
            create_size_name(list, sizeof(list), &named, paths[i], cur[i]);
            beyond += cur[i] - want;
        }
    if (named) {
        create_size_more(list, sizeof(list), named);
        rk_warn("--size %s: only the first %s of each member is used; larger members: %s; "
                "%s of them stay unused (give no --size to use every member whole)",
                rk_format_size(want, a, sizeof(a)), rk_format_size(want, b, sizeof(b)), list,
                rk_format_size(beyond, c, sizeof(c)));
    }
    /* linear and raid0 (md-style zones) use every member whole. */
    if (sb->level == RK_LEVEL_LINEAR || sb->level == RK_LEVEL_RAID0 || n < 2)
        return;
    int small = 0;
    for (int i = 1; i < n; i++)
        if (sb->slots[i].data_size < sb->slots[small].data_size)
            small = i;
    uint64_t min = sb->slots[small].data_size, max = min, unused = 0;
    for (int i = 0; i < n; i++)
        max = sb->slots[i].data_size > max ? sb->slots[i].data_size : max;
    if (max <= min + min / 100)
        return;
    list[0] = '\0';
    named = 0;
    for (int i = 0; i < n; i++)
        if (sb->slots[i].data_size > min) {
            create_size_name(list, sizeof(list), &named, paths[i], sb->slots[i].data_size - min);
            unused += sb->slots[i].data_size - min;
        }
    create_size_more(list, sizeof(list), named);
    char arg[32];
    create_size_arg(sb->data_offset + min, arg, sizeof(arg));
    rk_warn("members differ in size by more than 1%%: %s uses %s of every member's data area, "
            "as much as the smallest (%s) has; the larger ones leave %s unused: %s. Use members "
            "of one size, or say so with --size %s",
            rk_level_name((int)sb->level), rk_format_size(min, a, sizeof(a)), paths[small],
            rk_format_size(unused, b, sizeof(b)), list, arg);
}
