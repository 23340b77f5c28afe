/* Re-add (md's --re-add; docs/ARCHITECTURE.md "Re-add", docs/FORMAT.md "Re-add"): the slot's
 * old member comes back; when the write-intent bitmap proves what changed since it left, only
 * those regions are resynced (rk_raid_readd_start), else it is rebuilt whole and the volume
 * says why. Also the resume of a recorded re-add or rebuild at assembly. */
#include "meta/volume_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"
#include "raid/bitmap_disk.h"
#include "raidkit/member.h"
#include "raidkit/member_nbd.h"

/* The slot the member UUID u is recorded for in the slot table, or -1. */
static int readd_slot_of(const struct rk_volume *v, const uint8_t *u)
{
    for (uint32_t i = 0; i < v->sb.members; i++)
        if (!memcmp(v->sb.slots[i].uuid, u, RK_UUID_LEN))
            return (int)i;
    return -1;
}

int vol_readd_identify(struct rk_volume *v, uint32_t slot, const char *path,
                       const struct rk_sb *msb, uint64_t events, char *err, size_t errlen)
{
    char ua[RK_UUID_STR_LEN], ub[RK_UUID_STR_LEN];
    if (memcmp(msb->array_uuid, v->sb.array_uuid, RK_UUID_LEN)) {
        rk_set_err(err, errlen,
                   "%s is a member of another array (%s, this array is %s); nothing "
                   "written",
                   path, rk_uuid_format(msb->array_uuid, ua), rk_uuid_format(v->sb.array_uuid, ub));
        return -EXDEV;
    }
    int k = readd_slot_of(v, msb->member_uuid);
    if (k < 0) {
        rk_set_err(err, errlen,
                   "%s (member %s) is no longer recorded in any slot of this array (it was "
                   "replaced); use replace --with to rebuild onto it",
                   path, rk_uuid_format(msb->member_uuid, ua));
        return -ESTALE;
    }
    if ((uint32_t)k != slot || msb->slot != slot) {
        rk_set_err(err, errlen, "%s is the old member of slot %d, not of slot %" PRIu32, path, k,
                   slot);
        return -ESTALE;
    }
    if (msb->events >= events) {
        rk_set_err(err, errlen,
                   "%s has event %" PRIu64 ", not older than the array's %" PRIu64
                   ": it did not leave this array",
                   path, msb->events, events);
        return -ESTALE;
    }
    return 0;
}

/* Why the bitmap cannot prove what changed since the member (superblock msb) left, into why;
 * false when it can (a re-add of the marked regions is safe). Caller holds v->lock. */
static bool readd_needs_full(struct rk_volume *v, uint32_t slot, const struct rk_sb *msb, char *why,
                             size_t len)
{
    struct rk_raid_bitmap_stats st;
    const struct rk_sb_slot *own = &msb->slots[slot];
    if (!v->sb.bitmap_offset || rk_raid_bitmap_stats(v->raid, &st) || !st.on_disk)
        snprintf(why, len, "the array has no write-intent bitmap in use");
    else if (v->bm_untrusted)
        snprintf(why, len, "no valid write-intent bitmap was found at assembly");
    else if (!v->sb.events_cleared)
        snprintf(why, len,
                 "the bitmap does not record when it last cleared bits (array "
                 "older than re-add)");
    else if (msb->events < v->sb.events_cleared)
        snprintf(why, len,
                 "its event %" PRIu64 " is older than the bitmap's last clear (event %" PRIu64 ")",
                 msb->events, v->sb.events_cleared);
    else if (own->state == RK_SLOT_REBUILDING && !(msb->readd_slots & (1u << slot)))
        snprintf(why, len, "it left in the middle of a whole rebuild (at %" PRIu64 " bytes)",
                 own->rebuild_offset);
    else {
        for (uint32_t i = 0; i < v->sb.nbad; i++)
            if (v->sb.bad[i].slot == slot) {
                snprintf(why, len, "unreadable ranges are recorded for the slot");
                return true;
            }
        return false;
    }
    return true;
}

/*
 * Mark in the array's bitmap (durably) every region the returning member's own bitmap marks:
 * what it wrote while away without the array knowing (it was served on its own, degraded, so
 * it cleared no bit: a split brain), which the array's bitmap cannot name. False with why when
 * its area cannot be read or is invalid (then it is rebuilt whole). Called without v->lock.
 */
static bool readd_member_bits(struct rk_volume *v, struct rk_dev *dev, int *ret, char *why,
                              size_t len)
{
    char err[120] = "";
    struct rk_bm_hdr h;
    uint64_t nregions = (vol_max_data(v) + v->sb.bitmap_region - 1) / v->sb.bitmap_region;
    uint8_t *area = rk_buf_alloc(v->sb.bitmap_size);
    *ret = 0;
    if (!area) {
        *ret = -ENOMEM;
        return true;
    }
    int r = rk_dev_read(dev, area, v->sb.bitmap_size, v->sb.bitmap_offset);
    if (r)
        snprintf(err, sizeof(err), "%s", strerror(-r));
    else
        r = rk_bm_decode(area, v->sb.bitmap_size, nregions, &h, err, sizeof(err));
    if (!r && (h.region != v->sb.bitmap_region || memcmp(h.uuid, v->sb.array_uuid, 16))) {
        snprintf(err, sizeof(err), "region or array UUID differs from the superblock");
        r = -EINVAL;
    }
    if (!r)
        *ret = rk_raid_bitmap_mark(v->raid, area + RK_BM_HDR_SIZE, nregions);
    free(area);
    if (r)
        snprintf(why, len, "its own write-intent bitmap is not valid (%s)", err);
    return r == 0;
}

