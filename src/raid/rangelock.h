/* The range lock of a raid device: member data-area ranges, locked on every slot at once, that
 * a background job step (job.h) holds while it reads and rewrites them and that foreground
 * writes take while a job runs, so a job never races a write of the same range. */
#ifndef RK_RAID_RANGELOCK_H
#define RK_RAID_RANGELOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "raid/raid_int.h"

/*
 * One holder (or waiter) of a member data-area range, on the caller's stack: no allocation on
 * the data path. Ranges are granted in arrival order: a request waits while any earlier entry
 * (held or waiting) overlaps it, so a job step is never starved by a stream of writes.
 */
struct raid_range {
    uint64_t off, end;
    struct raid_range *prev, *next;
};

/* Allocate r->rl (engine open; 0 or -ENOMEM) / free it (engine close, after the job stopped;
 * a no-op when r->rl is NULL). */
int raid_rangelock_init(struct raid_priv *r);
void raid_rangelock_destroy(struct raid_priv *r);

/* Lock member data-area range [off, off+len) (bytes) on every slot, waiting for every earlier
 * overlapping holder or waiter; unlock with the same node, which the caller owns throughout. */
void raid_range_lock(struct raid_priv *r, struct raid_range *node, uint64_t off, uint64_t len);
void raid_range_unlock(struct raid_priv *r, struct raid_range *node);

/* Member data-area span [*lo, *hi) (bytes) that array range [off, off+len) (len > 0) touches
 * on any slot, parity included (a row's parity sits at the row's member offset); [0, UINT64_MAX)
 * when the level's map cannot bound it. For levels with a reconstruct hook. */
void raid_member_span(struct raid_priv *r, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi);

/*
 * Foreground write of array range [off, off+len) (bytes; every level's rw hook calls it for a
 * write, discard or write-zeroes). While a job runs (raid_range_activate) it locks the member
 * span the range maps to on any slot and returns true; otherwise the write is counted as
 * unlocked and it returns false. Levels without a reconstruct hook never lock. End the write
 * with raid_write_end(r, node, the returned value).
 */
bool raid_write_begin(struct raid_priv *r, struct raid_range *node, uint64_t off, uint64_t len);
void raid_write_end(struct raid_priv *r, struct raid_range *node, bool locked);

/* A job starts (job.c): from now on writes take range locks; returns once every write that
 * started unlocked has ended (woken by the last one's raid_write_end). Call with no lock held. */
void raid_range_activate(struct raid_priv *r);
/* The job ended: writes stop taking range locks. */
void raid_range_deactivate(struct raid_priv *r);

#endif
