/* The array side of the SSD cache (docs/FORMAT.md "Cache binding"): reading and writing the
 * cache binding of an assembled volume's superblocks. */
#ifndef RK_META_VOLUME_CACHE_H
#define RK_META_VOLUME_CACHE_H

#include <stdint.h>

#include "raidkit/volume.h"

/* The array's identity and binding as the volume's in-memory superblock holds them: array_uuid
 * (16 bytes), array_size (bytes), binding flags (RK_SB_CACHE_*, the same bits as
 * RK_CACHE_BIND_*) and the bound cache's UUID (16 bytes, zero when unbound). Any pointer may be
 * NULL. Takes the volume lock. */
void rk_volume_cache_binding(struct rk_volume *v, uint8_t *array_uuid, uint64_t *array_size,
                             uint32_t *flags, uint8_t *cache_uuid);

/*
 * Record a new binding (flags RK_SB_CACHE_*, cache_uuid 16 bytes; NULL = zero with flags 0) in
 * every active and rebuilding member's superblock: event + 1, each write flushed (the caller
 * may rely on it being durable when 0 is returned). Takes the volume lock: never call it while
 * holding it or from the raid data path. Returns 0, -EROFS (read-only volume), -EINVAL (flags
 * out of bounds) or the write's -errno (the in-memory binding is then restored).
 */
int rk_volume_cache_bind(struct rk_volume *v, uint32_t flags, const uint8_t *cache_uuid);

#endif
