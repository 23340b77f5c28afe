/* Internal interface of the RAID engine: the per-level table (the level registry), the
 * precomputed layout, the state of an open raid device and the lock order. */
#ifndef RK_RAID_INT_H
#define RK_RAID_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raidkit/raid.h"

/*
 * A zone of a striped or concatenated layout: array bytes [array_start, array_start+array_len)
 * are striped chunk by chunk, in slot order, across slots[0..nslots-1], starting at byte
 * member_start of each of those slots' data areas. linear uses one zone per slot (nslots 1),
 * raid0 one zone per distinct data size (md "zones").
 */
struct raid_zone {
    uint64_t array_start;
    uint64_t array_len;
    uint64_t member_start;
    uint32_t nslots;
    uint8_t slots[RK_MAX_MEMBERS];
};

/* Everything the mapping needs, computed once from a geometry by the level's setup(). */
struct raid_layout {
    struct rk_raid_geom g;
    const struct raid_level *lvl;
    uint64_t size;     /* array bytes */
    uint64_t min_data; /* smallest data_size over the slots */
    /* Member data-area bytes [0, member_used) the layout uses on its widest slot: the range a
     * background job (rebuild, scrub) walks. raid_layout_init presets min_data rounded down
     * to the chunk (every slot uses the same rows); setup() overrides it when the layout uses
     * more (linear, raid0: the largest slot) or less (raid1, raid10: the rows the array
     * fills). */
    uint64_t member_used;
    uint32_t nzones; /* linear/raid0 only */
    struct raid_zone zones[RK_MAX_MEMBERS];
};

struct raid_priv;
struct raid_rangelock;
struct raid_badtab;
struct raid_job;
struct raid_bitmap;

/*
 * One RAID level (SPDK's raid_bdev_module): the registry (geom.c) lists one table per level,
 * and the generic engine (engine.c), the jobs and the public functions reach a level only
 * through it. Every table fills level, name, min_members, max_failed, setup, map, survives and
 * rw; the other hooks are optional (NULL).
 */
/* Modes of the level's scrub hook (struct raid_level .scrub). */
#define RAID_SCRUB_REPAIR 1u
#define RAID_SCRUB_RESYNC 2u

