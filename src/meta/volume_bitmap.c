/* The volume's write-intent bitmap and resync state (docs/FORMAT.md "Write-intent bitmap",
 * "Resync state"): at assembly, read every used member's bitmap area, decide whether a resync
 * is needed and over what (the marked regions, or everything), attach the bitmap to the engine
 * and start the resync; record its checkpoints and its end in the superblocks. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "meta/volume_int.h"
#include "raid/bitmap_disk.h"

/* Read and decode slot i's area; on success OR its bits into bits. Returns 0 or -errno. */
static int vol_bitmap_read(struct rk_volume *v, uint32_t i, uint64_t nregions, uint8_t *area,
                           uint8_t *bits, uint64_t *events)
{
    char err[160] = "";
    struct rk_bm_hdr h;
    int r = rk_dev_read(v->file[i], area, v->sb.bitmap_size, v->sb.bitmap_offset);
    if (r) {
        rk_warn("member %s: cannot read its write-intent bitmap: %s", v->paths[i], strerror(-r));
        return r;
    }
    r = rk_bm_decode(area, v->sb.bitmap_size, nregions, &h, err, sizeof(err));
    if (!r && (h.region != v->sb.bitmap_region || memcmp(h.uuid, v->sb.array_uuid, 16))) {
        snprintf(err, sizeof(err), "region %" PRIu64 " or array UUID differs from the superblock",
                 h.region);
        r = -EINVAL;
    }
    if (r) {
        rk_warn("member %s: write-intent bitmap refused (%s): not trusted", v->paths[i], err);
        return r;
    }
    for (uint64_t k = 0; k < (nregions + 7) / 8; k++)
        bits[k] |= area[RK_BM_HDR_SIZE + k];
    if (h.events > *events)
        *events = h.events;
    return 0;
}

/* Largest data size over the slots. */
uint64_t vol_max_data(const struct rk_volume *v)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < v->sb.members; i++)
        if (v->sb.slots[i].data_size > m)
            m = v->sb.slots[i].data_size;
    return m;
}

/* Read the members' areas: OR of every valid copy into bits. Returns the number of valid
 * copies (0: none can be trusted), or -ENOMEM. */
static int vol_bitmap_collect(struct rk_volume *v, uint64_t nregions, uint8_t *bits,
                              uint64_t *events)
{
    uint8_t *area = rk_buf_alloc(v->sb.bitmap_size);
    if (!area)
        return -ENOMEM;
    int valid = 0;
    for (uint32_t i = 0; i < v->sb.members; i++)
        if (v->file[i] && v->sb.slots[i].state == RK_SLOT_ACTIVE &&
            vol_bitmap_read(v, i, nregions, area, bits, events) == 0)
            valid++;
    free(area);
    return valid;
}

bool vol_resync_has_target(const struct rk_volume *v)
{
    for (uint32_t i = 0; i < v->sb.members; i++)
        if ((v->present & (1u << i)) &&
            rk_raid_geom_survives(&v->geom, v->present & ~(1u << i)) == 1)
            return true;
    return false;
}

/*
 * Read-only volumes: no resync can run (nothing is written), so the regions it would cover are
 * attached to the engine as unsynced, in memory only (no area offset: the bitmap is never
 * written), and copy levels read them from the first live copy, as while a resync runs. Which
 * regions: those the members' valid bitmaps mark, plus every region from where a full resync
 * would start (its checkpoint, or 0: without a valid bitmap, everything). 0 or -errno + err.
 */
static int vol_bitmap_setup_ro(struct rk_volume *v, bool full, char *err, size_t errlen)
{
    struct rk_raid_bitmap_opts o = {.idle_ms = 0};
    uint64_t maxd = vol_max_data(v), events = 0, n = 0;
    memcpy(o.uuid, v->sb.array_uuid, 16);
    o.region = v->sb.bitmap_offset ? v->sb.bitmap_region : rk_bm_default_region(maxd, v->sb.chunk);
    uint64_t nreg = (maxd + o.region - 1) / o.region;
    uint8_t *bits = calloc(1, (size_t)(nreg + 7) / 8);
    if (!bits) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int valid = v->sb.bitmap_offset ? vol_bitmap_collect(v, nreg, bits, &events) : 0;
    if (valid < 0) {
        free(bits);
        rk_set_err(err, errlen, "out of memory");
        return valid;
    }
    /* As vol_bitmap_setup decides for a writable start: a full resync resumes at its
     * checkpoint after a clean stop, or after a crash with a valid bitmap; else from 0. */
    uint64_t from = UINT64_MAX;
    if (full || valid == 0)
        from = full && (!v->was_dirty || valid > 0) ? v->sb.resync_offset : 0;
    for (uint64_t i = 0; i < nreg; i++) {
        if ((i + 1) * o.region > from)
            bits[i / 8] |= (uint8_t)(1u << (i % 8));
        n += (bits[i / 8] >> (i % 8)) & 1;
    }
    o.bits = bits;
    int r = rk_raid_bitmap_attach(v->raid, &o);
    free(bits);
    if (r) {
        rk_set_err(err, errlen, "cannot load the write-intent bitmap: %s", strerror(-r));
        return r;
    }
    rk_warn("read-only start of an array that needs a resync: none runs (nothing is written); "
            "%s its %" PRIu64 " unsynced region%s of %" PRIu64 " bytes%s; start without "
            "--read-only to resync",
            rk_level_write_hole(v->sb.level) ? "parity may be stale in" : "reads of", n,
            n == 1 ? "" : "s", o.region,
            rk_level_write_hole(v->sb.level) ? "" : " take the first in-sync copy");
    return 0;
}