/*
 * Record the rejoin of slot: the array's superblocks first (slot rebuilding, re-add flag,
 * event + 1), then the member's own, then the volume takes dev. A crash between leaves the
 * member stale (lower event): never trusted, re-add it again. Returns 0 or -errno with err; on
 * error the slot is failed again (recorded) and dev is still the caller's.
 */
static int readd_record(struct rk_volume *v, uint32_t slot, const char *path, struct rk_dev *dev,
                        bool readd, char *err, size_t errlen)
{
    char *dup = strdup(path);
    if (!dup) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_lock(&v->lock);
    bool borrowed = dev == v->file[slot]; /* the failed member's own open file (readd_open) */
    if (borrowed) {
        if (v->top[slot] == dev)
            v->top[slot] = NULL;
        v->file[slot] = NULL;
    }
    vol_retire_slot(v, slot);
    v->file[slot] = v->top[slot] = v->emu[slot] = NULL;
    free(v->paths[slot]);
    v->paths[slot] = dup;
    v->sb.slots[slot].state = RK_SLOT_REBUILDING;
    v->sb.slots[slot].rebuild_offset = 0;
    v->sb.readd_slots =
        readd ? v->sb.readd_slots | (1u << slot) : v->sb.readd_slots & ~(1u << slot);
    if (!readd)
        vol_drop_bad(v, slot);
    v->sb.events++;
    vol_write_sbs(v, false);
    struct rk_sb copy = v->sb;
    meta_sb_for_slot(&copy, slot);
    int r = meta_write_sb(dev, &copy);
    if (r) {
        rk_set_err(err, errlen, "cannot write the superblock of %s: %s", path, strerror(-r));
        v->sb.slots[slot].state = RK_SLOT_FAILED;
        v->sb.readd_slots &= ~(1u << slot);
        v->sb.events++;
        vol_write_sbs(v, false);
        if (borrowed)
            v->file[slot] = dev; /* still the slot's (failed) file, closed with the volume */
    } else {
        v->file[slot] = v->top[slot] = dev;
    }
    pthread_mutex_unlock(&v->lock);
    return r;
}

/* Open the returning member at path into *dev: the slot's own open file when path is the file
 * of its failed member (online fail and back: the file stays locked by it), else a new open.
 * *borrowed says which (a borrowed device is never closed by the caller). 0 or -errno + err. */
static int readd_open(struct rk_volume *v, uint32_t slot, const char *path, struct rk_dev **dev,
                      bool *borrowed, char *err, size_t errlen)
{
    struct stat a, b;
    *borrowed = false;
    pthread_mutex_lock(&v->lock);
    if (v->file[slot] && v->paths[slot] && !stat(path, &a) && !stat(v->paths[slot], &b) &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        *dev = v->file[slot];
        *borrowed = true;
    }
    pthread_mutex_unlock(&v->lock);
    if (*borrowed)
        return 0;
    int r = rk_member_open(path, v->file_flags, dev);
    if (r < 0) {
        *dev = NULL;
        rk_set_err(err, errlen, "cannot open %s: %s", path, strerror(-r));
        return r;
    }
    return 0;
}

/* Re-add dev (opened from path; its superblock msb identified as slot's old member): decide
 * the mode, record, start the job. On success the volume owns *dev (set to NULL). */
static int readd_dev(struct rk_volume *v, uint32_t slot, const char *path, struct rk_dev **dev,
                     const struct rk_sb *msb, uint64_t rate, char *err, size_t errlen)
{
    char why[160] = "";
    pthread_mutex_lock(&v->lock);
    bool full = readd_needs_full(v, slot, msb, why, sizeof(why));
    pthread_mutex_unlock(&v->lock);
    int r = 0;
    if (!full && !readd_member_bits(v, *dev, &r, why, sizeof(why)))
        full = true;
    if (r) {
        rk_set_err(err, errlen, "cannot mark the regions %s wrote while away: %s", path,
                   strerror(-r));
        return r;
    }
    r = readd_record(v, slot, path, *dev, !full, err, errlen);
    if (r)
        return r;
    struct rk_dev *member = *dev;
    *dev = NULL; /* the volume's now */
    r = rk_raid_add_member(v->raid, slot, member);
    if (!r)
        r = full ? rk_raid_rebuild_start(v->raid, slot, 0, rate)
                 : rk_raid_readd_start(v->raid, slot, 0, rate);
    if (r) {
        rk_set_err(err, errlen, "cannot start the re-add of slot %" PRIu32 ": %s", slot,
                   strerror(-r));
        pthread_mutex_lock(&v->lock);
        v->sb.slots[slot].state = RK_SLOT_FAILED;
        v->sb.readd_slots &= ~(1u << slot);
        v->sb.events++;
        vol_write_sbs(v, false);
        pthread_mutex_unlock(&v->lock);
        return r;
    }
    pthread_mutex_lock(&v->lock);
    if (full)
        snprintf(v->rejoin[slot], sizeof(v->rejoin[slot]),
                 "re-add of slot %" PRIu32 ": full rebuild, the bitmap cannot prove what "
                 "changed: %s",
                 slot, why);
    else
        snprintf(v->rejoin[slot], sizeof(v->rejoin[slot]),
                 "re-add of slot %" PRIu32 ": resyncing only the regions the write-intent bitmap "
                 "marks (member event %" PRIu64 ", bitmap cleared at %" PRIu64 ")",
                 slot, msb->events, v->sb.events_cleared);
    pthread_mutex_unlock(&v->lock);
    if (full)
        rk_warn("%s (%s)", v->rejoin[slot], path);
    else
        rk_info("%s (%s)", v->rejoin[slot], path);
    return 0;
}

