/* The cache of an assembled volume (volume_cache_layer.c): the layer for the control socket's cache
 * commands, and the "cache" object of the status document. */
#ifndef RK_META_VOLUME_CACHE_LAYER_H
#define RK_META_VOLUME_CACHE_LAYER_H

#include <cjson/cJSON.h>

#include "raidkit/volume.h"

struct rk_cache;

/* The volume's cache layer (serve --cache), NULL without one or for NULL v. Owned by v. */
struct rk_cache *rk_volume_cache(struct rk_volume *v);

/* Online cache requests of v, with the array's cache binding (docs/FORMAT.md "Cache binding")
 * kept in step: the binding's dirty flag is set durably before writeback is entered and cleared
 * once a switch out of it has written everything back; detach unbinds the array after the cache
 * is detached durably; attach binds it to the attached cache. -ENODEV when v was served without
 * --cache. 0 or -errno with one line in err. */
int rk_volume_cache_mode(struct rk_volume *v, int mode, char *err, size_t errlen);
int rk_volume_cache_detach(struct rk_volume *v, char *err, size_t errlen);
int rk_volume_cache_attach(struct rk_volume *v, const char *path, char *err, size_t errlen);

/* Add "cache" to the status tree root: null without a cache, else device, mode, state,
 * block_size, blocks, used_blocks, occupancy (0..1), dirty_blocks, dirty_bytes, read/write hits,
 * misses and hit ratios, bypass (requests per reason, docs/CLI.md "status"), written_back_bytes,
 * writeback_rate_mib_s, writeback_eta_s (-1 unknown), io_errors, journal_bytes, commits. */
void vol_cache_status(struct rk_volume *v, cJSON *root);

#endif
