/*
 * The fast path of a resync step (resync.c) on a healthy array: every slot ACTIVE and no
 * recorded bad range in the step. Large member I/Os, all of a step's reads in parallel, then
 * all its writes in parallel, instead of the level's chunk-by-chunk scrub hook:
 *   - copy levels (raid1, raid10): read each array chunk of the step from its first live copy
 *     in slot order (the copy reads of an unsynced region take, copies_rw.c raid_pick) and write
 *     it over the other copies, without comparing (md's resync does the same);
 *   - parity levels (raid5, raid6): read every member's step range whole, recompute P (and Q)
 *     of each row from the data and write the parity that differs (never data: a resync keeps
 *     the data, docs/ARCHITECTURE.md "Resync"); or, with rewrite (a full resync, where the
 *     parity is presumed wrong: an initial sync, a dirty start without a bitmap), read only the
 *     data chunks and write every row's parity unread, so each member byte moves once.
 * Anything unusual (a degraded array, a bad range, a read error, no memory, members x chunk over
 * 16 MiB) answers -EAGAIN and
 * the caller runs the level's scrub hook over the step instead, which handles it.
 */
#ifndef RK_RAID_RESYNC_FAST_H
#define RK_RAID_RESYNC_FAST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "raid/job.h"
#include "raidkit/device.h"

/* Scratch of one step in flight: a buffer of members x piece bytes (16 MiB at most over all
 * members; a larger step goes in pieces) plus two chunks, and ios. */
struct resync_scratch {
    char *mem;
    uint64_t size;
    struct rk_io *io;
    uint32_t *slot; /* slot of io[i] */
    int cap;        /* entries of io and slot */
    bool busy;
};

/* One scratch per step in flight (RAID_JOB_DEPTH_MAX covers every worker). */
struct resync_pool {
    pthread_mutex_t lock;
    struct resync_scratch s[RAID_JOB_DEPTH_MAX];
};

/* Initialise an empty pool (buffers are allocated on first use) / free every buffer. */
void resync_pool_init(struct resync_pool *p);
void resync_pool_destroy(struct resync_pool *p);

/*
 * Resync member data-area range [off, off+len) (chunk aligned, the caller holds its range
 * lock) by the fast path above, with a scratch of the pool. rewrite: parity levels write the
 * parity of every row without reading or comparing the old one (counted nowhere); otherwise they
 * add the rows whose parity differed and was rewritten to *mismatches (copy levels count
 * nothing and ignore rewrite: they never compare).
 * Returns 0, or -EAGAIN when the fast path does not apply or a read failed (nothing about the
 * step's outcome is claimed then: run the level's scrub hook over it). A failed write fails
 * its slot (raid_fail) and the step goes on, like a scrub repair.
 */
int resync_fast_step(struct raid_priv *r, struct resync_pool *p, uint64_t off, uint64_t len,
                     bool rewrite, uint64_t *mismatches);

#endif
