/* `create`: how much of each member the new array uses (--size), and the warnings about space a
 * member gives but the array leaves unused (docs/CLI.md "create", "Member sizes"). */
#ifndef RAIDKIT_META_CREATE_SIZE_H
#define RAIDKIT_META_CREATE_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta/superblock.h"

/*
 * The bytes of one member the array uses (metadata area + data area), into *size: without
 * --size (want 0) all cur bytes; with it exactly want bytes — a file that can grow (growable)
 * is extended to it when shorter, and of anything longer only the first want bytes are used.
 * A device or remote export shorter than want cannot grow: -ENOSPC with err naming it.
 */
int create_size_pick(const char *path, bool growable, uint64_t cur, uint64_t want, uint64_t *size,
                     char *err, size_t errlen);

/*
 * Once the array is written: warn about the space it leaves unused. With --size (want), names
 * the members larger than want, of which only want bytes are used. Levels that use the same
 * data size on every member (raid1, raid10, raid5, raid6: all but linear and raid0) warn when
 * the members' data areas differ by more than 1 % (as mdadm), with the size used of each, the
 * bytes the larger members leave unused, and what to do about it. cur[i]: member i's size.
 */
void create_size_report(const char *const *paths, int n, const uint64_t *cur,
                        const struct rk_sb *sb, uint64_t want);

#endif
