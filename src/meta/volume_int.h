/* The assembled volume shared by the volume files: struct rk_volume, and how its state changes
 * reach the member superblocks (volume_record.c). Assembly and close are volume.c, the status
 * document volume_status.c, online replace volume_replace.c. */
#ifndef RK_META_VOLUME_INT_H
#define RK_META_VOLUME_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "meta/meta_int.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

/* Devices a replaced slot held (file, device model, fault wrapper), kept open until close. */
#define VOL_RETIRED_DEVS 3

struct rk_volume {
    /* Protects sb and every superblock write. Taken by the engine's event callbacks (an I/O
     * thread of the raid engine, outside engine locks), by close, status and replace; never
     * held while calling into the raid engine's data path. */
    pthread_mutex_t lock;
    struct rk_sb sb; /* newest state; per-member fields are filled per write */
    struct rk_raid_geom geom;
    char *paths[RK_MAX_MEMBERS];         /* path of the member in each slot, NULL when none */
    struct rk_dev *file[RK_MAX_MEMBERS]; /* rk_file_open device of each slot */
    struct rk_dev *emu[RK_MAX_MEMBERS];  /* device model over file (opts->emul), else NULL */
    struct rk_dev *top[RK_MAX_MEMBERS];  /* fault wrapper over emu/file, or emu, or file */
    struct rk_dev *raid;
    struct rk_dev *ro; /* read-only filter over raid (read_only volumes), else NULL */
    bool read_only;
    bool was_dirty;       /* dirty at open: the last shutdown was unclean */
    bool log_closes_hole; /* the level's write log closes the write hole (replayed when dirty) */
    bool log_check;       /* read-only, dirty and degraded with a log: refused unless the log
                             holds no live entry (vol_start_log, RK_LOG_CHECK) */
    /* Bit i: slot i has a member that holds its data or is being rebuilt onto (a resumed
     * rebuild): the copies a resync could bring in line (vol_resync_has_target). */
    uint32_t present;
    /* Online replace: devices that held a replaced slot stay open until the raid device is
     * closed (I/O to them may be in flight). */
    struct rk_dev *retired[RK_MAX_MEMBERS][VOL_RETIRED_DEVS];
    uint32_t file_flags; /* RK_FILE_* flags members are opened with (also new members) */
    bool bad_overflow;   /* warned that the engine holds more bad ranges than the table */
    /* Resync decided at assembly (volume_bitmap.c): needed, over every region, from where. */
    bool resync, resync_full;
    uint64_t resync_from;
    /* Re-add (volume_readd.c): no valid bitmap copy at assembly (a re-add resumes as a whole
     * rebuild), and per slot what its last rejoin was (for status and replies). */
    bool bm_untrusted;
    char rejoin[RK_MAX_MEMBERS][200];
    /* A resync that waited for a resumed rebuild (vol_resync_start) starts when that rebuild
     * ends, from a helper thread (vol_resync_after_rebuild); close joins it first. Under
     * v->lock. */
    bool resync_waiting, closing, has_helper;
    pthread_t helper;
    uint64_t resync_rate; /* bytes/s the resync runs at */
    /* SSD cache layer over raid (volume_cache_layer.c), NULL without --cache. It owns the cache
     * device's stack; cache_fault is the fault member in it (or NULL). */
    struct rk_dev *cache_dev;
    struct rk_cache *cache;
    /* Remote members (volume_remote.c): the event counter each slot's member held when its
     * failure was recorded (0 = never failed since open), and the watcher that fails dead
     * connections and reconnects (NULL unless rk_volume_remote_watch started it). */
    uint64_t fail_events[RK_MAX_MEMBERS];
    struct vol_remote *remote;
};

/* Stop and free v's remote-member watcher (volume_remote.c); no-op without one. First thing
 * of close: no re-add may start after it. */
void vol_remote_stop(struct rk_volume *v);