struct raid_level {
    int level;            /* enum rk_level, stored in the superblock */
    const char *name;     /* "raid1"; rk_level_parse also takes "1" for a name "raid1" */
    uint32_t min_members; /* smallest member count (rk_raid_geom_check, rk_level_min_members) */
    /* Members that may be missing while all data stays reachable (guaranteed). */
    int (*max_failed)(uint32_t members);
    /* Fill l->size (and zones, member_used) from l->g, which is already checked. */
    void (*setup)(struct raid_layout *l);
    /* Map array offset off (< l->size); see rk_raid_map. Levels with a reconstruct hook place
     * array data at non-decreasing member offsets (raid_write_begin relies on it). */
    int (*map)(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies, int max,
               uint64_t *run);
    /* True when every array byte has a copy on a slot in alive (bit i = slot i usable). */
    bool (*survives)(const struct raid_layout *l, uint32_t alive);
    /*
     * The request path: read, write, discard or write-zeroes of array range [off, off+len),
     * already validated by the rk_dev wrappers (buf is NULL for DISCARD and WRITE_ZEROES; flags
     * as in struct rk_io). The copy levels use raid_copies_rw (copies.h); parity levels their
     * own, with stripe locking. Writes take the range lock while a job runs (raid_write_begin).
     * Returns 0 or -errno (-EIO when some data reached no copy or could not be read).
     */
    int (*rw)(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
              uint32_t flags);
    /*
     * Copy levels (map() returns every copy), for raid_copies_reconstruct/scrub: what slot
     * holds at data-area offset member_off. Returns 1 and sets *aoff to the array offset held
     * there, or 0 when the layout leaves that place unused (raid10's last row with an odd
     * member count, rows past the array); either way *run = bytes from member_off (1..len)
     * with the same answer, contiguous in the array and on each slot that map(*aoff) names
     * (one read per copy serves the run). NULL elsewhere.
     */
    int (*unmap)(const struct raid_layout *l, uint32_t slot, uint64_t member_off, uint64_t len,
                 uint64_t *aoff, uint64_t *run);
    /*
     * Rebuild and scrub hooks, in member data-area coordinates (both chunk aligned):
     * reconstruct() fills buf with what slot should hold at [member_off, member_off+len) computed
     * from the other ACTIVE slots (never from slot itself); scrub() checks that range on every
     * slot for consistency (copies equal / parity matches), adds the number of mismatched
     * chunks (copy levels) or stripes (parity levels) to *mismatches and, with repair, rewrites
     * the copies/parity from the data. Both return 0 or -errno (-EIO when the data cannot be
     * reconstructed). Callers hold the range lock for the range (raid_range_lock). NULL
     * reconstruct: the level has no redundancy (no rebuild; its writes take no range lock);
     * NULL scrub: a scrub only reads every member.
     */
    /* scrub's mode: 0 checks; RAID_SCRUB_REPAIR repairs what the level can tell (scrub
     * --repair); RAID_SCRUB_REPAIR | RAID_SCRUB_RESYNC also makes a stripe consistent where a
     * mismatch cannot be located (a resync after a crash: the data is what was written, so the
     * parity is rewritten from it; a user's repair leaves such a stripe as it is, so the
     * evidence stays for when the member is back). */
    int (*reconstruct)(struct raid_priv *r, uint32_t slot, uint64_t member_off, uint64_t len,
                       void *buf);
    int (*scrub)(struct raid_priv *r, uint64_t member_off, uint64_t len, unsigned mode,
                 uint64_t *mismatches);
    /* Optional: set up r->level_priv once the layout is known (stripe locks, buffers), before
     * any request; close() frees it. Returns 0 or -errno. */
    int (*open)(struct raid_priv *r);
    void (*close)(struct raid_priv *r);
    /* Optional: replay (with replay) and start the level's write log; see rk_raid_log_start.
     * Called once, before any write. Returns 0 or -errno. */
    int (*log_start)(struct raid_priv *r, int mode); /* mode: RK_LOG_* */
    /* Optional: a member has just been put into slot (rk_raid_add_member; the slot is
     * REBUILDING, no job runs): raid5/6 void whatever the member's own partial parity log holds
     * (a returning member's entries from before it left) before it can ever be read at a
     * replay. Returns 0, or -EIO when that failed (the slot was failed). */
    int (*log_join)(struct raid_priv *r, uint32_t slot);
    /* Optional: write out what the level holds in memory for array range [off, off+len)
     * (raid5/6 stripe gathering; len UINT64_MAX: everything), called holding nothing before a
     * flush reaches the members, before block status and at close. A whole drain returns -EIO
     * when a held, acknowledged write was lost since the last whole drain, else 0. */
    int (*drain)(struct raid_priv *r, uint64_t off, uint64_t len);
    /* Optional: around the member flush of a FLUSH request, after its drain (raid5/6: the
     * partial parity log retires the entries that flush made durable, raid5_ppl.c). begin fills
     * mark (RK_MAX_MEMBERS values); end runs only when the member flush succeeded. */
    void (*flush_begin)(struct raid_priv *r, uint64_t *mark);
    void (*flush_end)(struct raid_priv *r, const uint64_t *mark);
    /* True for levels whose stripes can be left inconsistent by a crash in a way that a
     * degraded start cannot detect or repair (the RAID5/6 write hole): a dirty and degraded
     * start of such a level needs --force. */
    bool write_hole;
};

