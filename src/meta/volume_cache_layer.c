/* The cache phase of volume assembly and close (docs/ARCHITECTURE.md "Cache"): the cache device's
 * stack and the cache layer over the raid device, `[cache: ssd + backing] -> raid -> members`;
 * and the "cache" object of the status document. */
#include "meta/volume_cache_layer.h"

#include <stdio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "core/util.h"
#include "meta/volume_cache.h"
#include "meta/volume_int.h"
#include "raidkit/emul.h"
#include "raidkit/member.h"

struct rk_cache *rk_volume_cache(struct rk_volume *v)
{
    return v ? v->cache : NULL;
}

/* Record the binding of v to its attached cache: bound, dirty flag when dirty. */
static int vol_cache_rebind(struct rk_volume *v, bool dirty, char *err, size_t errlen)
{
    uint8_t uuid[16];
    int r = rk_cache_uuid(v->cache, uuid);
    if (!r)
        r = rk_volume_cache_bind(v, RK_SB_CACHE_BOUND | (dirty ? RK_SB_CACHE_DIRTY : 0), uuid);
    if (r)
        rk_set_err(err, errlen, "recording the cache binding in the array's superblocks: %s",
                   strerror(-r));
    return r;
}

static int vol_cache_none(struct rk_volume *v, char *err, size_t errlen)
{
    if (v->cache)
        return 0;
    rk_set_err(err, errlen, "the volume is served without a cache layer (serve --cache)");
    return -ENODEV;
}

int rk_volume_cache_mode(struct rk_volume *v, int mode, char *err, size_t errlen)
{
    int r = vol_cache_none(v, err, errlen);
    if (!r && mode == RK_CACHE_WRITEBACK)
        r = vol_cache_rebind(v, true, err, errlen); /* durable before the first dirty block */
    if (!r)
        r = rk_cache_set_mode(v->cache, (enum rk_cache_mode)mode, err, errlen);
    if (!r && mode != RK_CACHE_WRITEBACK) {
        struct rk_cache_status st;
        rk_cache_status(v->cache, &st);
        if (!st.dirty)
            r = vol_cache_rebind(v, false, err, errlen);
    }
    return r;
}

int rk_volume_cache_detach(struct rk_volume *v, char *err, size_t errlen)
{
    int r = vol_cache_none(v, err, errlen);
    if (!r)
        r = rk_cache_detach(v->cache, err, errlen);
    if (!r) {
        r = rk_volume_cache_bind(v, 0, NULL);
        if (r)
            rk_set_err(err, errlen, "cache detached, but clearing the array's binding failed: %s",
                       strerror(-r));
    }
    return r;
}

int rk_volume_cache_attach(struct rk_volume *v, const char *path, char *err, size_t errlen)
{
    int r = vol_cache_none(v, err, errlen);
    if (!r)
        r = rk_cache_attach(v->cache, path, v->file_flags, err, errlen);
    if (!r) {
        struct rk_cache_status st;
        rk_cache_status(v->cache, &st);
        r = vol_cache_rebind(v, st.mode == RK_CACHE_WRITEBACK || st.dirty, err, errlen);
    }
    return r;
}

/* Without --cache: an array bound to a cache that may hold dirty data is refused (naming it)
 * unless force; a clean binding is cleared (written with the dirty mark, before any data write)
 * so the cache is refused as stale afterwards. */
static int vol_cache_unbound(struct rk_volume *v, const struct rk_open_opts *o, char *err,
                             size_t errlen)
{
    int r =
        rk_cache_binding_check(v->sb.cache_flags, v->sb.cache_uuid, NULL, o->force, err, errlen);
    if (r < 0)
        return r;
    if (r == RK_CACHE_BIND_UNBIND && !v->read_only) {
        char u[RK_CACHE_UUID_STR];
        rk_warn("array served without its cache %s: the binding is cleared (that cache is stale "
                "from now on)%s",
                rk_cache_uuid_format(v->sb.cache_uuid, u),
                v->sb.cache_flags & RK_SB_CACHE_DIRTY ? "; its dirty data is lost (--force)" : "");
        v->sb.cache_flags = 0;
        memset(v->sb.cache_uuid, 0, sizeof(v->sb.cache_uuid));
    }
    return 0;
}

