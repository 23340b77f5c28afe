/* Online replace: put a new member file into a failed or missing slot, record it in the
 * superblocks and rebuild it in the background (rk_volume_replace). */
#include "meta/volume_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "meta/probe.h"
#include "raidkit/member.h"
#include "raidkit/member_nbd.h"

int vol_same_file(struct rk_volume *v, const char *path)
{
    struct stat a, b;
    if (rk_member_is_uri(path)) { /* a remote member: the same URI string */
        for (uint32_t i = 0; i < v->sb.members; i++)
            if (v->paths[i] && !strcmp(v->paths[i], path))
                return (int)i;
        return -1;
    }
    if (stat(path, &a))
        return -1;
    for (uint32_t i = 0; i < v->sb.members; i++)
        if (v->paths[i] && !stat(v->paths[i], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return (int)i;
    return -1;
}

int vol_check_new_member(struct rk_volume *v, uint32_t slot, const char *path, struct rk_dev *dev,
                         bool force, char *err, size_t errlen)
{
    uint64_t need = v->sb.data_offset + v->sb.slots[slot].data_size;
    char sz[32], nsz[32], ua[RK_UUID_STR_LEN], ub[RK_UUID_STR_LEN];
    if (dev->size < need) {
        rk_set_err(err, errlen,
                   "%s is too small: %s, slot %" PRIu32 " needs %s (%" PRIu64 " bytes)", path,
                   rk_format_size(dev->size, sz, sizeof(sz)), slot,
                   rk_format_size(need, nsz, sizeof(nsz)), need);
        return -ENOSPC;
    }
    struct rk_dev *raid = v->raid;
    if (dev->block_size > raid->block_size) {
        rk_set_err(err, errlen, "%s has block size %" PRIu32 ", larger than the array's %" PRIu32,
                   path, dev->block_size, raid->block_size);
        return -EINVAL;
    }
    struct rk_sb sb;
    char serr[200];
    if (meta_read_sb(dev, &sb, serr, sizeof(serr)) == 0) {
        if (memcmp(sb.array_uuid, v->sb.array_uuid, RK_UUID_LEN) != 0) {
            if (force)
                return 0; /* --force: overwrite the other array's member */
            rk_set_err(err, errlen,
                       "%s holds a raidkit superblock of another array (%s, slot %" PRIu32
                       "); use --force to overwrite it",
                       path, rk_uuid_format(sb.array_uuid, ua), sb.slot);
            return -EEXIST;
        }
        for (uint32_t i = 0; i < v->sb.members; i++) {
            int st = rk_raid_slot_state(raid, i);
            if (!memcmp(sb.member_uuid, v->sb.slots[i].uuid, RK_UUID_LEN) &&
                (st == RK_SLOT_ACTIVE || st == RK_SLOT_REBUILDING)) {
                rk_set_err(err, errlen, "%s is already slot %" PRIu32 " of this array (%s)", path,
                           i, rk_uuid_format(v->sb.array_uuid, ub));
                return -EEXIST;
            }
        }
    }
    return 0;
}

int vol_check_signature(struct rk_volume *v, const char *path, struct rk_dev *dev, bool force,
                        char *err, size_t errlen)
{
    struct rk_sb sb;
    char serr[200];
    if (force || (meta_read_sb(dev, &sb, serr, sizeof(serr)) == 0 &&
                  !memcmp(sb.array_uuid, v->sb.array_uuid, RK_UUID_LEN)))
        return 0; /* this array's own (old) member: its superblock is all it holds for us */
    size_t len = dev->size < RK_PROBE_LEN ? (size_t)dev->size : RK_PROBE_LEN;
    len -= len % (dev->block_size ? dev->block_size : 1);
    uint8_t *buf = rk_buf_alloc(RK_PROBE_LEN);
    if (!buf) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int r = len ? rk_dev_read(dev, buf, len, 0) : 0;
    if (r < 0) {
        rk_set_err(err, errlen, "cannot read %s: %s", path, strerror(-r));
        free(buf);
        return r;
    }
    int fd = rk_member_is_uri(path) ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    const char *sig =
        fd >= 0 ? rk_probe_fd_signature(fd, dev->size, buf, len) : rk_probe_signature(buf, len);
    if (fd >= 0)
        close(fd);
    r = 0;
    if (sig) {
        rk_set_err(err, errlen, "%s already holds %s; use --force to overwrite it", path, sig);
        r = -EEXIST;
    }
    free(buf);
    return r;
}

int vol_replace_refused(struct rk_volume *v, uint32_t slot, const char *path, char *err,
                        size_t errlen)
{
    if (v->read_only) {
        rk_set_err(err, errlen, "the volume is read-only");
        return -EROFS;
    }
    return vol_slot_refused(v, slot, path, err, errlen);
}

int vol_slot_refused(struct rk_volume *v, uint32_t slot, const char *path, char *err, size_t errlen)
{
    if (slot >= v->sb.members) {
        rk_set_err(err, errlen, "slot %" PRIu32 " out of range: the array has slots 0..%" PRIu32,
                   slot, v->sb.members - 1);
        return -EINVAL;
    }
    if (rk_level_max_failed(v->sb.level, v->sb.members) <= 0) {
        rk_set_err(err, errlen, "%s has no redundancy to rebuild a member from",
                   rk_level_name(v->sb.level));
        return -EOPNOTSUPP;
    }
    struct rk_raid_progress p;
    rk_raid_progress(v->raid, &p);
    if (p.state == RK_JOB_RUNNING) {
        if (p.kind == RK_JOB_REBUILD)
            rk_set_err(err, errlen,
                       "a rebuild of slot %" PRIu32 " is running (%.0f%%); one replace at a time",
                       p.slot, p.end ? 100.0 * (double)p.pos / (double)p.end : 0.0);
        else
            rk_set_err(err, errlen, "a scrub is running; replace after it finished");
        return -EBUSY;
    }
    int st = rk_raid_slot_state(v->raid, slot);
    if (st == RK_SLOT_ACTIVE || st == RK_SLOT_REBUILDING) {
        rk_set_err(err, errlen,
                   "slot %" PRIu32 " is %s; only a failed or missing slot can be replaced (fail "
                   "it first: raidkit fail --slot %" PRIu32 ")",
                   slot, rk_slot_state_name(st), slot);
        return -EBUSY;
    }
    int same = vol_same_file(v, path);
    /* The failed member of the slot itself may come back (a re-add of the same file). */
    if (same >= 0 && (uint32_t)same != slot) {
        rk_set_err(err, errlen, "%s is already the member of slot %d", path, same);
        return -EEXIST;
    }
    return 0;
}

void vol_retire_slot(struct rk_volume *v, uint32_t slot)
{
    struct rk_dev *olds[VOL_RETIRED_DEVS] = {v->top[slot], v->emu[slot], v->file[slot]};
    for (int k = 0; k < VOL_RETIRED_DEVS; k++) {
        bool seen = false;
        for (int j = 0; j < k; j++)
            seen |= olds[j] == olds[k];
        /* Devices retired by an earlier replace of this slot had a whole rebuild to drain
         * their I/O. */
        rk_dev_close(v->retired[slot][k]);
        v->retired[slot][k] = seen ? NULL : olds[k];
    }
}

/*
 * Record dev (opened from path; *dup is its strdup) as the rebuilding member of slot: a new
 * member UUID, its own superblock first (without it nothing else changes), then the slot's
 * devices and path and the other superblocks. On success the volume owns dev and *dup (*dup
 * becomes NULL). Returns 0 or -errno with err; nothing changes on error.
 */
static int vol_replace_record(struct rk_volume *v, uint32_t slot, const char *path,
                              struct rk_dev *dev, char **dup, char *err, size_t errlen)
{
    pthread_mutex_lock(&v->lock);
    struct rk_sb_slot old = v->sb.slots[slot];
    int r = meta_random_uuid(v->sb.slots[slot].uuid);
    if (!r) {
        v->sb.slots[slot].state = RK_SLOT_REBUILDING;
        v->sb.slots[slot].rebuild_offset = 0;
        v->sb.events++;
        /* The new member starts clean: the old one's unreadable ranges are not its own (the
         * engine drops them too, in rk_raid_add_member). */
        vol_drop_bad(v, slot);
        struct rk_sb copy = v->sb;
        meta_sb_for_slot(&copy, slot);
        r = meta_write_sb(dev, &copy);
        if (r) {
            v->sb.slots[slot] = old;
            v->sb.events--;
            rk_set_err(err, errlen, "cannot write the superblock of %s: %s", path, strerror(-r));
        }
    } else {
        rk_set_err(err, errlen, "getrandom: %s", strerror(-r));
    }
    if (!r)
        v->sb.readd_slots &= ~(1u << slot); /* a new member: a whole rebuild */
    if (!r) {
        vol_retire_slot(v, slot);
        free(v->paths[slot]);
        v->paths[slot] = *dup;
        *dup = NULL;
        v->file[slot] = v->top[slot] = dev;
        v->emu[slot] = NULL;
        vol_write_sbs(v, false);
    }
    pthread_mutex_unlock(&v->lock);
    return r;
}

int rk_volume_replace(struct rk_volume *v, uint32_t slot, const char *path, uint64_t rate,
                      char *err, size_t errlen)
{
    return rk_volume_replace_with(v, slot, path, rate, 0, err, errlen);
}

int rk_volume_replace_with(struct rk_volume *v, uint32_t slot, const char *path, uint64_t rate,
                           uint32_t flags, char *err, size_t errlen)
{
    bool force = flags & RK_REPLACE_FORCE;
    struct rk_dev *dev = NULL;
    char *dup = NULL;
    int r;
    if (!v || !path) {
        rk_set_err(err, errlen, "no volume or member path");
        return -EINVAL;
    }
    r = vol_replace_refused(v, slot, path, err, errlen);
    if (r)
        return r;
    /* The slot's failed member file itself (still open, locked): only a re-add can take it. */
    if (vol_same_file(v, path) == (int)slot)
        return rk_volume_readd(v, slot, path, rate, NULL, 0, err, errlen);
    r = rk_member_open(path, v->file_flags, &dev);
    if (r < 0) {
        dev = NULL;
        rk_set_err(err, errlen, "cannot open %s: %s", path, strerror(-r));
        goto out;
    }
    r = vol_check_new_member(v, slot, path, dev, force, err, errlen);
    if (!r)
        r = vol_check_signature(v, path, dev, force, err, errlen);
    if (r)
        goto out;
    /* The slot's old member coming back: a re-add (only what changed, when the bitmap can
     * tell), not a new member. */
    r = vol_readd_if_old(v, slot, path, &dev, rate, err, errlen);
    if (r <= 0)
        goto out;
    r = 0;
    dup = strdup(path);
    if (!dup) {
        r = -ENOMEM;
        rk_set_err(err, errlen, "out of memory");
        goto out;
    }
    r = vol_replace_record(v, slot, path, dev, &dup, err, errlen);
    if (r)
        goto out;
    struct rk_dev *member = dev;
    dev = NULL;                                                /* owned by the volume now */
    rk_info("replacing slot %" PRIu32 " with %s", slot, path); /* the rebuild logs its start */
    r = rk_raid_add_member(v->raid, slot, member);
    if (!r)
        r = rk_raid_rebuild_start(v->raid, slot, 0, rate);
    if (r) {
        /* Back to failed on disk; the new member keeps a superblock that says rebuilding at
         * offset 0, which assembly never trusts for data. */
        rk_set_err(err, errlen, "cannot start the rebuild of slot %" PRIu32 ": %s", slot,
                   strerror(-r));
        pthread_mutex_lock(&v->lock);
        v->sb.slots[slot].state = RK_SLOT_FAILED;
        v->sb.events++;
        vol_write_sbs(v, false);
        pthread_mutex_unlock(&v->lock);
        goto out;
    }
out:
    free(dup);
    rk_dev_close(dev);
    return r;
}
