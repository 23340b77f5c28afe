/* raidkit RAID engine: a device built from member devices by a RAID level's layout.
 * One generic engine plus one small file per level (src/raid/), behind a per-level table. */
#ifndef RAIDKIT_RAID_H
#define RAIDKIT_RAID_H

#include <stdbool.h>
#include <stdint.h>

#include "raidkit/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RAID levels; the numbers are stored in the superblock (docs/FORMAT.md). */
enum rk_level {
    RK_LEVEL_LINEAR = -1,
    RK_LEVEL_RAID0 = 0,
    RK_LEVEL_RAID1 = 1,
    RK_LEVEL_RAID5 = 5,
    RK_LEVEL_RAID6 = 6,
    RK_LEVEL_RAID10 = 10,
};

/* Default chunk size in bytes; chunks are powers of two >= RK_CHUNK_MIN. */
#define RK_CHUNK_DEFAULT (64u * 1024u)
#define RK_CHUNK_MIN     4096u
#define RK_CHUNK_MAX     (64u * 1024u * 1024u)

/*
 * Array geometry, as stored in the superblocks. Pure data: mapping functions below use nothing
 * else, so they can be tested against a reference.
 */
struct rk_raid_geom {
    int level;                          /* enum rk_level */
    uint32_t members;                   /* number of slots, 1..RK_MAX_MEMBERS */
    uint32_t chunk;                     /* chunk size in bytes (power of two) */
    uint64_t data_offset;               /* bytes from member start to its data area */
    uint64_t data_size[RK_MAX_MEMBERS]; /* usable data bytes of each slot (chunk multiple) */
    /* raid5/raid6 partial parity log (docs/FORMAT.md "Partial parity log"): the region
     * [ppl_offset, ppl_offset + ppl_size) of every member's metadata area (bytes, 4 KiB aligned,
     * below data_offset) and the generation stamped in its blocks. ppl_size 0: no log. The log
     * is used only once rk_raid_log_start has run. */
    uint64_t ppl_offset, ppl_size, ppl_id;
};

/* Parse "linear", "0", "raid0", "1", "raid1", "10", "raid10", "5", "raid5", "6", "raid6".
 * Returns 0 and *level, or -EINVAL. */
int rk_level_parse(const char *s, int *level);
/* "linear", "raid0", ... ; "unknown" for a bad value. */
const char *rk_level_name(int level);
/* Smallest member count the level accepts (linear 1, raid0 1, raid1 2, raid10 2, raid5 3,
 * raid6 4), or -EINVAL for an unknown level. */
int rk_level_min_members(int level);
/* How many members may be missing while the array still holds all data (raid1: members-1,
 * raid10: 1 guaranteed, raid5: 1, raid6: 2, linear/raid0: 0). */
int rk_level_max_failed(int level, uint32_t members);
/* True when the level has a write hole: a crash can leave a stripe's parity stale, and with a
 * member missing the stale parity would reconstruct garbage (raid5, raid6). False for the
 * other levels and for an unknown level. */
bool rk_level_write_hole(int level);

/*
 * Check a geometry for consistency (level known, member count in range for the level, chunk a
 * power of two in [RK_CHUNK_MIN, RK_CHUNK_MAX], data sizes multiples of chunk and non-zero).
 * Returns 0 or -EINVAL with a reason in err.
 */
int rk_raid_geom_check(const struct rk_raid_geom *g, char *err, size_t errlen);

/* Array size in bytes for g, by the rules of docs/FORMAT.md "Array size" (unequal members
 * included). 0 when g is invalid. */
uint64_t rk_raid_array_size(const struct rk_raid_geom *g);

/* Does every array byte of geometry g keep a copy (or enough of its stripe to reconstruct it)
 * when only the slots in alive (bit i = slot i) are usable? The level decides (raid10 survives
 * losses on different mirrors beyond rk_level_max_failed). Returns 1 (yes), 0 (no) or -EINVAL
 * for an invalid geometry. */
int rk_raid_geom_survives(const struct rk_raid_geom *g, uint32_t alive);

/* One copy of array data on a member: slot and byte offset inside the slot's data area
 * (add g->data_offset for the member device offset). */
struct rk_raid_extent {
    uint32_t slot;
    uint64_t member_off;
};