/* The cache device is bound to this array and the array to it; read-only, writes nothing. */
static int vol_cache_check_bound(struct rk_volume *v, struct rk_dev *top, const char *path,
                                 char *err, size_t errlen)
{
    struct rk_cache_meta *m = NULL;
    int r = rk_cache_meta_open_ro(top, path, v->sb.array_uuid, v->sb.array_size, &m, err, errlen);
    if (!r)
        r = rk_cache_binding_check(v->sb.cache_flags, v->sb.cache_uuid, m, false, err, errlen);
    rk_cache_meta_close(m);
    return r;
}

/* Stripe width of the raid device in bytes when it has parity (raid5/6), else 0. */
static uint64_t vol_cache_stripe(const struct rk_volume *v)
{
    int par = v->sb.level == RK_LEVEL_RAID5 ? 1 : v->sb.level == RK_LEVEL_RAID6 ? 2 : 0;
    return par && v->sb.members > (uint32_t)par ? (uint64_t)v->sb.chunk * (v->sb.members - par) : 0;
}

/* file -> [emul] -> [fault] of the cache device; *top owns the rest, *fault the fault member or
 * NULL. 0 or -errno with err. */
static int vol_cache_stack(struct rk_volume *v, const struct rk_open_opts *o, struct rk_dev **top,
                           struct rk_dev **fault, char *err, size_t errlen)
{
    struct rk_dev *d = NULL, *up = NULL;
    *top = *fault = NULL;
    int r = rk_file_open(o->cache_path, v->file_flags, &d);
    if (r) {
        rk_set_err(err, errlen, "cache device %s: %s", o->cache_path, strerror(-r));
        return r;
    }
    if (o->cache_emul) {
        r = rk_emul_open(d, true, o->cache_emul, &up);
        if (r) {
            rk_dev_close(d);
            rk_set_err(err, errlen, "device model '%s' on cache device %s: %s", o->cache_emul->name,
                       o->cache_path, strerror(-r));
            return r;
        }
        d = up;
    }
    if (o->cache_fault_spec) {
        r = rk_fault_open(d, true, &up);
        if (r) {
            rk_dev_close(d);
            rk_set_err(err, errlen, "fault injection on cache device %s: %s", o->cache_path,
                       strerror(-r));
            return r;
        }
        d = up;
        char ferr[200] = "";
        r = rk_fault_apply_spec(d, o->cache_fault_spec, ferr, sizeof(ferr));
        if (r) {
            rk_dev_close(d);
            rk_set_err(err, errlen, "fault spec '%s' for the cache: %s", o->cache_fault_spec, ferr);
            return r;
        }
        *fault = d;
    }
    *top = d;
    return 0;
}

int vol_cache_setup(struct rk_volume *v, const struct rk_open_opts *o, char *err, size_t errlen)
{
    if (!o->cache_path)
        return o->cache_rebind ? 0 : vol_cache_unbound(v, o, err, errlen);
    if (v->read_only) {
        rk_set_err(err, errlen, "--read-only with a cache (%s) is not supported", o->cache_path);
        return -EINVAL;
    }
    struct rk_dev *top, *fault;
    int r = vol_cache_stack(v, o, &top, &fault, err, errlen);
    if (r)
        return r;
    r = vol_cache_check_bound(v, top, o->cache_path, err, errlen);
    if (r) {
        rk_dev_close(top);
        return r;
    }
    struct rk_cache_opts co = {
        .unclean = v->was_dirty,
        .writeback_rate = o->cache_writeback_rate,
        .stripe = vol_cache_stripe(v),
    };
    memcpy(co.array_uuid, v->sb.array_uuid, 16);
    r = rk_cache_open(v->raid, top, o->cache_path, &co, &v->cache, &v->cache_dev, err, errlen);
    if (r)
        return r; /* rk_cache_open closed the stack */
    rk_cache_set_fault_dev(v->cache, fault);
    /* The binding's dirty flag, written with the dirty mark: set while writeback or dirty. */
    struct rk_cache_status st;
    rk_cache_status(v->cache, &st);
    if (st.mode == RK_CACHE_WRITEBACK || st.dirty)
        v->sb.cache_flags |= RK_SB_CACHE_DIRTY;
    else
        v->sb.cache_flags &= ~RK_SB_CACHE_DIRTY;
    return 0;
}