/*
 * Lock order of a raid device (outer first: a thread holding one may take a later one, never
 * wait for an earlier one):
 *
 *   0. the write-intent bitmap's lock (bitmap.h): a write that must set a region's bit takes
 *      it (and waits for the FUA area write, which runs without it) before it takes any
 *      range. Never taken while holding anything below, except a job step's range (a scrub
 *      repair, raid_bitmap_begin_member): whoever holds this lock never waits for a range.
 *   1. a member data-area range (rangelock.h): held across member I/O by a job step, and by a
 *      foreground write while a job runs; nobody waits for a second range while holding one.
 *   2. a level's own locks and buffers (r->level_priv: raid5/6 stripe locks, buffer pool): a
 *      write takes its range (raid_write_begin) before any of them, since a job step that
 *      holds a range needs them to make progress.
 *   3. job->lock (job.c: job slot, progress): a step holding a range takes it to count
 *      (raid_job_count); rk_raid_add_member takes r->fail_lock inside it (raid_job_idle_do).
 *      Never held while waiting for a range, for the drain of unlocked writes or for a job
 *      thread to end.
 *   4. leaves, held briefly and never across I/O or a callback: r->fail_lock (serialises
 *      rk_raid_fail_slot's "would this lose data" check and slot replacement), rangelock->lock
 *      (the range list, the drain of unlocked writes), badtab->lock (bad-range appends,
 *      drops and listing), r->rec_lock (the move to FAILED and the end of its recording).
 *
 * Waiting for a failure to be recorded (raid_fail_settle, on r->rec_cond) happens only at the
 * end of a request, after the level's rw hook returned, so the waiter holds none of these;
 * raid_fail itself never waits for another thread's recording.
 *
 * raid_fail's member_failed callback runs with no lock of this list held, except possibly a
 * range (a failed write or repair inside a job step or a locked write) and, on raid5/6, the
 * stripe lock and pool buffer of the write that failed; it must not do I/O through the raid
 * device. Slot states and the
 * bad-range entries are read lock-free on the data path. A job thread is stopped and joined
 * (rk_raid_job_stop/wait, engine close) only by a thread that holds none of these and is not
 * the job thread itself (rebuild_checkpoint and rebuild_done run on it).
 */

/* The state of one open raid device (rk_dev.priv). */
struct raid_priv {
    struct raid_layout l;                   /* constant after open */
    struct rk_dev *members[RK_MAX_MEMBERS]; /* NULL = missing; owned by the caller */
    _Atomic int state[RK_MAX_MEMBERS];      /* enum rk_slot_state */
    struct rk_raid_events ev;               /* member_failed NULL when no callback */
    _Atomic uint32_t rr;                    /* round-robin tie breaker for reads */
    pthread_mutex_t fail_lock;              /* serialises rk_raid_fail_slot's "would this lose
                                             * data" check; never held across a callback */
    void *level_priv;                       /* parity levels: stripe locks, caches */
    /* Parity in a region the write-intent bitmap marks unsynced is not rebuilt from
     * (rk_raid_distrust_unsynced: a read-only start of a dirty array; set before serving). */
    bool distrust_unsynced;
    struct raid_rangelock *rl; /* range lock (rangelock.h) */
    struct raid_badtab *bad;   /* recorded unreadable ranges (badrange.h) */
    struct raid_job *job;      /* background job slot (job.h) */
    /* Failure recording (raid_fail, raid_fail_settle): rec_lock is a leaf guarding the move to
     * FAILED and the end of a recording; rec_cond is signalled when a recording ends. */
    pthread_mutex_t rec_lock;
    pthread_cond_t rec_cond;
    _Atomic uint32_t rec_pending; /* FAILED slots whose member_failed has not returned yet */
    _Atomic bool writes_stopped;  /* a failure could not be recorded: writes, flushes -EIO */
    struct raid_bitmap *bm;       /* write-intent bitmap (bitmap.h), NULL = none */
    /* Members put into each slot since open (rk_raid_add_member; raised before the slot turns
     * REBUILDING): a level's state of a slot's member (raid5/6: its log ring) is current only
     * for the same device and count, since a returning member may be the same device. */
    _Atomic uint32_t joins[RK_MAX_MEMBERS];
};

extern const struct raid_level raid_level_linear;
extern const struct raid_level raid_level_raid0;
extern const struct raid_level raid_level_raid1;
extern const struct raid_level raid_level_raid10;
extern const struct raid_level raid_level_raid5;
extern const struct raid_level raid_level_raid6;

/* The device operations of a raid device (engine.c); raid_priv_of tests for them. */
extern const struct rk_dev_ops raid_dev_ops;

/* The raid state of dev, or NULL when dev is not a raid device (or NULL). */
static inline struct raid_priv *raid_priv_of(struct rk_dev *dev)
{
    return dev && dev->ops == &raid_dev_ops ? dev->priv : NULL;
}