/*
 * A dirty or resync-pending start with no redundancy left (vol_resync_has_target false): no
 * resync runs and the array is recorded in sync (resync flags cleared, written with the dirty
 * mark), as md skips it: every byte has one source, so no copies or parity can disagree. The
 * members away catch up when they come back: the regions the bitmap marks stay set (the caller
 * keeps them; the cleaner clears no bit while a slot is away) and drive their re-add. After a
 * full resync that never ran (no bitmap, an initial sync) nothing says what differs: members
 * that left before this start are rebuilt whole (events_cleared raised, docs/FORMAT.md
 * "Re-add").
 */
static void vol_resync_skip(struct rk_volume *v, bool full)
{
    bool whole = full || !v->sb.bitmap_offset;
    if (whole && v->sb.bitmap_offset)
        v->sb.events_cleared = v->sb.events + 1;
    v->sb.resync_flags = 0;
    v->sb.resync_offset = 0;
    rk_warn("no resync: the array is degraded with no redundancy left (every byte has one "
            "source, nothing to bring in line); recorded in sync. %s",
            whole ? "A missing member that comes back is rebuilt whole (nothing records what "
                    "differs)"
                  : "The regions the write-intent bitmap marks stay set: the re-add of a "
                    "missing member resyncs them");
}

int vol_bitmap_setup(struct rk_volume *v, char *err, size_t errlen)
{
    struct rk_raid_bitmap_opts o = {.idle_ms = 0};
    bool redundant = rk_level_max_failed(v->sb.level, v->sb.members) > 0;
    bool needs = redundant && (v->was_dirty || (v->sb.resync_flags & RK_SB_RESYNC_PENDING));
    bool full = needs && (v->sb.resync_flags & RK_SB_RESYNC_FULL);
    uint64_t region = v->sb.bitmap_region, nreg = 0;
    uint8_t *bits = NULL;
    bool resume = false; /* a full resync resumes at its checkpoint after a crash */
    memcpy(o.uuid, v->sb.array_uuid, 16);
    if (!redundant)
        return 0;
    bool skip = needs && !vol_resync_has_target(v); /* nothing to bring in line */
    if (v->read_only)
        return needs && !skip ? vol_bitmap_setup_ro(v, full, err, errlen) : 0;
    if (skip) {
        vol_resync_skip(v, full);
        needs = full = false;
    }
    if (v->sb.bitmap_offset) {
        nreg = (vol_max_data(v) + region - 1) / region;
        bits = calloc(1, (size_t)(nreg + 7) / 8);
        if (!bits) {
            rk_set_err(err, errlen, "out of memory");
            return -ENOMEM;
        }
        int valid = vol_bitmap_collect(v, nreg, bits, &o.events);
        if (valid < 0) {
            free(bits);
            rk_set_err(err, errlen, "out of memory");
            return valid;
        }
        if (valid == 0 && needs && !full) {
            rk_warn("no member holds a valid write-intent bitmap: resyncing the whole array");
            full = true;
        }
        /* Without a valid copy nothing says what changed while a member was away: members
         * that left before this start are rebuilt whole at their re-add (docs/FORMAT.md
         * "Re-add"); recorded with the dirty mark. */
        if (valid == 0) {
            v->sb.events_cleared = v->sb.events + 1;
            v->bm_untrusted = true;
        }
        o.keep = bits;
        o.area_offset = v->sb.bitmap_offset;
        o.area_size = v->sb.bitmap_size;
        o.region = region;
        /* A full resync cut short by a crash resumes at its checkpoint when a valid bitmap
         * records every region written since (below the checkpoint those are the only ones a
         * crash may have left inconsistent): both are resynced (docs/ARCHITECTURE.md). */
        resume = full && v->was_dirty && valid > 0 && v->sb.resync_offset > 0;
        o.bits = needs && (!full || resume) ? bits : NULL;
    } else {
        rk_warn("array has no write-intent bitmap: an unclean shutdown costs a full resync "
                "(add one offline with `raidkit bitmap --add`)");
        full = needs;
    }
    const char *e = getenv("RAIDKIT_BITMAP_IDLE_MS"); /* tests only (docs/CLI.md) */
    if (e && *e)
        o.idle_ms = (uint32_t)strtoul(e, NULL, 10);
    int r = rk_raid_bitmap_attach(v->raid, &o);
    free(bits);
    if (r) {
        rk_set_err(err, errlen, "cannot attach the write-intent bitmap: %s", strerror(-r));
        return r;
    }
    v->resync = needs;
    v->resync_full = full;
    /* A full resync resumes at its checkpoint after a clean stop; after a crash only with the
     * bitmap's regions (resume): without it, the regions below it may be stale again. */
    v->resync_from = full && (!v->was_dirty || resume) ? v->sb.resync_offset : 0;
    if (resume)
        rk_info("full resync resumes at its checkpoint (member data offset %" PRIu64
                "), with the regions the write-intent bitmap marks below it",
                v->resync_from);
    if (needs) {
        v->sb.resync_flags = RK_SB_RESYNC_PENDING | (full ? RK_SB_RESYNC_FULL : 0);
        v->sb.resync_offset = v->resync_from;
    }
    return 0;
}