int vol_cache_close(struct rk_volume *v)
{
    if (!v->cache_dev)
        return 0;
    struct rk_cache_status st;
    rk_cache_status(v->cache, &st);
    int r = rk_dev_flush(v->cache_dev);
    if (r)
        rk_err("cache flush failed: %s", strerror(-r));
    if (!r && st.state == RK_CACHE_STATE_FAILED) {
        /* Invalidations made while it failed never reached its journal. */
        rk_err("cache device %s failed: leaving the array marked dirty, so that the next start "
               "drops the cache's clean blocks",
               st.path);
        r = -EIO;
    }
    rk_dev_close(v->cache_dev);
    v->cache_dev = NULL;
    v->cache = NULL;
    return r;
}

/* "reasons" object: requests per bypass reason (and fills admitted). */
static void vol_cache_reasons(cJSON *o, const struct rk_cache_status *st)
{
    cJSON *b = cJSON_AddObjectToObject(o, "bypass");
    for (int i = 0; b && i < RK_CACHE_REASONS; i++)
        cJSON_AddNumberToObject(b, rk_cache_reason_name((enum rk_cache_reason)i),
                                (double)st->bypass[i]);
}

static double vol_ratio(uint64_t hit, uint64_t miss)
{
    return hit + miss ? (double)hit / (double)(hit + miss) : 0.0;
}

void vol_cache_status(struct rk_volume *v, cJSON *root)
{
    if (!v->cache) {
        cJSON_AddNullToObject(root, "cache");
        return;
    }
    struct rk_cache_status st;
    rk_cache_status(v->cache, &st);
    cJSON *o = cJSON_AddObjectToObject(root, "cache");
    if (!o)
        return;
    cJSON_AddStringToObject(o, "device", st.path);
    cJSON_AddStringToObject(o, "mode", rk_cache_mode_name(st.mode));
    cJSON_AddStringToObject(o, "state", rk_cache_state_name(st.state));
    cJSON_AddNumberToObject(o, "block_size", st.block_size);
    cJSON_AddNumberToObject(o, "blocks", (double)st.blocks);
    cJSON_AddNumberToObject(o, "used_blocks", (double)st.mapped);
    cJSON_AddNumberToObject(o, "occupancy", st.blocks ? (double)st.mapped / st.blocks : 0.0);
    cJSON_AddNumberToObject(o, "dirty_blocks", (double)st.dirty);
    cJSON_AddNumberToObject(o, "dirty_bytes", (double)st.dirty * st.block_size);
    cJSON_AddNumberToObject(o, "read_hits", (double)st.read_hits);
    cJSON_AddNumberToObject(o, "read_misses", (double)st.read_misses);
    cJSON_AddNumberToObject(o, "read_hit_ratio", vol_ratio(st.read_hits, st.read_misses));
    cJSON_AddNumberToObject(o, "write_hits", (double)st.write_hits);
    cJSON_AddNumberToObject(o, "write_misses", (double)st.write_misses);
    cJSON_AddNumberToObject(o, "write_hit_ratio", vol_ratio(st.write_hits, st.write_misses));
    vol_cache_reasons(o, &st);
    cJSON_AddNumberToObject(o, "written_back_bytes", (double)st.written_back);
    cJSON_AddNumberToObject(o, "writeback_rate_mib_s", st.writeback_rate / (1024.0 * 1024.0));
    cJSON_AddNumberToObject(o, "writeback_eta_s", st.eta);
    cJSON_AddNumberToObject(o, "io_errors", (double)st.io_errors);
    cJSON_AddNumberToObject(o, "journal_bytes", (double)st.meta.journal_bytes);
    cJSON_AddNumberToObject(o, "commits", (double)st.meta.commits);
}