/*
 * Map the data byte at array offset off (< rk_raid_array_size) to its copies. Fills up to max
 * extents (raid1: one per member, raid10: 2, others 1; parity is not included) and sets *run
 * to the number of bytes from off that map contiguously to the same slots (to the end of the
 * chunk or zone). Returns the number of copies, or -EINVAL when off is out of range.
 */
int rk_raid_map(const struct rk_raid_geom *g, uint64_t off, struct rk_raid_extent *copies, int max,
                uint64_t *run);

/* Slot states (also stored per slot in the superblock, docs/FORMAT.md). */
enum rk_slot_state {
    RK_SLOT_ACTIVE = 0,
    RK_SLOT_FAILED = 1,
    RK_SLOT_SPARE = 2,
    RK_SLOT_REBUILDING = 3,
    RK_SLOT_MISSING = 4, /* in-memory only: no device given at assembly */
};

/* Callbacks from the engine to the metadata layer. */
struct rk_raid_events {
    void *ctx;
    /*
     * Slot failed (a write error, an unrecoverable read error, or rk_raid_fail_slot with error
     * 0): persist it — mark it failed in the other members' superblocks and raise the event
     * counter, with writes that are durable (FUA or flush) before returning. Called once per
     * move to FAILED, from an I/O thread; may block on I/O. It may run with a member range lock
     * held and, on raid5/6, a stripe lock (a write failure inside a stripe update), so it must
     * never issue I/O through the raid device itself nor wait for another raid request.
     * Returns 0 when the failure is durable on the surviving members (at least one superblock
     * with the raised event counter was written and flushed, so the failed member is stale at
     * the next assembly), else -errno (no superblock could be written). Until it returns, every
     * write, write-zeroes, discard and flush of the array is held before completing; a nonzero
     * result fails them with -EIO and the array refuses writes and flushes (-EIO) from then on
     * (reads continue) until it is reopened. NULL callback: failures count as recorded.
     * (Changed from a void return: 0 keeps the old behaviour.)
     */
    int (*member_failed)(void *ctx, uint32_t slot, int error);
    /* Rebuild of slot reached offset (bytes of its data area now in sync and flushed on the
     * member): persist it as the slot's rebuild offset so a restart resumes there. Called from
     * the rebuild thread, outside engine locks; may block on I/O. NULL = not persisted. */
    void (*rebuild_checkpoint)(void *ctx, uint32_t slot, uint64_t offset);
    /* Rebuild of slot ended: result 0 = complete (the slot is ACTIVE now: persist that), else
     * -errno (stopped: -EINTR after a final checkpoint; failed: the slot stays REBUILDING or
     * FAILED). Called once per rebuild from the rebuild thread. */
    void (*rebuild_done)(void *ctx, uint32_t slot, int result);
    /* Resync (rk_raid_resync_start) reached member data offset: everything below is in sync and
     * flushed on the members; persist it so that a restart after a clean stop resumes there.
     * From the resync thread, outside engine locks; may block on I/O. NULL = not persisted. */
    void (*resync_checkpoint)(void *ctx, uint64_t offset);
    /* Resync ended: 0 = every marked region is in sync (persist "no resync needed"), else
     * -errno (-EINTR: stopped after a final checkpoint). Once per resync, from its thread. */
    void (*resync_done)(void *ctx, int result);
    /* The write-intent bitmap is about to clear bits (every slot ACTIVE, the regions idle and
     * flushed): persist the array's current event count as the count at which bits were last
     * cleared (docs/FORMAT.md "Re-add"), durably, before returning. 0 = recorded (the bits
     * are cleared), -errno = not (they stay set). From the bitmap's cleaner thread or close,
     * outside engine locks; may block on I/O. NULL = nothing to record. */
    int (*bitmap_clearing)(void *ctx);
};

/*
 * Build a RAID device over members (array of g->members device pointers; NULL = missing or
 * failed slot). Member devices stay owned by the caller (close them after rk_dev_close of the
 * raid device). The raid device's block size is the largest member block size; its size is
 * rk_raid_array_size(g). Degraded start is the caller's decision: this fails with -ENODEV only
 * when the missing slots leave data unreachable. ev may be NULL.
 * Returns 0 and *out, -EINVAL (bad geometry, member too small), -ENODEV, -ENOMEM.
 */