/*
 * Move slot to FAILED after a member error (enum rk_slot_state); the thread that makes the
 * transition runs the member_failed callback, so it runs once per transition whichever path saw
 * the error first. error 0 means an administrator asked (rk_raid_fail_slot). Caller holds no
 * engine lock but may hold a range (and a level's stripe lock). The slot is FAILED for routing
 * at once and counts as "recording" (rec_pending) until the callback returns; it never waits
 * for another thread's recording. Returns the callback's result when this call made the
 * transition (0 = recorded; -errno = recorded nowhere: the array stops taking writes), else 0.
 * Defined in fail.c, used by every level.
 */
int raid_fail(struct raid_priv *r, uint32_t slot, int error);

/*
 * The completion rule of every write, write-zeroes, discard and flush (fail.c): a request
 * whose result ret may rest on a slot having FAILED (it skipped the slot, or lost it) must not
 * complete before that failure is recorded. Waits, holding no lock, until every slot that was
 * recording when called has finished, then returns ret, or -EIO when some failure could not be
 * recorded (writes stopped). Lock-free when nothing is recording.
 */
int raid_fail_settle(struct raid_priv *r, int ret);

/*
 * One round of op (len bytes at byte offset off of every member, from buf when op is WRITE;
 * flags as in struct rk_io) on every slot that takes writes, in parallel (fail.c). A slot
 * whose I/O fails is failed (raid_fail). Returns 0 when the slots left still hold all data,
 * else -EIO. The caller applies raid_fail_settle where a request's completion depends on it.
 */
int raid_members_round(struct raid_priv *r, enum rk_op op, const void *buf, uint64_t len,
                       uint64_t off, uint32_t flags);

/* allocmap.c: the raid device's rk_dev_ops.map (device.h; holes only where every readable copy,
 * or on raid5/6 every readable member over whole stripe rows, is a hole; -EIO when a member
 * cannot answer, which rk_dev_map turns into "data") and zero_fast (copy levels whose writable
 * members all zero fast; never raid5/6). */
int raid_alloc_map(struct rk_dev *dev, uint64_t off, uint64_t len, uint64_t *extent_len,
                   bool *is_hole);
bool raid_alloc_zero_fast(struct rk_dev *dev);
/* The registry's table entry of a level, or NULL for an unknown level. */
const struct raid_level *raid_level_get(int level);

/* Build the layout of geometry g into *l; -EINVAL when g is invalid (rk_raid_geom_check). */
int raid_layout_init(struct raid_layout *l, const struct rk_raid_geom *g);

/* The zone mapper shared by linear and raid0: map off through l->zones (see map()); runs end at
 * the zone's end (run_to_zone_end) or at the chunk's. Returns 1. */
int raid_zone_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies, int max,
                  uint64_t *run, bool run_to_zone_end);

/* Smallest data size over the slots of g, in bytes. */
static inline uint64_t raid_min_data(const struct rk_raid_geom *g)
{
    uint64_t m = g->data_size[0];
    for (uint32_t i = 1; i < g->members; i++)
        if (g->data_size[i] < m)
            m = g->data_size[i];
    return m;
}

/* Slot-state sets for raid_slot_mask(): bit s = enum rk_slot_state s. */
#define RAID_STATES_READ  (1u << RK_SLOT_ACTIVE)
#define RAID_STATES_WRITE ((1u << RK_SLOT_ACTIVE) | (1u << RK_SLOT_REBUILDING))

/* Slots (bit i = slot i) that have a member and whose state is in states (RAID_STATES_READ:
 * ACTIVE slots, which serve reads; RAID_STATES_WRITE: ACTIVE and REBUILDING slots, which take
 * writes so a rebuild sees new data). Lock-free: a snapshot of the atomic slot states. */
static inline uint32_t raid_slot_mask(struct raid_priv *r, uint32_t states)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < r->l.g.members; i++) {
        int s = atomic_load(&r->state[i]);
        if (r->members[i] && s >= 0 && s < 32 && (states & (1u << s)))
            m |= 1u << i;
    }
    return m;
}

/* Every slot of an array of members slots (bit i = slot i). */
static inline uint32_t raid_all_mask(uint32_t members)
{
    return members >= 32 ? 0xffffffffu : (1u << members) - 1;
}

#endif
