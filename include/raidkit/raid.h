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
    /* Slot failed (a write error, or an unrecoverable read error): persist it — mark it failed
     * in the other members' superblocks and raise the event counter. Called at most once per
     * slot, from an I/O thread; may block on I/O. It may run with a member range lock held and, on
     * raid5/6, a stripe lock (a write failure inside a stripe update), so it must never issue I/O
     * through the raid device itself. */
    void (*member_failed)(void *ctx, uint32_t slot, int error);
    /* Rebuild of slot reached offset (bytes of its data area now in sync and flushed on the
     * member): persist it as the slot's rebuild offset so a restart resumes there. Called from
     * the rebuild thread, outside engine locks; may block on I/O. NULL = not persisted. */
    void (*rebuild_checkpoint)(void *ctx, uint32_t slot, uint64_t offset);
    /* Rebuild of slot ended: result 0 = complete (the slot is ACTIVE now: persist that), else
     * -errno (stopped: -EINTR after a final checkpoint; failed: the slot stays REBUILDING or
     * FAILED). Called once per rebuild from the rebuild thread. */
    void (*rebuild_done)(void *ctx, uint32_t slot, int result);
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
 * then the log restarts empty. Read-only volumes do not call it (no writes, no log). Returns
 * 0 (also for levels and arrays without a log) or -errno (a member failed to take the log's
 * writes, or memory ran out); problems with single entries are logged and the entry ignored.
 */
int rk_raid_log_start(struct rk_dev *raid, bool replay);

/* Current state of slot (enum rk_slot_state) of a raid device; -EINVAL for a bad slot. */
int rk_raid_slot_state(struct rk_dev *raid, uint32_t slot);

/* Mark slot failed (as if it had failed a write); the member_failed callback runs.
 * Returns 0, -EINVAL (bad slot), -EBUSY (the array would lose data: refused). */
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
 * Returns 0, -EINVAL (bad slot, member too small or block size too large), -EBUSY (slot not
 * failed/missing, or a job is running), -EOPNOTSUPP (level without redundancy).
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
 * Start a scrub in a background thread: compare every copy (or parity) of every chunk through
 * the level's scrub hook and count mismatched chunks (stripes for parity levels); with repair,
 * rewrite them from the first live copy (slot order) / the data. Levels without redundancy
 * read everything and count read errors. rate in bytes/s (0 = unlimited).
 * Returns 0, -EBUSY (a job is running), -ENOMEM.
 */
int rk_raid_scrub_start(struct rk_dev *raid, bool repair, uint64_t rate);

/* Wait for the current job to end; returns its result (0, or -errno). 0 when there is none. */
int rk_raid_job_wait(struct rk_dev *raid);

/* Ask the current job to stop (a rebuild checkpoints first) and wait for it. */
void rk_raid_job_stop(struct rk_dev *raid);

enum rk_raid_job_kind { RK_JOB_NONE = 0, RK_JOB_REBUILD, RK_JOB_SCRUB };
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
    double rate;         /* measured bytes/s since the job started */
    double eta;          /* seconds left, -1 when unknown */
    uint64_t mismatches; /* scrub: mismatched chunks/stripes so far */
    uint64_t repaired;   /* scrub: of those, rewritten */
    uint64_t bad_ranges; /* rebuild: unreconstructable ranges; scrub: read errors */
    bool scrubbed;       /* a scrub has finished since open: last_* are valid */
    uint64_t last_mismatches, last_repaired, last_errors;
    int64_t last_finished; /* unix time of the last scrub's end */
};

/* Fill *p. Returns 0 or -EINVAL (not a raid device). */
int rk_raid_progress(struct rk_dev *raid, struct rk_raid_progress *p);

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