int rk_raid_open(const struct rk_raid_geom *g, struct rk_dev *const *members,
                 const struct rk_raid_events *ev, struct rk_dev **out);

/*
 * Start the level's write log of a raid device opened with one (raid5/raid6 with a partial
 * parity log), before the first write: with replay (the last shutdown was unclean), every valid
 * entry newer than the log's durable retirement point is replayed first, so stripes a crash
 * left half written get parity that matches their data (docs/FORMAT.md "Partial parity log");
 * then the log restarts empty. Read-only volumes call it only with RK_LOG_CHECK. Returns
 * 0 (also for levels and arrays without a log) or -errno (a member failed to take the log's
 * writes, or memory ran out); problems with single entries are logged and the entry ignored.
 * mode: 0 (no replay), RK_LOG_REPLAY (true), RK_LOG_REPLAY | RK_LOG_FORCE, or RK_LOG_CHECK
 * alone: read the log of every readable member and write nothing (a read-only open of a dirty
 * array): 0 when it holds no live entry, i.e. no write was in flight at the crash, so every
 * stripe is consistent as far as the log can tell; -EUCLEAN when one is live (it must be
 * replayed); -EBADMSG when a log head is corrupt (none of its entries can be told retired), or
 * when no entry is live but a log region cannot be read or a block of it is corrupt (it could
 * have held a live one). After -EUCLEAN the device refuses (-EIO) any read that needs parity in
 * a stripe of a live entry, after -EBADMSG in any stripe (a read-only start cannot replay the
 * log, and a torn stripe would rebuild garbage); reads of present data chunks are unaffected.
 * Without
 * RK_LOG_FORCE, a degraded replay that cannot prove a logged window consistent (a chunk the
 * write modified is missing while another chunk modified at the same column is present, or
 * raid6 keeps both parities of it) returns -EUCLEAN and leaves the log as it was (the next
 * start replays it again); with it, those windows keep their parity and the log restarts.
 */
#define RK_LOG_REPLAY 1
#define RK_LOG_FORCE  2
#define RK_LOG_CHECK  4
int rk_raid_log_start(struct rk_dev *raid, int mode);

/*
 * raid5/raid6 started read-only after an unclean shutdown, before the first request: no resync
 * runs (nothing is written), so the parity of the regions the write-intent bitmap marks
 * unsynced may be stale, and nothing vouches for it when the array has no partial parity log,
 * or a resync an earlier (forced) start left unfinished is pending. From this call on, a read
 * that must rebuild a chunk from parity in such a region (a member missing, failed, or with a
 * read error) fails with -EIO instead of returning what stale parity gives; reads of present
 * chunks are unaffected. Other levels, and arrays without an attached bitmap: no effect.
 * Returns 0, or -EINVAL when raid is not a raid device.
 */
int rk_raid_distrust_unsynced(struct rk_dev *raid);

/* Current state of slot (enum rk_slot_state) of a raid device; -EINVAL for a bad slot. */
int rk_raid_slot_state(struct rk_dev *raid, uint32_t slot);

/* Mark slot failed (as if it had failed a write); the member_failed callback runs.
 * Returns 0, -EINVAL (bad slot), -EBUSY (the array would lose data: refused), or the
 * callback's -errno (the failure could not be recorded: the array now refuses writes). */
int rk_raid_fail_slot(struct rk_dev *raid, uint32_t slot);

/* Geometry of a raid device (constant). */
const struct rk_raid_geom *rk_raid_geometry(struct rk_dev *raid);

/* The member device in slot (NULL when missing), e.g. for its I/O counters (rk_dev.stats). */
struct rk_dev *rk_raid_member(struct rk_dev *raid, uint32_t slot);

/*
 * Online management (src/raid/job.c, rebuild.c, scrub.c): one background job per array at a
 * time, either a rebuild of one slot or a scrub. Jobs work in member data-area coordinates, in
 * chunk-aligned steps, each step under the range lock that foreground writes of every level
 * also take while a job runs, so a rebuild copy never races a foreground write of the range.
 */

