/* raidkit volumes: create an array on member files, assemble it from its superblocks (members in
 * any order), and close it cleanly. The on-disk format is docs/FORMAT.md. */
#ifndef RAIDKIT_VOLUME_H
#define RAIDKIT_VOLUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidkit/device.h"
#include "raidkit/raid.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options of rk_volume_create. */
struct rk_create_opts {
    int level;        /* enum rk_level */
    uint32_t chunk;   /* bytes; 0 = RK_CHUNK_DEFAULT */
    const char *name; /* array name (<= 31 bytes), NULL = "" */
    uint64_t size;    /* >0: create missing member files / extend to this size first */
    bool force;       /* overwrite members holding a raidkit superblock or a file system */
    /* Skip the initial zeroing of the data areas (levels with redundancy): the caller promises
     * the members already agree (mirrors equal, parity valid). docs/CLI.md "create". */
    bool assume_clean;
    /* Write-intent bitmap (docs/FORMAT.md "Write-intent bitmap"; levels with redundancy):
     * no_bitmap = none; bitmap_region = data bytes per bit, 0 = chosen from the member size. */
    bool no_bitmap;
    uint64_t bitmap_region;
    /* RAID5/6 write-hole protection (docs/FORMAT.md "Partial parity log"): RK_WRITE_HOLE_DEFAULT
     * (a partial parity log for raid5/raid6, nothing for the other levels), RK_WRITE_HOLE_NONE
     * or RK_WRITE_HOLE_PPL (raid5/raid6 only). */
    int write_hole;
};

#define RK_WRITE_HOLE_DEFAULT 0
#define RK_WRITE_HOLE_NONE    1
#define RK_WRITE_HOLE_PPL     2

/*
 * Create an array over the n member paths (slot i = paths[i]): validate every argument and
 * every member first (exists or can be created with size, readable, writable, large enough,
 * no existing superblock or file system unless force, no path given twice), and only then
 * write the superblocks. Returns 0, or a negative errno with one line in err (errlen bytes)
 * naming the problem and the member; nothing is written on error.
 */
int rk_volume_create(const char *const *paths, int n, const struct rk_create_opts *o, char *err,
                     size_t errlen);

/*
 * Add an internal write-intent bitmap to an array created without one (offline: assembles the
 * members given, writes the empty bitmap area to every active member, then the superblocks
 * naming it, then closes clean). region = data bytes per bit, 0 = the default for the member
 * size. Returns 0, or -errno with err: -EEXIST (already has one), -EOPNOTSUPP (no redundancy),
 * -EBUSY (not in sync: a resync is pending), -EINVAL (bad region), or rk_volume_open's errors.
 */
int rk_volume_bitmap_add(const char *const *paths, int n, uint64_t region, char *err,
                         size_t errlen);

struct rk_emul_params;

/* Options of rk_volume_open. */
struct rk_open_opts {
    bool degraded;  /* allow starting with members missing (within the level's redundancy) */
    bool read_only; /* open members read-only; the volume refuses writes */
    bool force;     /* start dirty+degraded arrays anyway */
    /* Fault injection (tests/debugging, the CLI's --debug-fault): fault_spec[i] applies to
     * the member in slot fault_slot[i], i < nfaults (a fault wrapper above any device model). */
    int nfaults;
    uint32_t fault_slot[RK_MAX_MEMBERS];
    const char *fault_spec[RK_MAX_MEMBERS]; /* rk_fault_apply_spec syntax */
    uint32_t file_flags;                    /* extra RK_FILE_* flags for every member */
    /* Device model (benchmarks, "what if"): when non-NULL every member file is wrapped in an
     * emul member with these parameters (include/raidkit/emul.h), below any fault wrapper. */
    const struct rk_emul_params *emul;
    /* A slot recorded REBUILDING whose member is given resumes its rebuild from the recorded
     * checkpoint as soon as the volume is open (not on read-only volumes): at most this many
     * bytes/s, 0 = unlimited. */
    uint64_t rebuild_rate;
    /* SSD cache (docs/ARCHITECTURE.md "Cache"; not with read_only): cache_path = the cache
     * device created for this array by `cache create`, NULL = none. cache_emul: its device model
     * (NULL = none; the members' emul does not apply to it); cache_fault_spec: a fault member
     * above it (rk_fault_apply_spec syntax, NULL = none); cache_writeback_rate: the flusher's
     * limit between the watermarks, bytes/s (0 = unlimited). */
    const char *cache_path;
    const struct rk_emul_params *cache_emul;
    const char *cache_fault_spec;
    uint64_t cache_writeback_rate;
    /* `cache create`: the array's cache binding is about to be replaced; assembly neither checks
     * nor clears it (docs/FORMAT.md "Cache binding"). */
    bool cache_rebind;
    /* With read_only: this is rk_volume_precheck's open for an offline command whose writable
     * open follows; refusals say what to do for that command (not for a read-only start). */
    bool precheck;
};

