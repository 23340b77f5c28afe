/* SSD cache tier: the cache device's metadata (docs/FORMAT.md "Cache device").
 *
 * Owns the cache device's superblock (binding to one array by UUID), the in-memory index
 * (backing block -> cache block, with a dirty bit per cache block), the free list, and its
 * persistence: an append-only, checksummed journal of index changes with sequence numbers,
 * periodic checkpoints of the whole index and an atomic commit point. No data-block I/O: the
 * caller (src/cache/cache.c) reads and writes data blocks at rk_cache_meta_data_offset().
 *
 * Durability contract (what the caller may rely on):
 * - Index changes (map/clean/unmap) take effect in memory at once and are queued as journal
 *   records; rk_cache_meta_commit() makes every change queued before the call durable (journal
 *   write with FUA, group commit: concurrent callers share one write). After a crash, loading
 *   yields exactly the state of some commit point: every committed change, none of a later
 *   uncommitted one applied partially.
 * - A cache block freed by rk_cache_meta_unmap() is handed out again by rk_cache_meta_alloc()
 *   only after the unmap is durable, so a crash can never pair an old mapping with new data.
 * - The caller makes a block's data durable on the cache device (flush) before committing a
 *   record that marks it mapped: data durable -> metadata durable -> acknowledge.
 * Thread safety: every function may be called from any thread; the index has its own lock.
 */
#ifndef RK_CACHE_META_H
#define RK_CACHE_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidkit/device.h"

struct rk_cache_meta; /* opaque (src/cache/meta_int.h) */

enum rk_cache_mode {
    RK_CACHE_NONE = 0,
    RK_CACHE_WRITETHROUGH = 1,
    RK_CACHE_WRITEBACK = 2,
    RK_CACHE_WRITEAROUND = 3,
};

/* "none", "writethrough", "writeback", "writearound"; "?" out of range. */
const char *rk_cache_mode_name(enum rk_cache_mode m);
/* Parses a mode name; 0 on success, -EINVAL otherwise. */
int rk_cache_mode_parse(const char *s, enum rk_cache_mode *out);

struct rk_cache_format_params {
    uint8_t array_uuid[16]; /* the backing array this cache is bound to */
    uint64_t array_size;    /* backing size, bytes (recorded; a mismatch at open is refused) */
    uint32_t block_size;    /* cache block, bytes, power of two in [4 KiB, 1 MiB]; default 64K */
    enum rk_cache_mode mode;
    /* Added by cache-core (backward compatible: 0 = default): journal area, bytes, a 4 KiB
     * multiple in [64 KiB, 1 GiB]; default clamp(8 bytes per cache block rounded up to 1 MiB,
     * 1 MiB, 64 MiB). Tests use a small one to exercise the journal wrap. */
    uint64_t journal_size;
};

/* Writes a new, empty cache onto dev (`cache create`): superblock, empty checkpoint, empty
 * journal. Validates everything (device big enough for metadata + >= 16 blocks) before writing.
 * Returns 0, or a negative errno with a one-line message naming the device in err. */
int rk_cache_meta_format(struct rk_dev *dev, const char *name,
                         const struct rk_cache_format_params *p, char *err, size_t errlen);

/* Opens the cache on dev for the array array_uuid of array_size bytes: validates the superblock,
 * loads the newest valid checkpoint and replays the journal after it. A cache bound to another
 * array, a stale or a corrupt one is refused: negative errno, message naming the device (name)
 * and, for another array, both UUIDs. On success *out owns dev's metadata (not dev itself).
 * (cache-core:) errors: -ENODATA not a cache device, -EPROTONOSUPPORT unknown version, -EBADMSG
 * checksum, corrupted journal or no valid checkpoint, -EINVAL a field out of bounds or a device
 * smaller than its superblock says, -EXDEV bound to another array (or another array size),
 * -ENOMEM, or the read's -errno. A writable open writes one checkpoint (a new journal epoch)
 * before it returns. "Stale" (the array no longer names this cache) is decided by
 * rk_cache_binding_check on the array's superblock. */
int rk_cache_meta_open(struct rk_dev *dev, const char *name, const uint8_t array_uuid[16],
                       uint64_t array_size, struct rk_cache_meta **out, char *err, size_t errlen);

/* Writes a final checkpoint (when writable) and frees the metadata; NULL accepted. */
int rk_cache_meta_close(struct rk_cache_meta *m);

uint32_t rk_cache_meta_block_size(const struct rk_cache_meta *m);  /* bytes */
uint64_t rk_cache_meta_blocks(const struct rk_cache_meta *m);      /* cache blocks */
uint64_t rk_cache_meta_data_offset(const struct rk_cache_meta *m); /* bytes on the device */
enum rk_cache_mode rk_cache_meta_mode(const struct rk_cache_meta *m);
/* Records a new mode durably (superblock/journal); 0 or negative errno. */
int rk_cache_meta_set_mode(struct rk_cache_meta *m, enum rk_cache_mode mode);

/* Index lookup: 0 with *cblock (and *dirty when not NULL) set, -ENOENT when bblock is not cached.
 */
int rk_cache_meta_lookup(struct rk_cache_meta *m, uint64_t bblock, uint64_t *cblock, bool *dirty);
/* Takes a free cache block (whose last unmap is durable): 0 with *cblock, -ENOSPC when none. The
 * block holds no mapping until rk_cache_meta_map; give it back with rk_cache_meta_release. */