/*
 * Put member into slot, which must be FAILED or MISSING, as REBUILDING: writes go to it, reads
 * never do until its rebuild completes. The member must hold data_offset + data_size[slot]
 * bytes and have a block size <= the array's. The device that held the slot before stays owned
 * by the caller (keep it open until the raid device is closed: I/O may still be in flight).
 * raid5/raid6 with a partial parity log void what the member's own log holds first (a returning
 * member's entries from before it left). Returns 0, -EINVAL (bad slot, member too small or
 * block size too large), -EBUSY (slot not failed/missing, or a job is running), -EOPNOTSUPP
 * (level without redundancy), -EIO (the member's log head could not be written: the slot is
 * FAILED again, holding member).
 */
int rk_raid_add_member(struct rk_dev *raid, uint32_t slot, struct rk_dev *member);

/*
 * Start rebuilding slot (REBUILDING, see rk_raid_add_member) in a background thread from
 * member data offset from (a checkpoint; rounded down to the chunk) with at most rate bytes/s
 * (0 = unlimited). Ranges that cannot be reconstructed (-EIO from every source) are recorded
 * (rk_raid_bad_ranges), never read from the slot, and skipped; when no source is left at all the
 * rebuild stops with -ENODEV. Completion makes the slot ACTIVE, then calls rebuild_done.
 * Returns 0, -EINVAL, -EBUSY (a job is running / slot not REBUILDING), -EOPNOTSUPP, -ENOMEM.
 */
int rk_raid_rebuild_start(struct rk_dev *raid, uint32_t slot, uint64_t from, uint64_t rate);

/*
 * Start a re-add of slot (REBUILDING, see rk_raid_add_member; its member is the slot's old
 * member, whose content was current when it left): like rk_raid_rebuild_start, but only the
 * regions whose write-intent bit is set when the walk reaches them are reconstructed (every
 * write since the member left set one, and no bit is cleared while a slot is not ACTIVE);
 * the rest of the member is kept. Progress says readd, resynced = bytes reconstructed.
 * Returns 0, -ENOENT (no on-disk bitmap attached: nothing proves what changed), else as
 * rk_raid_rebuild_start.
 */
int rk_raid_readd_start(struct rk_dev *raid, uint32_t slot, uint64_t from, uint64_t rate);

/*
 * Start a scrub in a background thread: compare every copy (or parity) of every chunk through
 * the level's scrub hook and count mismatched chunks (stripes for parity levels); with repair,
 * rewrite what the redundancy can tell is wrong: raid1 with 3+ copies by majority, 2 copies
 * from the first live copy (slot order), raid5 parity from the data, raid6 the one block P and
 * Q locate (else parity from the data); a raid6 with one slot gone is checked against the parity
 * left, not repaired. Each mismatch's place: rk_raid_scrub_mismatches. Levels without
 * redundancy read everything and count read errors. rate in bytes/s (0 = unlimited).
 * Returns 0, -EBUSY (a job is running), -ENOMEM.
 */
int rk_raid_scrub_start(struct rk_dev *raid, bool repair, uint64_t rate);

/* Wait for the current job to end; returns its result (0, or -errno). 0 when there is none. */
int rk_raid_job_wait(struct rk_dev *raid);

/* Ask the current job to stop (a rebuild checkpoints first) and wait for it. */
void rk_raid_job_stop(struct rk_dev *raid);

enum rk_raid_job_kind { RK_JOB_NONE = 0, RK_JOB_REBUILD, RK_JOB_SCRUB, RK_JOB_RESYNC };
enum rk_raid_job_state { RK_JOB_IDLE = 0, RK_JOB_RUNNING, RK_JOB_DONE, RK_JOB_FAILED };

