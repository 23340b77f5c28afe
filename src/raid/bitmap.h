/*
 * The write-intent bitmap of a raid device (docs/FORMAT.md "Write-intent bitmap",
 * docs/ARCHITECTURE.md "What is durable when"): a generic layer of the engine, for every level.
 * The member data area is cut into regions of bm->region bytes (member data-area offsets, the
 * coordinates of rebuild, scrub and resync). Each region has one atomic state word: bit
 * BM_SET = its bit is durable in the on-disk area of every writable member, the low bits = the
 * writes (and resync pins) in flight in it. A foreground write, discard or write-zeroes
 * (engine.c) counts itself in every region it touches before it reaches the level
 * (raid_bitmap_begin): an already-set region costs one compare-and-swap; otherwise the region's
 * bit is written FUA to every writable member first (bm_sync: one area write at a time, shared
 * by every writer that queued meanwhile). Once writes have set the bits of BM_AHEAD_RUN regions
 * one after the other (a sequential stream), the next one set also sets the bits of the regions
 * ahead of it, up to BM_AHEAD_BYTES of member data, in the same area write; and once a write of
 * the stream ends in the second half of that window, the cleaner thread sets the next window in an
 * area write of its own (no request waits for it), while the stream goes on through the regions
 * already set: a stream then stops for an area write only at its start, not once per window (on an
 * HDD each area write is two seeks, tens of ms with the stream's writes queued). A cleaner thread
 * clears a region's bit once nothing ran in it for the idle time and a flush of the members
 * completed after its last write, and only while every slot is ACTIVE (raid_bitmap_degraded), after
 * the volume recorded the clear's event count (rk_raid_events.bitmap_clearing). That member flush
 * runs inside the level's flush hooks (raid5/6 retire their log entries, as after a client
 * FLUSH); while degraded it still runs, once per idle transition.
 *
 * The same regions also record what a resync has not reached yet (bm->unsynced), with or without
 * an on-disk bitmap: reads of copy levels take the first live copy there (copies_rw.c), the copy
 * resync copies from, so two reads never disagree.
 *
 * Lock order (raid_int.h): bm->lock is taken by a writer before its range lock, and by a scrub
 * repair step holding its range (raid_bitmap_begin_member: a holder of bm->lock never waits for
 * a range); nobody holds it across member I/O (the area write drops it); the area writer
 * may call raid_fail. Nothing else.
 */
#ifndef RK_RAID_BITMAP_H
#define RK_RAID_BITMAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raid/bitmap_disk.h"
#include "raid/raid_int.h"

#define BM_SET 0x80000000u /* state word: the region's bit is durable on disk */
/* A stream's look-ahead: member data-area bytes of regions set ahead of it (at least one region,
 * at most BM_AHEAD_MAX regions). */
#define BM_AHEAD_BYTES (4u << 20)
#define BM_AHEAD_MAX   64u
#define BM_AHEAD_RUN   4u

/* Regions a look-ahead covers with regions of `region` bytes (also the HDD model's). */
static inline uint64_t bm_ahead_regions(uint64_t region)
{
    uint64_t n = BM_AHEAD_BYTES / region;
    return n < 1 ? 1 : n > BM_AHEAD_MAX ? BM_AHEAD_MAX : n;
}

/* unsynced[] values */
#define BM_SYNCED   0u
#define BM_UNSYNCED 1u /* a resync must still reach the region */
#define BM_PINNED   2u /* unsynced, and its on-disk bit is pinned (counted in state) */

struct bm_wait; /* bitmap.c: a caller waiting for an area write */

struct raid_bitmap {
    uint64_t region;   /* member data-area bytes per region (power of two, >= chunk) */
    uint64_t nregions; /* regions over the largest data area */
    uint64_t area_off; /* member byte offset of the on-disk area; 0 = no on-disk bitmap */
    uint64_t area_size;
    pthread_mutex_t lock;    /* area image and area writes; the cleaner's wait */
    pthread_cond_t cond;     /* CLOCK_MONOTONIC: wakes the cleaner early (stop) */
    uint8_t *area;           /* the image of the bits (header encoded into wbuf per write) */
    uint8_t *wbuf;           /* aligned copy being written (bm_sync's one writer) */
    struct bm_wait *wq_head; /* bm_sync_gen's callers, in arrival order */
    struct bm_wait *wq_tail;
    uint64_t gen_want;  /* image changes asked to be durable */
    uint64_t gen_done;  /* ... made durable by the last completed area write */
    int gen_err;        /* result of that write */
    bool writing;       /* an area write runs (bm->lock released meanwhile) */
    bool img_sets;      /* the image gained a set bit since the last area write began */
    uint64_t ahead_end; /* one past the last region whose bit a write set (or looked ahead to) */
    uint32_t ahead_run; /* regions set in order up to ahead_end: a stream once >= BM_AHEAD_RUN */
    /* A stream's write that ends in a region >= refill_at sets the next look-ahead window
     * (bm_refill); UINT64_MAX: none armed. Written under lock, read without it. */
    _Atomic uint64_t refill_at;
    bool refill_req; /* the cleaner sets the next window (bm_refill_locked) */
    struct rk_bm_hdr hdr;
    _Atomic uint32_t *state;    /* per region: BM_SET | writes in flight */
    _Atomic uint32_t *last;     /* per region: cleaner tick of the last write start/end */
    _Atomic uint8_t *unsynced;  /* per region: BM_SYNCED / BM_UNSYNCED / BM_PINNED */
    _Atomic int resync_pending; /* some region is still unsynced */
    _Atomic uint32_t tick;      /* cleaner ticks (bm->tick_ms each) */
    uint32_t idle_ticks;        /* ticks without a write before a bit may be cleared (>= 2) */
    uint64_t tick_ms;
    uint32_t *cand;      /* cleaner scratch: candidate regions */
    uint32_t flush_tick; /* cleaner: tick at which its last successful member flush began */
    bool flushed;        /* ... one did (flush_tick is valid) */
    pthread_t cleaner;
    bool has_cleaner;
    bool stop;
    /* area writes that set / cleared bits (tests, status, the benchmark model) */
    _Atomic uint64_t sets, clears;
    _Atomic uint64_t bits_set; /* bits set in the image since attach (regions a write dirtied, and
                                * those a stream's look-ahead set) */
};