/* Add slot's "reconnect" object (state, attempts, next attempt, last error, resynced bytes of
 * the last automatic re-add) to the status object o when the watcher runs and slot's member is
 * a URI. Caller holds v->lock. */
struct cJSON;
void vol_remote_status(struct rk_volume *v, uint32_t slot, struct cJSON *o);

/* Cache phase (volume_cache_layer.c), after the bitmap setup and before the dirty mark: open the
 * cache device stack of o->cache_path (file -> device model -> fault member) and the cache layer
 * over the raid device (a cache bound to another array, stale or corrupt is refused with a
 * message naming it). No-op without o->cache_path. Returns 0 or -errno with err. */
int vol_cache_setup(struct rk_volume *v, const struct rk_open_opts *o, char *err, size_t errlen);

/* Close phase of the cache: flush it (cache data and metadata, then the backing), then close the
 * layer (dirty blocks stay dirty on the cache device). Returns 0, the flush's -errno, or -EIO
 * when the cache device failed (the caller then leaves the array dirty: invalidations made
 * meanwhile are not in the cache's journal, and a dirty start drops its clean blocks). */
int vol_cache_close(struct rk_volume *v);

/*
 * Write the in-memory superblock to every slot that is active or rebuilding and has a device,
 * raising utime. raw = true writes to the member files, past device models and fault wrappers
 * (the dirty mark at open); raw = false writes through them (close, failure recording,
 * checkpoints, replace), so a fault member's power cut covers superblock writes too. Caller
 * holds v->lock (or owns v alone). Returns 0 or the first -errno; a member whose write fails
 * is logged, and the others are still written.
 */
int vol_write_sbs(struct rk_volume *v, bool raw);

/*
 * Copy the engine's bad ranges (rk_raid_bad_ranges) into the superblock's bad-range table,
 * raising the event counter when the table changed. Caller holds v->lock. Returns true when it
 * changed (the caller writes the superblocks).
 */
bool vol_sync_bad(struct rk_volume *v);

/* Remove slot's entries from the superblock's bad-range table (the slot is replaced). Caller
 * holds v->lock. */
void vol_drop_bad(struct rk_volume *v, uint32_t slot);

/* Give the engine the bad ranges of the superblock (assembly, before any I/O); a range the
 * engine refuses is logged. */
void vol_load_bad(struct rk_volume *v);

/* The engine event callbacks of v (member failed, rebuild checkpoint, rebuild done), which
 * record each change in the superblocks; for rk_raid_open, with vol_resync_events' added. */
struct rk_raid_events vol_events(struct rk_volume *v);

/*
 * Assembly phase of the write-intent bitmap (volume_bitmap.c), after the engine started and
 * before the dirty mark: read every used member's bitmap area (a corrupt copy is refused with
 * a message; none valid = full resync), decide the resync (dirty start or a pending one),
 * record it in v->sb.resync_* (written with the dirty mark) and attach the bitmap. Read-only
 * volumes that need a resync get its regions attached as unsynced, in memory only (no resync,
 * nothing written; reads there take the first live copy); other read-only volumes and levels
 * without redundancy: no-op. Returns 0 or -errno with err.
 */
int vol_bitmap_setup(struct rk_volume *v, char *err, size_t errlen);

/* Does a resync of v have something to bring in line: is some slot of v->present redundant
 * (the others hold all data without it)? False when no redundancy is left (raid1 with one
 * copy, raid5 with a slot away, raid6 with two): every byte then has one source, and the
 * regions the bitmap marks are caught up by the re-add or rebuild of the missing members. */
bool vol_resync_has_target(const struct rk_volume *v);

/* The largest data size (bytes) over v's slots: what the bitmap's regions cover
 * (volume_bitmap.c). */
uint64_t vol_max_data(const struct rk_volume *v);

/* Start the resync vol_bitmap_setup decided (resume-jobs phase), at most rate bytes/s; when
 * another job (a resumed rebuild) runs it stays pending, logged. */
