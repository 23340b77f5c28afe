/* Recording the volume's state changes in the member superblocks: the superblock writes, the
 * bad-range table kept in step with the engine, and the raid engine's events (member failed,
 * rebuild checkpoint, rebuild done) that must survive a restart. */
#include "meta/volume_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/util.h"

/* vol_write_sbs, also counting the superblocks written (and flushed: meta_write_sb). */
static int vol_write_sbs_n(struct rk_volume *v, bool raw, uint32_t *written)
{
    int first = 0;
    *written = 0;
    v->sb.utime = (uint64_t)time(NULL);
    for (uint32_t i = 0; i < v->sb.members; i++) {
        /* A member being rebuilt carries the array state too (and its rebuild checkpoint). */
        if ((v->sb.slots[i].state != RK_SLOT_ACTIVE &&
             v->sb.slots[i].state != RK_SLOT_REBUILDING) ||
            !v->top[i])
            continue;
        struct rk_sb copy = v->sb;
        meta_sb_for_slot(&copy, i);
        int r = meta_write_sb(raw ? v->file[i] : v->top[i], &copy);
        if (r < 0) {
            rk_err("member %s (slot %" PRIu32 "): superblock write failed: %s", v->paths[i], i,
                   strerror(-r));
            if (!first)
                first = r;
        } else {
            (*written)++;
        }
    }
    return first;
}

int vol_write_sbs(struct rk_volume *v, bool raw)
{
    uint32_t written;
    return vol_write_sbs_n(v, raw, &written);
}

bool vol_sync_bad(struct rk_volume *v)
{
    struct rk_raid_bad_range br[RK_SB_BAD_MAX];
    if (!v->raid)
        return false;
    int n = rk_raid_bad_ranges(v->raid, br, RK_SB_BAD_MAX);
    if (n < 0)
        return false;
    if (n > (int)RK_SB_BAD_MAX) {
        if (!v->bad_overflow)
            rk_err("%d unreadable ranges, the superblock holds %u: the rest are not remembered "
                   "across a restart",
                   n, RK_SB_BAD_MAX);
        v->bad_overflow = true;
        n = RK_SB_BAD_MAX;
    }
    struct rk_sb_bad nb[RK_SB_BAD_MAX];
    uint32_t k = 0;
    for (int i = 0; i < n; i++) {
        /* The engine records chunk-aligned ranges; anything else could not be decoded. */
        if (br[i].slot >= v->sb.members || br[i].member_off % 512 || br[i].len % 512 || !br[i].len)
            continue;
        nb[k++] =
            (struct rk_sb_bad){.slot = br[i].slot, .offset = br[i].member_off, .len = br[i].len};
    }
    bool same = k == v->sb.nbad;
    for (uint32_t i = 0; same && i < k; i++)
        same = nb[i].slot == v->sb.bad[i].slot && nb[i].offset == v->sb.bad[i].offset &&
               nb[i].len == v->sb.bad[i].len;
    if (same)
        return false;
    memset(v->sb.bad, 0, sizeof(v->sb.bad));
    memcpy(v->sb.bad, nb, k * sizeof(nb[0]));
    v->sb.nbad = k;
    v->sb.events++;
    rk_info("bad-range table: %" PRIu32 " entr%s, event %" PRIu64, k, k == 1 ? "y" : "ies",
            v->sb.events);
    return true;
}

void vol_drop_bad(struct rk_volume *v, uint32_t slot)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < v->sb.nbad; i++)
        if (v->sb.bad[i].slot != slot)
            v->sb.bad[k++] = v->sb.bad[i];
    for (uint32_t i = k; i < v->sb.nbad; i++)
        memset(&v->sb.bad[i], 0, sizeof(v->sb.bad[i]));
    v->sb.nbad = k;
}

void vol_load_bad(struct rk_volume *v)
{
    for (uint32_t i = 0; i < v->sb.nbad; i++) {
        const struct rk_sb_bad *b = &v->sb.bad[i];
        int r = rk_raid_add_bad_range(v->raid, b->slot, b->offset, b->len);
        if (r < 0)
            rk_err("slot %" PRIu32 ": cannot load unreadable range [%" PRIu64 ", +%" PRIu64 "): %s",
                   b->slot, b->offset, b->len, strerror(-r));
    }
}