/* Progress of the current (or last) job and the result of the last finished scrub. */
struct rk_raid_progress {
    int kind;            /* enum rk_raid_job_kind of the current/last job */
    int state;           /* enum rk_raid_job_state */
    int error;           /* 0 or -errno of a failed/stopped job */
    uint32_t slot;       /* rebuild: target slot */
    bool repair;         /* scrub: repairing */
    uint64_t start;      /* member data offset the job started at (resumed rebuild: > 0) */
    uint64_t pos;        /* member data offset reached */
    uint64_t end;        /* member data offset where the job ends */
    uint64_t rate_limit; /* bytes/s, 0 = unlimited */
    double rate;         /* measured bytes/s since the job started; 0 = none to report yet
                          * (under 1 s) or none at all (a scrub that reads nothing) */
    double eta;          /* seconds left, -1 when unknown */
    uint64_t mismatches; /* scrub: mismatched chunks/stripes so far */
    uint64_t repaired;   /* scrub: of those, rewritten */
    uint64_t bad_ranges; /* rebuild: unreconstructable ranges; scrub: read errors */
    bool scrubbed;       /* a scrub has finished since open: last_* are valid */
    uint64_t last_mismatches, last_repaired, last_errors;
    /* scrub: no copy or parity was left to compare against (a level without redundancy, or
     * raid5/raid6 degraded as far as they tolerate), so its mismatch count means nothing;
     * for the running scrub / the last one */
    bool uncompared, last_uncompared;
    int64_t last_finished; /* unix time of the last scrub's end */
    uint64_t resynced;     /* resync: member data-area bytes resynced (per member) so far */
    bool full;             /* resync: every region (no bitmap to say which), not just marked ones */
    bool readd;            /* rebuild: a re-add (only marked regions; resynced = bytes rebuilt) */
};

/*
 * Write-intent bitmap (src/raid/bitmap.c; area format docs/FORMAT.md "Write-intent bitmap"):
 * one bit per region of region bytes of the member data areas, in an area at area_offset of
 * every member. Before any write, discard or write-zeroes reaches a member, the bits of the
 * regions it touches (on any slot, parity included) are durable on every writable member (FUA
 * writes of the area); a bit is cleared once its region was idle for idle_ms and a flush of the
 * members completed after its last write. Without an area (area_offset 0) only the resync
 * bookkeeping below exists.
 */
struct rk_raid_bitmap_opts {
    uint64_t area_offset; /* member byte offset of the area; 0 = no on-disk bitmap */
    uint64_t area_size;   /* area bytes (>= rk_bm_area_size of the region count) */
    uint64_t region;      /* data-area bytes per bit (power of two >= chunk); 0 = default */
    uint64_t events;      /* the area's event counter so far (raised on every area write) */
    uint8_t uuid[16];     /* array UUID, stored in the area header */
    /* Regions to resync (bit i = byte i/8, bit i%8): their bits stay set on disk until a
     * resync (rk_raid_resync_start with full false) reaches them. NULL = none. */
    const uint8_t *bits;
    /* Regions whose bits are set on disk and stay set (no resync): what a member that is away
     * will need at its re-add. Same encoding; NULL = none. */
    const uint8_t *keep;
    uint32_t idle_ms; /* idle time before a bit is cleared; 0 = 5000 */
};

/* Attach the bitmap to an open raid device before any request (call once). Reads nothing: the
 * caller decoded the members' areas. The area is first written when a bit changes.
 * Returns 0, -EINVAL (not a raid device, already attached, bad region or area size),
 * -EOPNOTSUPP (a level without redundancy), -ENOMEM. */
int rk_raid_bitmap_attach(struct rk_dev *raid, const struct rk_raid_bitmap_opts *o);

/* What the bitmap holds now (status, tests). */
struct rk_raid_bitmap_stats {
    bool on_disk;         /* an area on the members (false: none, or not attached) */
    uint64_t region;      /* bytes per region (0: not attached) */
    uint64_t nregions;    /* regions */
    uint64_t set;         /* regions whose bit is set on disk */
    uint64_t unsynced;    /* regions a resync has still to reach */
    uint64_t area_offset; /* member byte offset of the area (0: no area) */
    uint64_t area_size;   /* bytes of each area write */
    uint64_t area_sets;   /* area writes that set a bit since attach (one per write: the
                           * writers that shared it count once) */
    uint64_t area_clears; /* area writes that cleared bits since attach */
    uint64_t bits_set;    /* bits set since attach (each a clear region a write entered) */
};

/* Fill *s (all zero without a bitmap). Returns 0 or -EINVAL. */
int rk_raid_bitmap_stats(struct rk_dev *raid, struct rk_raid_bitmap_stats *s);

/* Stripe gathering of raid5/raid6 (src/raid/raid5_gather.c; docs/ARCHITECTURE.md "Stripe
 * gathering"): its setting and counters since open (status, tests, benchmarks). A write-out
 * writes one held stripe to the members: whole (one full-stripe write, no reads, no log entry)
 * or in part (ordinary partial-stripe writes); each has one cause. */
