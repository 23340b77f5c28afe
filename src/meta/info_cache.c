/* The cache part of `raidkit info` (docs/CLI.md "info"): cache devices are opened read-only
 * through src/cache/meta.h (the index is loaded, nothing is written). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "meta/info_cache.h"
#include "raidkit/member.h"

bool info_cache_probe(const char *path)
{
    struct rk_dev *dev = NULL;
    if (rk_file_open(path, RK_FILE_READ_ONLY | RK_FILE_BUFFERED, &dev))
        return false;
    uint8_t *blk = rk_buf_alloc(4096);
    bool yes =
        blk && dev->size >= 4096 && !rk_dev_read(dev, blk, 4096, 0) && rk_cache_meta_has_magic(blk);
    free(blk);
    rk_dev_close(dev);
    return yes;
}

void info_cache_read(const char *path, struct info_cache *c)
{
    memset(c, 0, sizeof(*c));
    c->path = path;
    struct rk_dev *dev = NULL;
    struct rk_cache_meta *m = NULL;
    c->rc = rk_file_open(path, RK_FILE_READ_ONLY | RK_FILE_BUFFERED, &dev);
    if (c->rc) {
        rk_set_err(c->reason, sizeof(c->reason), "%s: %s", path, strerror(-c->rc));
        return;
    }
    c->rc = rk_cache_meta_open_ro(dev, path, NULL, 0, &m, c->reason, sizeof(c->reason));
    if (!c->rc) {
        struct rk_cache_meta_stats st;
        rk_cache_meta_stats(m, &st);
        memcpy(c->uuid, rk_cache_meta_uuid(m), 16);
        memcpy(c->array_uuid, rk_cache_meta_array_uuid(m), 16);
        c->array_size = rk_cache_meta_array_size(m);
        c->block_size = rk_cache_meta_block_size(m);
        c->blocks = rk_cache_meta_blocks(m);
        c->data_offset = rk_cache_meta_data_offset(m);
        c->mode = rk_cache_meta_mode(m);
        c->journal_size = st.journal_size;
        c->mapped = st.mapped;
        c->dirty = st.dirty;
        c->free = st.free;
    }
    rk_cache_meta_close(m);
    rk_dev_close(dev);
}

/* "bound" / "stale" / NULL: how array's binding relates to cache c. */
static const char *info_cache_relation(const struct info_cache *c, const struct rk_sb *array)
{
    if (!array || memcmp(array->array_uuid, c->array_uuid, 16))
        return NULL;
    bool bound =
        (array->cache_flags & RK_SB_CACHE_BOUND) && !memcmp(array->cache_uuid, c->uuid, 16);
    return bound ? "bound" : "stale";
}

void info_cache_text(FILE *f, const struct info_cache *c, const struct rk_sb *array)
{
    char u[RK_CACHE_UUID_STR], sz[32];
    if (c->rc) {
        fprintf(f, "Cache %s: refused: %s\n", c->path, c->reason);
        return;
    }
    fprintf(f, "Cache %s (%s)\n", rk_cache_uuid_format(c->uuid, u), c->path);
    fprintf(f, "  bound array:  %s, %" PRIu64 " bytes\n", rk_cache_uuid_format(c->array_uuid, u),
            c->array_size);
    fprintf(f, "  mode:         %s\n", rk_cache_mode_name(c->mode));
    fprintf(f, "  block size:   %" PRIu32 " KiB\n", c->block_size / 1024);
    fprintf(f, "  blocks:       %" PRIu64 " (%s of data from offset %" PRIu64 ")\n", c->blocks,
            rk_format_size(c->blocks * c->block_size, sz, sizeof(sz)), c->data_offset);
    fprintf(f, "  mapped:       %" PRIu64 " (dirty %" PRIu64 ", free %" PRIu64 ")\n", c->mapped,
            c->dirty, c->free);
    const char *rel = info_cache_relation(c, array);
    if (rel)
        fprintf(f, "  binding:      %s\n",
                !strcmp(rel, "bound") ? "the array given is bound to this cache"
                                      : "stale: the array given is not bound to this cache");
}

cJSON *info_cache_json(const struct info_cache *c, const struct rk_sb *array)
{
    char u[RK_CACHE_UUID_STR];
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "path", c->path);
    if (c->rc) {
        cJSON_AddStringToObject(o, "status", "refused");
        cJSON_AddStringToObject(o, "reason", c->reason);
        return o;
    }
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddStringToObject(o, "uuid", rk_cache_uuid_format(c->uuid, u));
    cJSON_AddStringToObject(o, "array_uuid", rk_cache_uuid_format(c->array_uuid, u));
    cJSON_AddNumberToObject(o, "array_size", (double)c->array_size);
    cJSON_AddStringToObject(o, "mode", rk_cache_mode_name(c->mode));
    cJSON_AddNumberToObject(o, "block_size", c->block_size);
    cJSON_AddNumberToObject(o, "blocks", (double)c->blocks);
    cJSON_AddNumberToObject(o, "data_offset", (double)c->data_offset);
    cJSON_AddNumberToObject(o, "journal_size", (double)c->journal_size);
    cJSON_AddNumberToObject(o, "mapped", (double)c->mapped);
    cJSON_AddNumberToObject(o, "dirty", (double)c->dirty);
    cJSON_AddNumberToObject(o, "free", (double)c->free);
    const char *rel = info_cache_relation(c, array);
    if (rel)
        cJSON_AddStringToObject(o, "binding", rel);
    return o;
}

char *info_cache_binding(const struct rk_sb *sb, char *buf, size_t len)
{
    char u[RK_CACHE_UUID_STR];
    if (!(sb->cache_flags & RK_SB_CACHE_BOUND))
        snprintf(buf, len, "none");
    else
        snprintf(buf, len, "cache %s%s", rk_cache_uuid_format(sb->cache_uuid, u),
                 (sb->cache_flags & RK_SB_CACHE_DIRTY) ? ", may hold dirty data" : "");
    return buf;
}