struct rk_volume;

/*
 * Assemble an array from member paths given in any order: read every superblock, check magic,
 * version, checksum and bounds, group by array UUID (a member of another array is refused,
 * naming the file and both UUIDs), drop stale members (lower event counter; named), place
 * members by slot, check the level's redundancy (missing members need opts->degraded; a dirty
 * degraded array of a level with a write hole needs opts->force), stack device models and
 * fault wrappers on the members, start the raid device, mark the array dirty (not read-only
 * volumes) and resume recorded rebuilds. Every refusal comes before the first superblock
 * write. Returns 0 and *out, or -errno with one line in err: -EINVAL bad arguments or fault spec,
 * -ENODEV no usable member or too many missing, -EUCLEAN dirty and degraded without force, -ENOMEM,
 * I/O errors.
 */
int rk_volume_open(const char *const *paths, int n, const struct rk_open_opts *opts,
                   struct rk_volume **out, char *err, size_t errlen);

/* What rk_volume_precheck checks before an offline manage command opens the array writable. */
enum rk_precheck_op {
    RK_PRECHECK_REPLACE, /* rk_volume_replace(slot, member) */
    RK_PRECHECK_READD,   /* rk_volume_readd(slot, member) */
};

struct rk_precheck {
    enum rk_precheck_op op;
    uint32_t slot;      /* the slot acted on */
    const char *member; /* the new member (replace) or the returning one (re-add): a path or URI */
    bool force;         /* replace: overwrite a member holding a signature (RK_REPLACE_FORCE) */
};

/*
 * Validate an offline replace or re-add completely before anything is written (the product's
 * "validate everything before writing to a member"): assemble the n member paths read-only and
 * degraded (nothing written, no job started), run every check rk_volume_replace or
 * rk_volume_readd would run after the writable open (slot in range, level with redundancy,
 * slot failed or missing, member not already another slot's; replace: the new member opens
 * read-write, is large enough, its block size fits, it holds no other array's superblock nor
 * any other signature (unless force: rk_volume_replace_with), and
 * when it is the slot's old member the re-add checks below; re-add: it holds this array's
 * superblock recorded for slot with an older event counter), close. The event check compares
 * with the array's counter + 1 (a writable open raises it at least that much). Whether missing
 * slots may be missing (--degraded) is the caller's check. Returns 0 when the command can run,
 * else -errno with one line in err: rk_volume_open's errors, or those of rk_volume_replace /
 * rk_volume_readd (-EINVAL, -EOPNOTSUPP, -EBUSY, -EEXIST, -ENOSPC, -EXDEV, -ESTALE, -ENODATA,
 * open errors of the member).
 */
int rk_volume_precheck(const char *const *paths, int n, const struct rk_precheck *pc, char *err,
                       size_t errlen);

/* The volume's top device (serve this). Owned by the volume. */
struct rk_dev *rk_volume_dev(struct rk_volume *v);

/* Flush every member, mark the array clean in every active member's superblock, close all.
 * Returns 0 or the first -errno (the volume is freed either way). NULL is accepted. */
int rk_volume_close(struct rk_volume *v);

/* The raid device under the volume (rk_raid_* management: progress, fail, scrub). Owned by the
 * volume; NULL for NULL. */
struct rk_dev *rk_volume_raid(struct rk_volume *v);

/* Path of the member in slot (NULL when none). Valid until the volume is closed. */
const char *rk_volume_member_path(struct rk_volume *v, uint32_t slot);

/*
 * Online replace: put the member file at path into slot and rebuild it in the background (at
 * most rate bytes/s, 0 = unlimited; progress via rk_raid_progress(rk_volume_raid(v))). The
 * slot must be failed or missing (an active slot is refused: fail it first, like md). The new
 * member must exist, be writable, hold data_offset + the slot's data size, have a block size
 * <= the array's, and be neither a member of this array nor hold another array's superblock
 * nor any other signature of data (a file system, partition table, ... : src/meta/probe.h);
 * rk_volume_replace_with(RK_REPLACE_FORCE) overwrites those two. Then its superblock (new member
 * UUID, state rebuilding, rebuild offset 0) and the others (event + 1) are written, the engine
 * writes to it, and the rebuild checkpoints its offset into every superblock about once a second;
 * on completion the slot is active (event + 1). Returns 0, or -errno with one line in err: -EINVAL
 * bad slot/member, -EBUSY slot not failed or a rebuild/scrub running, -ENOSPC member too small,
 * -EEXIST member already in use, -EROFS read-only volume, -EOPNOTSUPP level without redundancy.
 * Nothing changes on error.
 */
