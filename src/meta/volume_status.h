/* The volume's status document as a cJSON tree, for front ends that extend it with their own
 * fields (the control socket adds job progress and I/O counters) and print it once. */
#ifndef RK_META_VOLUME_STATUS_H
#define RK_META_VOLUME_STATUS_H

#include <cjson/cJSON.h>

#include "raidkit/volume.h"

/*
 * Build the status of v (what rk_volume_status_json prints): array_uuid, name, level, size,
 * chunk, members, event, clean, was_dirty, read_only, slots (slot, path, state, data_size,
 * rebuild_offset while rebuilding, io_mode), degraded. Takes v's lock while reading. Returns
 * a new tree (the caller frees it with cJSON_Delete), NULL for NULL v or on ENOMEM.
 */
cJSON *rk_volume_status_tree(struct rk_volume *v);

#endif