void vol_resync_start(struct rk_volume *v, uint64_t rate);

/* From the rebuild_done callback (the job thread, v->lock held): when a resync waits for
 * this rebuild, start a helper thread that waits for the job's end and starts the resync. */
void vol_resync_after_rebuild(struct rk_volume *v);

/* Close, before the job is stopped: no helper may start a job any more; joins it. */
void vol_resync_helper_stop(struct rk_volume *v);

/* Fill the resync callbacks of ev (checkpoint: resync_offset of a full resync; done: flags
 * cleared), which record them in the superblocks under v->lock. */
void vol_resync_events(struct rk_raid_events *ev);

/*
 * Online replace's checks (volume_replace.c), shared with re-add (volume_readd.c):
 * vol_replace_refused: read-only volume, bad slot, no redundancy, a job running, slot not
 * failed/missing, path already the member of another slot; vol_check_new_member: the member
 * opened as dev is large enough, its block size fits, it holds no other array's superblock
 * (unless force) and is no active member (reads its superblock). Each returns 0 or -errno with err.
 */
int vol_replace_refused(struct rk_volume *v, uint32_t slot, const char *path, char *err,
                        size_t errlen);
int vol_check_new_member(struct rk_volume *v, uint32_t slot, const char *path, struct rk_dev *dev,
                         bool force, char *err, size_t errlen);
/* replace's content check of the new member dev (opened from path): unless force, one that
 * visibly holds data (a signature, meta/probe.h: libblkid over the local file, else the first
 * RK_PROBE_LEN bytes) is refused -EEXIST naming it; this array's own old member (its
 * superblock) passes. 0 or -errno with err. */
int vol_check_signature(struct rk_volume *v, const char *path, struct rk_dev *dev, bool force,
                        char *err, size_t errlen);
/* vol_replace_refused without the read-only check: what the precheck (volume_precheck.c) asks
 * of a read-only open before the writable one. 0 or -errno with err. */
int vol_slot_refused(struct rk_volume *v, uint32_t slot, const char *path, char *err,
                     size_t errlen);
/* Is path (a local file, or a URI compared as a string) the same file as a current member?
 * The slot, or -1. */
int vol_same_file(struct rk_volume *v, const char *path);
/*
 * Re-add (volume_readd.c): is msb (the returning member's superblock read from path) the old
 * member of slot: this array's, recorded for slot, its event counter below events (the
 * array's: v->sb.events, or the precheck's v->sb.events + 1, what a writable open at least
 * raises it to)? 0, or -EXDEV / -ESTALE with one line in err.
 */
int vol_readd_identify(struct rk_volume *v, uint32_t slot, const char *path,
                       const struct rk_sb *msb, uint64_t events, char *err, size_t errlen);

/* The old devices of slot (a failed member) retire: kept open until close, since I/O may
 * still be in flight to them. Caller holds v->lock. */
void vol_retire_slot(struct rk_volume *v, uint32_t slot);

/*
 * replace --with of the slot's old member (volume_readd.c): when *dev (opened from path, which
 * passed vol_check_new_member) holds this array's superblock with the member UUID recorded for
 * slot, re-add it (rk_volume_readd's rules; *dev becomes the volume's, set to NULL) and return
 * 0, or -errno with err. Returns 1 (nothing done) when it is not the slot's old member.
 */
int vol_readd_if_old(struct rk_volume *v, uint32_t slot, const char *path, struct rk_dev **dev,
                     uint64_t rate, char *err, size_t errlen);

/* Assembly, resume phase: start the rebuild of slot from its checkpoint as recorded (a re-add
 * when its re-add flag is set and the bitmap is trusted, else a whole rebuild). 0 or -errno. */
int vol_rebuild_resume(struct rk_volume *v, uint32_t slot, uint64_t rate);

#endif