/* A write's hold on its regions, on the caller's stack (raid_bitmap_begin/end). */
struct raid_bm_hold {
    uint64_t first, last; /* regions [first, last]; first > last = none held */
};

/*
 * Count a foreground write of array range [off, off+len) in the regions it touches on any
 * slot, making each region's bit durable on the members first when it is not yet (FUA writes
 * of the area). Lock-free when every bit is already set. Returns 0 (end with raid_bitmap_end),
 * or -EIO when the area could be written to too few members (nothing is held then).
 */
int raid_bitmap_begin(struct raid_priv *r, uint64_t off, uint64_t len, struct raid_bm_hold *h);
void raid_bitmap_end(struct raid_priv *r, struct raid_bm_hold *h);

/*
 * The same for member data-area range [member_off, member_off+len) (a job's coordinates): a
 * scrub repair step counts itself in its regions, their bits durable (one area write for the
 * span) before its repair writes reach a member. May be called holding the step's range: a
 * holder of bm->lock never waits for a range, so this order cannot deadlock. Returns 0 (end
 * with raid_bitmap_end) or -EIO (nothing held).
 */
int raid_bitmap_begin_member(struct raid_priv *r, uint64_t member_off, uint64_t len,
                             struct raid_bm_hold *h);

/* Cheap pre-check: a resync is pending (some region unsynced). Lock-free. */
static inline bool raid_bitmap_resyncing(struct raid_priv *r)
{
    return r->bm && atomic_load_explicit(&r->bm->resync_pending, memory_order_acquire);
}

/* True while a resync runs or is pending and a region of member data-area range
 * [member_off, member_off+len) is not synced yet. Lock-free. */
bool raid_bitmap_unsynced(struct raid_priv *r, uint64_t member_off, uint64_t len);

/* The resync reached the end of region i: mark it synced and release its pin. */
void raid_bitmap_synced(struct raid_priv *r, uint64_t i);

/* Mark every region that ends after member offset from unsynced (a full resync). */
void raid_bitmap_mark_all(struct raid_priv *r, uint64_t from);

/*
 * A member just joined a slot (REBUILDING, rk_raid_add_member): write the current area image
 * (every bit set now, a new event count) FUA to every writable member, the new one included, so
 * it carries the write-intent bitmap from its join on, not only from the next bit change: a
 * member that leaves again right after its rebuild must bring a valid area to its re-add
 * (docs/FORMAT.md "Re-add"). A no-op without an on-disk bitmap. Takes bm->lock. Returns 0, or
 * -EIO when the slots left no longer hold all data (a member that fails the write is failed).
 */
int raid_bitmap_join(struct raid_priv *r);

/* True while some slot is not ACTIVE (failed, missing, rebuilding, being re-added): the
 * cleaner then clears no bit, so every write since a member left stays recorded for its
 * re-add, however many members are away (docs/ARCHITECTURE.md "Re-add"). Lock-free. */
bool raid_bitmap_degraded(struct raid_priv *r);

/* True when region i's bit is set on disk now (a write since the last clear). Lock-free;
 * false without a bitmap or for i >= nregions. */
bool raid_bitmap_region_set(struct raid_priv *r, uint64_t i);

/* Flush every writable (ACTIVE or REBUILDING) member inside the level's flush_begin/flush_end
 * hooks (raid_int.h; raid5/6 retire the log entries the flush made durable; flush_end runs only
 * when every member flush succeeded); false when one flush failed. */
bool raid_flush_writable(struct raid_priv *r);

/* Engine close: stop the cleaner; after a final flush clear every idle unpinned bit on the
 * members (a clean stop leaves only what a resync still needs), free r->bm. NULL-safe. */
void raid_bitmap_destroy(struct raid_priv *r);

#endif