void vol_resync_start(struct rk_volume *v, uint64_t rate)
{
    if (!v->resync)
        return;
    v->resync_rate = rate;
    struct rk_raid_progress p;
    if (rk_raid_progress(v->raid, &p) == 0 && p.state == RK_JOB_RUNNING) {
        rk_warn("resync waits: a %s runs; it starts when that ends (pending until then)",
                p.kind == RK_JOB_REBUILD ? "rebuild" : "job");
        pthread_mutex_lock(&v->lock);
        v->resync_waiting = true;
        pthread_mutex_unlock(&v->lock);
        return;
    }
    int r = rk_raid_resync_start(v->raid, v->resync_full, v->resync_from, rate);
    if (r)
        rk_warn("cannot start the resync: %s; it stays pending", strerror(-r));
}

static void *vol_resync_helper(void *arg)
{
    struct rk_volume *v = arg;
    rk_raid_job_wait(v->raid); /* the rebuild that called vol_resync_after_rebuild */
    pthread_mutex_lock(&v->lock);
    bool go = !v->closing && v->resync_waiting;
    v->resync_waiting = false;
    uint64_t rate = v->resync_rate;
    pthread_mutex_unlock(&v->lock);
    if (go) {
        rk_info("the rebuild ended: starting the resync that waited for it");
        vol_resync_start(v, rate);
    }
    return NULL;
}

void vol_resync_after_rebuild(struct rk_volume *v)
{
    if (!v->resync_waiting || v->closing || v->has_helper)
        return;
    if (pthread_create(&v->helper, NULL, vol_resync_helper, v) == 0)
        v->has_helper = true;
    else
        rk_warn("cannot start the waiting resync: it stays pending until a later start");
}

void vol_resync_helper_stop(struct rk_volume *v)
{
    pthread_mutex_lock(&v->lock);
    v->closing = true;
    bool join = v->has_helper;
    v->has_helper = false;
    pthread_mutex_unlock(&v->lock);
    if (join)
        pthread_join(v->helper, NULL);
}

static void vol_resync_checkpoint(void *ctx, uint64_t offset)
{
    struct rk_volume *v = ctx;
    pthread_mutex_lock(&v->lock);
    if (v->sb.resync_flags & RK_SB_RESYNC_FULL) {
        v->sb.resync_offset = offset;
        vol_write_sbs(v, false);
    }
    pthread_mutex_unlock(&v->lock);
}

static void vol_resync_done(void *ctx, int result)
{
    struct rk_volume *v = ctx;
    if (result)
        return;
    pthread_mutex_lock(&v->lock);
    /* Like a rebuild checkpoint, no event: a member that missed this write still says
     * PENDING with the same event, and taking its copy costs only a needless resync. */
    v->sb.resync_flags = 0;
    v->sb.resync_offset = 0;
    vol_write_sbs(v, false);
    pthread_mutex_unlock(&v->lock);
    rk_info("array in sync: resync recorded complete");
}

/* rk_raid_events.bitmap_clearing: record the event count of this clear (docs/FORMAT.md
 * "Re-add") on every member before the bits go; a no-op when it is recorded already. */
static int vol_bitmap_clearing(void *ctx)
{
    struct rk_volume *v = ctx;
    int r = 0;
    pthread_mutex_lock(&v->lock);
    /* A slot failed since the cleaner looked (its failure is recorded under v->lock after the
     * engine marks it): no clear, or the event would be the failure's own. */
    for (uint32_t i = 0; v->raid && i < v->sb.members; i++)
        if (rk_raid_slot_state(v->raid, i) != RK_SLOT_ACTIVE)
            r = -EAGAIN;
    if (!r && v->sb.events_cleared != v->sb.events) {
        uint64_t old = v->sb.events_cleared;
        v->sb.events_cleared = v->sb.events;
        r = vol_write_sbs(v, false);
        if (r)
            v->sb.events_cleared = old; /* not everywhere: the bits stay, the next pass retries */
    }
    pthread_mutex_unlock(&v->lock);
    return r;
}

void vol_resync_events(struct rk_raid_events *ev)
{
    ev->resync_checkpoint = vol_resync_checkpoint;
    ev->resync_done = vol_resync_done;
    ev->bitmap_clearing = vol_bitmap_clearing;
}