int vol_readd_if_old(struct rk_volume *v, uint32_t slot, const char *path, struct rk_dev **dev,
                     uint64_t rate, char *err, size_t errlen)
{
    struct rk_sb msb;
    char serr[200];
    if (meta_read_sb(*dev, &msb, serr, sizeof(serr)) ||
        memcmp(msb.array_uuid, v->sb.array_uuid, RK_UUID_LEN) ||
        memcmp(msb.member_uuid, v->sb.slots[slot].uuid, RK_UUID_LEN))
        return 1;
    int r = vol_readd_identify(v, slot, path, &msb, v->sb.events, err, errlen);
    if (r)
        return r;
    return readd_dev(v, slot, path, dev, &msb, rate, err, errlen);
}

int rk_volume_readd(struct rk_volume *v, uint32_t slot, const char *path, uint64_t rate, char *note,
                    size_t notelen, char *err, size_t errlen)
{
    if (!v || !path) {
        rk_set_err(err, errlen, "no volume or member path");
        return -EINVAL;
    }
    if (slot < v->sb.members && rk_raid_slot_state(v->raid, slot) == RK_SLOT_ACTIVE) {
        rk_set_err(err, errlen,
                   "slot %" PRIu32 " is active: nothing to re-add (only a failed or "
                   "missing slot takes its old member back)",
                   slot);
        return -EBUSY;
    }
    int r = vol_replace_refused(v, slot, path, err, errlen);
    if (r)
        return r;
    struct rk_dev *dev = NULL;
    bool borrowed;
    r = readd_open(v, slot, path, &dev, &borrowed, err, errlen);
    if (r)
        return r;
    struct rk_sb msb;
    char serr[200] = "";
    r = meta_read_sb(dev, &msb, serr, sizeof(serr));
    if (r) {
        rk_set_err(err, errlen,
                   "%s holds no usable raidkit superblock (%s): not a member that "
                   "left; use replace --with to rebuild onto it",
                   path, serr);
        r = -ENODATA;
    }
    if (!r)
        r = vol_readd_identify(v, slot, path, &msb, v->sb.events, err, errlen);
    if (!r)
        r = vol_check_new_member(v, slot, path, dev, false, err, errlen);
    if (!r)
        r = readd_dev(v, slot, path, &dev, &msb, rate, err, errlen);
    if (!r && note) {
        pthread_mutex_lock(&v->lock);
        snprintf(note, notelen, "%s", v->rejoin[slot]);
        pthread_mutex_unlock(&v->lock);
    }
    if (!borrowed) /* a borrowed device stays the volume's */
        rk_dev_close(dev);
    return r;
}

const char *rk_volume_rejoin_note(struct rk_volume *v, uint32_t slot)
{
    return v && slot < v->sb.members && v->rejoin[slot][0] ? v->rejoin[slot] : NULL;
}

int vol_rebuild_resume(struct rk_volume *v, uint32_t slot, uint64_t rate)
{
    uint64_t from = v->sb.slots[slot].rebuild_offset;
    if (!(v->sb.readd_slots & (1u << slot)))
        return rk_raid_rebuild_start(v->raid, slot, from, rate);
    int r = v->bm_untrusted ? -ENOENT : rk_raid_readd_start(v->raid, slot, from, rate);
    if (r != -ENOENT)
        return r;
    /* The bitmap that said what changed is gone: only a whole rebuild is safe. */
    pthread_mutex_lock(&v->lock);
    v->sb.readd_slots &= ~(1u << slot);
    v->sb.slots[slot].rebuild_offset = 0;
    snprintf(v->rejoin[slot], sizeof(v->rejoin[slot]),
             "re-add of slot %" PRIu32 ": full rebuild, the write-intent bitmap was lost", slot);
    vol_write_sbs(v, false);
    pthread_mutex_unlock(&v->lock);
    rk_warn("%s", v->rejoin[slot]);
    return rk_raid_rebuild_start(v->raid, slot, 0, rate);
}