struct rk_raid_gather_stats {
    bool level_has;              /* the level gathers (raid5, raid6) */
    bool on;                     /* gathering runs (off: RAIDKIT_RAID5_GATHER_US=0, no cache) */
    uint64_t hold_us;            /* hold after a stripe's last write, microseconds */
    uint32_t entries;            /* stripes that can be held at once (memory bound) */
    uint64_t stripe_bytes;       /* array bytes of one stripe */
    uint32_t held_now;           /* stripes held (or being written out) now */
    uint64_t writes_held;        /* write pieces copied into a held stripe and acknowledged */
    uint64_t bytes_held;         /* their bytes */
    uint64_t full_stripe_writes; /* write-outs of a whole stripe */
    uint64_t partial_writes;     /* write-outs of part of a stripe */
    uint64_t out_whole_fill;     /* write-outs because the last write made the stripe whole */
    uint64_t out_timeout;        /* ... because the hold time ended */
    uint64_t out_flush;          /* ... by a FLUSH (or the close) */
    uint64_t out_fua;            /* ... before a FUA write into the stripe */
    uint64_t out_memory;         /* ... to free an entry for another stripe (memory bound) */
    uint64_t out_other;          /* ... before a read, discard, write-zeroes, block status or
                                  * whole-stripe write of the stripe, or a too scattered write */
};

/* Fill *s (all zero for levels without gathering). Returns 0 or -EINVAL (not a raid device). */
int rk_raid_gather_stats(struct rk_dev *raid, struct rk_raid_gather_stats *s);

/* Set, durably on the members, the bit of every region set in bits (nregions bits, the area's
 * bit encoding: bit i is bits[i / 8] >> (i % 8)), e.g. the regions a returning member wrote on
 * its own while away (re-add, docs/FORMAT.md "Re-add"). Returns once the area holding them is
 * written (FUA). The bits stay set as any other set bit (cleared lazily once no slot is away).
 * Returns 0, -EINVAL (not a raid device, nregions differs from the bitmap's), -ENOENT (no
 * on-disk bitmap), -EIO (the area write failed). */
int rk_raid_bitmap_mark(struct rk_dev *raid, const uint8_t *bits, uint64_t nregions);

/*
 * Start a resync (job kind RK_JOB_RESYNC) in a background thread at rate bytes/s (0 =
 * unlimited): full = every region from member data offset from (rounded down to the region)
 * plus the regions below it the attached bitmap named (a full resync resumed after a crash),
 * else only the regions the bitmap named (rk_raid_bitmap_opts.bits). Each region is resynced
 * under the range lock, several steps in flight: copy levels copy the first live copy (slot
 * order) over the others, parity levels recompute parity from the data (a fast path of large
 * parallel I/Os on a healthy array, else the level's scrub hook with repair). Until a region is
 * done, copy levels read it from that same first live copy. Checkpoints (at a position every
 * earlier step reached, after a flush) and the end are reported through resync_checkpoint /
 * resync_done.
 * Returns 0, -EINVAL (no bitmap attached), -EOPNOTSUPP (no redundancy), -EBUSY, -ENOMEM.
 */
int rk_raid_resync_start(struct rk_dev *raid, bool full, uint64_t from, uint64_t rate);

/* Fill *p. Returns 0 or -EINVAL (not a raid device). */
int rk_raid_progress(struct rk_dev *raid, struct rk_raid_progress *p);

/* How many mismatch locations a scrub records (rk_raid_scrub_mismatches); later mismatches
 * are still counted in rk_raid_progress.mismatches. */
#define RK_RAID_MISMATCH_MAX 64
/* rk_raid_mismatch.array_off when the place holds no array data (parity) or is unknown. */
#define RK_RAID_NO_ARRAY_OFF UINT64_MAX

/* What a scrub found wrong at a mismatch (docs/ARCHITECTURE.md "What scrub can and cannot
 * know"). */
