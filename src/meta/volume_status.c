/* The status document of an assembled volume: built once as a cJSON tree (rk_volume_status_tree),
 * printed by rk_volume_status_json or extended by a front end. */
#include "meta/volume_status.h"

#include <errno.h>
#include <stdlib.h>

#include "meta/volume_cache_layer.h"
#include "meta/volume_int.h"
#include "raidkit/member_nbd.h"
#include "raidkit/member_rbd.h"

/* The live state of slot i: the engine's, else the recorded one; active without a device is
 * missing. */
static int vol_slot_state(struct rk_volume *v, uint32_t i)
{
    int st = v->raid ? rk_raid_slot_state(v->raid, i) : -EINVAL;
    if (st < 0)
        st = (int)v->sb.slots[i].state;
    if (st == RK_SLOT_ACTIVE && !v->top[i])
        st = RK_SLOT_MISSING;
    return st;
}

/* One element of "slots". Caller holds v->lock. NULL on ENOMEM. */
static cJSON *vol_slot_tree(struct rk_volume *v, uint32_t i, int st)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "slot", i);
    if (v->paths[i])
        cJSON_AddStringToObject(o, "path", v->paths[i]);
    else
        cJSON_AddNullToObject(o, "path");
    cJSON_AddStringToObject(o, "state", rk_slot_state_name(st));
    cJSON_AddNumberToObject(o, "data_size", (double)v->sb.slots[i].data_size);
    if (v->sb.slots[i].state == RK_SLOT_REBUILDING) {
        cJSON_AddNumberToObject(o, "rebuild_offset", (double)v->sb.slots[i].rebuild_offset);
        cJSON_AddStringToObject(o, "rebuild_mode",
                                v->sb.readd_slots & (1u << i) ? "re-add" : "full");
    }
    if (v->rejoin[i][0])
        cJSON_AddStringToObject(o, "rejoin", v->rejoin[i]);
    if (v->file[i])
        cJSON_AddStringToObject(o, "io_mode", v->file[i]->direct ? "direct" : "buffered");
    if (v->file[i]) /* member kind: "file" or "nbd" (docs/CLI.md "Member URIs") */
        cJSON_AddStringToObject(o, "kind", v->file[i]->ops->kind);
    if (v->file[i] && rk_nbd_state(v->file[i])) {
        cJSON_AddStringToObject(o, "connection", rk_nbd_state(v->file[i]));
        cJSON_AddNumberToObject(o, "latency_us", rk_nbd_mean_latency_us(v->file[i]));
        struct rk_nbd_member_info ni;
        if (!rk_nbd_info(v->file[i], &ni)) {
            cJSON_AddNumberToObject(o, "connections", ni.connections);
            cJSON_AddBoolToObject(o, "multi_conn", ni.multi_conn);
            cJSON_AddBoolToObject(o, "fua", ni.fua);
            cJSON_AddNumberToObject(o, "timeout_ms", (double)ni.timeout_ms);
        }
    }
    if (v->file[i] && rk_rbd_state(v->file[i])) { /* rbd member: librbd's, see member_rbd.h */
        cJSON_AddStringToObject(o, "connection", rk_rbd_state(v->file[i]));
        cJSON_AddNumberToObject(o, "latency_us", rk_rbd_mean_latency_us(v->file[i]));
    }
    vol_remote_status(v, i, o); /* reconnect state of a URI member (served volumes) */
    return o;
}

cJSON *rk_volume_status_tree(struct rk_volume *v)
{
    char uuid[RK_UUID_STR_LEN];
    if (!v)
        return NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    pthread_mutex_lock(&v->lock);
    cJSON_AddStringToObject(root, "array_uuid", rk_uuid_format(v->sb.array_uuid, uuid));
    cJSON_AddStringToObject(root, "name", v->sb.name);
    cJSON_AddStringToObject(root, "level", rk_level_name(v->sb.level));
    cJSON_AddNumberToObject(root, "size", (double)v->sb.array_size);
    cJSON_AddNumberToObject(root, "chunk", v->sb.chunk);
    cJSON_AddNumberToObject(root, "members", v->sb.members);
    cJSON_AddNumberToObject(root, "event", (double)v->sb.events);
    cJSON_AddBoolToObject(root, "clean", v->sb.dirty == RK_SB_CLEAN);
    cJSON_AddBoolToObject(root, "was_dirty", v->was_dirty);
    cJSON_AddBoolToObject(root, "read_only", v->read_only);
    cJSON *arr = cJSON_AddArrayToObject(root, "slots");
    bool degraded = false;
    for (uint32_t i = 0; arr && i < v->sb.members; i++) {
        int st = vol_slot_state(v, i);
        if (st != RK_SLOT_ACTIVE)
            degraded = true;
        cJSON *o = vol_slot_tree(v, i, st);
        if (!o)
            break;
        cJSON_AddItemToArray(arr, o);
    }
    pthread_mutex_unlock(&v->lock);
    cJSON_AddBoolToObject(root, "degraded", degraded);
    vol_cache_status(v, root);
    return root;
}

char *rk_volume_status_json(struct rk_volume *v)
{
    cJSON *root = rk_volume_status_tree(v);
    if (!root)
        return NULL;
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}