/*
 * rk_raid_events.member_failed: persist the failure so a restart never trusts the member. The
 * raised event counter goes to every surviving member with a FUA write and a flush
 * (meta_write_sb); the failed member's superblock is never written again (vol_write_sbs skips
 * FAILED slots), so once one survivor holds the new counter, assembly classifies the failed
 * member as stale (scan.c). Returns 0 when at least one survivor's superblock was written
 * (a survivor whose write failed keeps the old counter and is stale too), -EIO when none was.
 */
static int vol_member_failed(void *ctx, uint32_t slot, int error)
{
    struct rk_volume *v = ctx;
    int ret = 0;
    if (slot >= v->sb.members)
        return 0;
    pthread_mutex_lock(&v->lock);
    if (v->sb.slots[slot].state != RK_SLOT_FAILED) {
        v->fail_events[slot] = v->sb.events; /* the newest the member can hold (reconnect) */
        v->sb.slots[slot].state = RK_SLOT_FAILED;
        v->sb.readd_slots &= ~(1u << slot);
        v->sb.events++;
        rk_warn("member %s (slot %" PRIu32 ") failed (%s); marked failed, event %" PRIu64,
                v->paths[slot] ? v->paths[slot] : "(missing)", slot,
                error ? strerror(error < 0 ? -error : error) : "on request", v->sb.events);
        vol_sync_bad(v); /* a failed slot's unreadable ranges no longer matter */
        uint32_t written = 0;
        /* A read-only volume takes no writes: nothing can depend on the record. */
        if (!v->read_only)
            vol_write_sbs_n(v, false, &written);
        if (!v->read_only && written == 0) {
            rk_err("member %s (slot %" PRIu32 "): its failure (event %" PRIu64
                   ") reached no superblock",
                   v->paths[slot] ? v->paths[slot] : "(missing)", slot, v->sb.events);
            ret = -EIO;
        }
    }
    pthread_mutex_unlock(&v->lock);
    return ret;
}

/* rk_raid_events.rebuild_checkpoint: [0, offset) of slot's data area is in sync and durable. */
static void vol_rebuild_checkpoint(void *ctx, uint32_t slot, uint64_t offset)
{
    struct rk_volume *v = ctx;
    pthread_mutex_lock(&v->lock);
    if (slot < v->sb.members && v->sb.slots[slot].state == RK_SLOT_REBUILDING) {
        v->sb.slots[slot].rebuild_offset = offset;
        /* Ranges found unreadable before offset must survive a restart that resumes there. */
        vol_sync_bad(v);
        vol_write_sbs(v, false);
    }
    pthread_mutex_unlock(&v->lock);
}

/* rk_raid_events.rebuild_done: a complete rebuild makes the slot active on disk too. */
static void vol_rebuild_done(void *ctx, uint32_t slot, int result)
{
    struct rk_volume *v = ctx;
    pthread_mutex_lock(&v->lock);
    /* The ranges go to disk with (or before) the active state: never a rebuilt member whose
     * holes a restart would forget. */
    bool changed = vol_sync_bad(v);
    if (slot < v->sb.members && v->sb.slots[slot].state == RK_SLOT_REBUILDING && result == 0) {
        v->sb.slots[slot].state = RK_SLOT_ACTIVE;
        v->sb.slots[slot].rebuild_offset = 0;
        v->sb.readd_slots &= ~(1u << slot);
        v->sb.events++;
        rk_info("member %s (slot %" PRIu32 ") rebuilt; active, event %" PRIu64, v->paths[slot],
                slot, v->sb.events);
        vol_write_sbs(v, false);
    } else if (changed && !v->read_only) {
        vol_write_sbs(v, false);
    }
    if (result != -EINTR)
        vol_resync_after_rebuild(v); /* a resync that waited for this rebuild */
    pthread_mutex_unlock(&v->lock);
}

struct rk_raid_events vol_events(struct rk_volume *v)
{
    struct rk_raid_events ev = {.ctx = v,
                                .member_failed = vol_member_failed,
                                .rebuild_checkpoint = vol_rebuild_checkpoint,
                                .rebuild_done = vol_rebuild_done};
    return ev;
}