int rk_volume_replace(struct rk_volume *v, uint32_t slot, const char *path, uint64_t rate,
                      char *err, size_t errlen);

/* Flags of rk_volume_replace_with. */
#define RK_REPLACE_FORCE                                                                           \
    0x1u /* overwrite a new member holding another array's superblock or a                         \
            file system / partition table / other signature */

/* rk_volume_replace with flags (RK_REPLACE_FORCE); rk_volume_replace is flags 0. Same returns
 * (-EEXIST names the signature found, "use --force to overwrite it"). */
int rk_volume_replace_with(struct rk_volume *v, uint32_t slot, const char *path, uint64_t rate,
                           uint32_t flags, char *err, size_t errlen);

/*
 * Re-add (md's --re-add; docs/ARCHITECTURE.md "Re-add"): put the slot's old member, back with
 * the content it had when it left, into slot (failed or missing) and resync only what changed
 * since, in the background (at most rate bytes/s). The member at path must hold this array's
 * superblock with the member UUID the slot table records for slot, and an event count lower
 * than the array's. When the write-intent bitmap proves what changed (an on-disk bitmap whose
 * last clear, docs/FORMAT.md "Re-add", is not newer than the member's event count, and no
 * unreadable range recorded for the slot) only the regions with a set bit are resynced; else
 * the member is rebuilt whole and note says why. Either way note (when non-NULL) gets one line
 * ("re-add of slot N: ..."), also logged and shown in the status ("rejoin"). Reads never come
 * from the slot until the job completed. Returns 0, or -errno with one line in err, nothing
 * written: -EINVAL bad slot, -EBUSY slot active/rebuilding or a job running, -EXDEV another
 * array's member, -ESTALE not this slot's old member (names the slot it belongs to), -ENODATA
 * no superblock, -EROFS, -EOPNOTSUPP, -ENOSPC as rk_volume_replace.
 */
int rk_volume_readd(struct rk_volume *v, uint32_t slot, const char *path, uint64_t rate, char *note,
                    size_t notelen, char *err, size_t errlen);

/*
 * Watch the volume's URI (nbd) members while it is served (src/meta/volume_remote.c): an active
 * member whose connection died is failed (recorded like an I/O error); a failed or missing one
 * is reconnected with backoff (RAIDKIT_NBD_RECONNECT_MS, default 1000 ms, doubling up to
 * RAIDKIT_NBD_RECONNECT_MAX_MS, default 30000 ms) and re-added (rk_volume_readd, at most rate
 * bytes/s, 0 = unlimited) only when its superblock proves it is the slot's member that left:
 * this array, the slot's member UUID, an event no newer than the one it held when it failed;
 * anything else is refused for good (logged, status "reconnect"). No-op (0) for read-only
 * volumes or without URI members; call once after rk_volume_open; rk_volume_close stops it.
 * Returns 0 or -errno (thread creation).
 */
int rk_volume_remote_watch(struct rk_volume *v, uint64_t rate);

/* What the last rejoin of slot was (the note of rk_volume_readd, also after a replace that
 * recognised the old member), or NULL when none happened since open. Valid until the volume is
 * closed or the slot rejoins again. */
const char *rk_volume_rejoin_note(struct rk_volume *v, uint32_t slot);

/* Describe the volume as JSON text (malloc'ed, caller frees): array UUID, name, level, size,
 * chunk, event counter, clean/was_dirty/read_only flags, every slot with path, state, data size
 * and I/O mode, degraded flag. NULL for NULL v or on ENOMEM. */
char *rk_volume_status_json(struct rk_volume *v);

/*
 * Read the superblocks of the given members (no assembly, read-only) and describe them.
 * json: one JSON document; else human-readable text. Result malloc'ed (caller frees), NULL
 * with err set when no member could be read at all. Unreadable/corrupt members are described
 * with the reason, not fatal.
 */
char *rk_volume_info(const char *const *paths, int n, bool json, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