int rk_cache_meta_alloc(struct rk_cache_meta *m, uint64_t *cblock);
void rk_cache_meta_release(struct rk_cache_meta *m, uint64_t cblock);
/* Maps cblock to bblock (dirty or clean); replaces nothing: bblock must not be mapped. */
void rk_cache_meta_map(struct rk_cache_meta *m, uint64_t cblock, uint64_t bblock, bool dirty);
/* Marks a mapped block dirty / clean (clean: only after the backing flushed its data). */
void rk_cache_meta_set_dirty(struct rk_cache_meta *m, uint64_t cblock, bool dirty);
/* Removes cblock's mapping; the block returns to the free list once the unmap is durable. */
void rk_cache_meta_unmap(struct rk_cache_meta *m, uint64_t cblock);
/* Makes every change queued before the call durable; 0 or negative errno (device failed). */
int rk_cache_meta_commit(struct rk_cache_meta *m);

/* Calls fn(ctx, cblock, bblock) for every dirty block with bblock >= from_bblock in ascending
 * bblock order, up to max blocks (0 = all); returns how many were visited. Used by the flusher.
 * Cost: one pass over the index under its lock (8 bytes per cache block read; about 15 ms per
 * TiB of cache at 64 KiB blocks), then fn is called without the lock (it may call any meta
 * function; the dirty state may have changed since the scan). */
size_t rk_cache_meta_dirty_scan(struct rk_cache_meta *m, uint64_t from_bblock, size_t max,
                                void (*fn)(void *ctx, uint64_t cblock, uint64_t bblock), void *ctx);

struct rk_cache_meta_stats {
    uint64_t mapped, dirty, free; /* cache blocks */
    uint64_t journal_bytes, journal_size;
    uint64_t commits, checkpoints, seq;
};
void rk_cache_meta_stats(struct rk_cache_meta *m, struct rk_cache_meta_stats *out);

/* ---- additions by cache-core (additive; docs/FORMAT.md "Cache device") ---- */

/* As rk_cache_meta_open, but never writes to dev (for `info`): no checkpoint at open or close,
 * rk_cache_meta_commit returns -EROFS once anything is queued. array_uuid NULL and array_size 0
 * skip those checks. */
int rk_cache_meta_open_ro(struct rk_dev *dev, const char *name, const uint8_t *array_uuid,
                          uint64_t array_size, struct rk_cache_meta **out, char *err,
                          size_t errlen);

/* Validates exactly what rk_cache_meta_format validates (parameters, device size for the
 * metadata and >= 16 blocks) without writing anything: 0, or a negative errno with the same
 * message. Lets `cache create` decide every refusal before it writes to any device. */
int rk_cache_meta_format_check(struct rk_dev *dev, const char *name,
                               const struct rk_cache_format_params *p, char *err, size_t errlen);

/* The cache's own UUID (new at every `cache create`), the bound array's UUID (16 bytes each,
 * owned by m) and the bound array's size in bytes. */
const uint8_t *rk_cache_meta_uuid(const struct rk_cache_meta *m);
const uint8_t *rk_cache_meta_array_uuid(const struct rk_cache_meta *m);
uint64_t rk_cache_meta_array_size(const struct rk_cache_meta *m);

/* True when buf (4096 bytes read at offset 0 of a device) starts with the cache superblock
 * magic "RKCACHSB", whatever else it holds. */
bool rk_cache_meta_has_magic(const uint8_t *buf);

/* Formats 16 UUID bytes as 8-4-4-4-12 lower-case hex into out (RK_CACHE_UUID_STR bytes). */
#define RK_CACHE_UUID_STR 37
char *rk_cache_uuid_format(const uint8_t *uuid, char *out);

/* Cache binding of an array (array superblock bytes 3336..3399, docs/FORMAT.md "Cache
 * binding"): flags and the bound cache's UUID. */
#define RK_CACHE_BIND_BOUND 0x1u /* the array is bound to the cache with cache_uuid */
#define RK_CACHE_BIND_DIRTY                                                                        \
    0x2u /* that cache may hold dirty data (set before the first                                   \
          * writeback write, cleared after a complete write-back) */
#define RK_CACHE_BIND_MASK 0x3u
/* rk_cache_binding_check result: may start uncached once the binding is cleared durably. */
#define RK_CACHE_BIND_UNBIND 1

/*
 * What an array's binding (flags, bound_uuid from its superblock) allows for a start with the
 * opened cache m, or without a cache (m NULL). Returns:
 *   0                    go ahead: m is the bound cache, or the array is unbound and m is NULL;
 *   RK_CACHE_BIND_UNBIND m is NULL and the bound cache holds no dirty data (or force): the
 *                        caller must clear the binding (flags 0, UUID zero) in the array's
 *                        superblocks before the first write, so the cache is refused as stale
 *                        afterwards (writes that bypass it would be shadowed by its old copies);
 *   -EUCLEAN             m is NULL, the bound cache may hold dirty data and force is false;
 *   -ESTALE              m is given but the array is bound to no cache or to another one (the
 *                        cache is stale: the array was written without it).
 * Every refusal has a one-line message in err naming the UUIDs involved.
 */
int rk_cache_binding_check(uint32_t flags, const uint8_t bound_uuid[16],
                           const struct rk_cache_meta *m, bool force, char *err, size_t errlen);

#endif