enum rk_raid_mismatch_kind {
    RK_MM_PARITY = 0,   /* raid5: parity differs from the data (the data is assumed right) */
    RK_MM_LOCATED,      /* raid6: P and Q name this one block (data, P or Q) as the bad one */
    RK_MM_UNLOCATED,    /* raid6: no single block explains P and Q; parity rewritten from data */
    RK_MM_DEGRADED,     /* raid6 with one slot gone: the remaining parity differs; not located */
    RK_MM_MAJORITY,     /* copies: this copy differs from the value most copies hold */
    RK_MM_TIE,          /* copies: no majority; the first copy (slot order) was taken */
    RK_MM_UNKNOWN_COPY, /* 2 copies differ: unknown which is right; the first copy was taken */
};
/* Which parity a mismatch is reported against (raid5/raid6; docs/CLI.md "scrub"). */
enum rk_raid_mismatch_parity {
    RK_MM_PAR_NONE = 0, /* a data chunk or a copy */
    RK_MM_PAR_P,        /* P (raid5's parity, raid6's XOR parity) in rk_raid_mismatch.slot */
    RK_MM_PAR_Q,        /* raid6's Q (Reed-Solomon) parity in rk_raid_mismatch.slot */
    RK_MM_PAR_PQ,       /* raid6 unlocated: P in .slot and Q in .q_slot (both rewritten) */
};
/* What a repair rewrote at a mismatch. */
enum rk_raid_fix { RK_FIX_NONE = 0, RK_FIX_DATA, RK_FIX_PARITY, RK_FIX_COPY };

/* Where one scrub mismatch is. */
struct rk_raid_mismatch {
    uint32_t slot;       /* the slot holding the (presumed) bad content: the copy or data chunk
                          * rewritten, the parity slot for parity/unlocated/degraded mismatches */
    uint64_t member_off; /* data-area offset in slot of the differing range */
    uint64_t len;        /* bytes */
    uint64_t array_off;  /* array offset of that data, RK_RAID_NO_ARRAY_OFF for parity */
    int kind;            /* enum rk_raid_mismatch_kind */
    int fixed;           /* enum rk_raid_fix: RK_FIX_NONE for a check, or when nothing can say
                          * which content is right (degraded raid6) */
    int parity;          /* enum rk_raid_mismatch_parity: which parity .slot holds */
    uint32_t q_slot;     /* RK_MM_PAR_PQ: the slot holding Q; else unused (0) */
};

/* Copy up to max of the first RK_RAID_MISMATCH_MAX mismatch locations of the last finished
 * scrub (last true; kept like rk_raid_progress.last_*) or of the running / last started scrub
 * (last false) into out, in the order found. Returns how many were recorded (<= max is copied),
 * or -EINVAL (not a raid device, max < 0, out NULL with max > 0). */
int rk_raid_scrub_mismatches(struct rk_dev *raid, bool last, struct rk_raid_mismatch *out, int max);
/* Short names for JSON and logs: "parity", "located", "unlocated", "degraded", "majority",
 * "tie", "unknown-copy" / "none", "data", "parity", "copy"; "?" for a bad value. */
const char *rk_raid_mismatch_kind_name(int kind);
const char *rk_raid_fix_name(int fixed);
/* "P", "Q", "P+Q" for a parity mismatch (enum rk_raid_mismatch_parity), NULL for
 * RK_MM_PAR_NONE or a bad value. */
const char *rk_raid_mismatch_parity_name(int parity);

/* One range of a slot's data area that a rebuild could not reconstruct: reads never use it. */
struct rk_raid_bad_range {
    uint32_t slot;
    uint64_t member_off; /* data-area offset */
    uint64_t len;
};

/* Copy up to max recorded bad ranges into out; returns how many there are in total. Ranges of a
 * FAILED slot are not reported (it is never read again), and rk_raid_add_member drops the
 * slot's ranges (its rebuild starts clean). */
int rk_raid_bad_ranges(struct rk_dev *raid, struct rk_raid_bad_range *out, int max);

/*
 * Record [member_off, member_off+len) of slot's data area as holding no valid data, e.g. at
 * assembly from the superblock's bad-range table (call before I/O starts, after
 * rk_raid_add_member for a slot whose rebuild resumes). Reads of that range are never served
 * from slot: they come from another copy / parity, or fail with -EIO when nothing else can
 * serve them (never zeros). Overlapping or adjacent ranges may be merged.
 * Returns 0, -EINVAL (not a raid device, bad slot, empty or outside the slot's data area),
 * -ENOSPC (the in-memory list is full).
 */
int rk_raid_add_bad_range(struct rk_dev *raid, uint32_t slot, uint64_t member_off, uint64_t len);

#ifdef __cplusplus
}
#endif
#endif
