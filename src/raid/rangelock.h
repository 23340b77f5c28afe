/* Per-array management state shared by the engine and the background jobs: the range lock
 * (rebuild/scrub steps vs copy-level foreground writes), recorded bad ranges and the job. */
#ifndef RK_RAID_RANGELOCK_H
#define RK_RAID_RANGELOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raid/raid_int.h"

/*
 * One holder (or waiter) of a member data-area range, on the caller's stack: no allocation on
 * the data path. Ranges are granted in arrival order: a request waits while any earlier entry
 * (held or waiting) overlaps it, so a rebuild step is never starved by a stream of writes.
 */
struct raid_range {
    uint64_t off, end;
    struct raid_range *prev, *next;
};

#define RAID_BAD_MAX  256
#define RAID_BAD_DEAD UINT32_MAX /* slot of a dropped entry */

struct raid_mgmt {
    pthread_mutex_t lock; /* range list, job fields, bad list appends */
    pthread_cond_t cond;  /* range released */
    struct raid_range *head, *tail;
    /* A job runs: copy-level writes take range locks. Writes that saw it clear are counted in
     * unlocked; a job starts only after they drained (raid_mgmt_activate). */
    _Atomic int active;
    _Atomic int64_t unlocked;
    /* Bad ranges: readers scan [0, nbad) without the lock. An entry is published by storing
     * its slot last (release; readers load it with acquire), and dropped (slot replaced) by
     * storing RAID_BAD_DEAD as its slot. Dead entries are reused under the lock (a reader that
     * raced the reuse may pair the old slot, which is being replaced and serves no reads,
     * with the new range); nbad only grows. bad_last: index of the newest entry. */
    _Atomic int nbad;
    int bad_last;
    struct rk_raid_bad_range bad[RAID_BAD_MAX];
    /* The background job. */
    struct rk_dev *dev; /* the raid device (for rk_raid_fail_slot) */
    pthread_t thread;
    bool has_thread; /* thread started and not joined */
    _Atomic int stop;
    int result;
    struct rk_raid_progress prog; /* under lock */
    double t0;                    /* monotonic start of the job */
};

/* Allocate r->mgmt (engine open) / stop the job and free it (engine close). */
int raid_mgmt_init(struct raid_priv *r, struct rk_dev *dev);
void raid_mgmt_destroy(struct raid_priv *r);

/* Lock member data-area range [off, off+len) on every slot; unlock with the same node. */
void raid_range_lock(struct raid_priv *r, struct raid_range *node, uint64_t off, uint64_t len);
void raid_range_unlock(struct raid_priv *r, struct raid_range *node);

/* Foreground write of array range [off, off+len) (copy levels): takes the range lock when a
 * job runs (returns true) or counts the write as unlocked (false). End with raid_write_end. */
bool raid_write_begin(struct raid_priv *r, struct raid_range *node, uint64_t off, uint64_t len);
void raid_write_end(struct raid_priv *r, struct raid_range *node, bool locked);

/* Mark a job active and wait until every unlocked write has finished. */
void raid_mgmt_activate(struct raid_priv *r);

/* Is [moff, moff+len) of slot's data area recorded unreadable? (lock-free) */
bool raid_bad_hit(struct raid_priv *r, uint32_t slot, uint64_t moff, uint64_t len);
/* Record a bad range (logged; the list is bounded: beyond it the slot is failed instead). */
int raid_bad_add(struct raid_priv *r, uint32_t slot, uint64_t moff, uint64_t len);
/* Drop every bad range of slot (it is being replaced: its new contents start clean). */
void raid_bad_drop(struct raid_priv *r, uint32_t slot);

/* Member data-area bytes a job walks: the part of the data areas the layout uses. */
uint64_t raid_job_end(const struct raid_priv *r);

/* Job helpers (rebuild.c) for the scrub driver (scrub.c): step bytes, progress + rate limit
 * after a step, and the job's end (the thread's last act). */
uint64_t raid_job_step(const struct raid_priv *r, uint64_t rate);
void raid_job_advance(struct raid_priv *r, uint64_t pos);
void raid_job_finish(struct raid_priv *r, int err);
void *raid_scrub_thread(void *arg);

/* Monotonic seconds. */
double raid_now(void);

/* Slots that serve reads (ACTIVE), for the level hooks. */
uint32_t raid_active_mask(struct raid_priv *r);

/* The reconstruct and scrub hooks of the copy levels raid1 and raid10 (copies.c). */
int raid_copies_reconstruct(struct raid_priv *r, uint32_t slot, uint64_t member_off, uint64_t len,
                            void *buf);
int raid_copies_scrub(struct raid_priv *r, uint64_t member_off, uint64_t len, bool repair,
                      uint64_t *mismatches);

#endif
