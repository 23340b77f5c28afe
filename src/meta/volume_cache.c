/* Cache binding of an assembled volume (docs/FORMAT.md "Cache binding"). */
#include <errno.h>
#include <string.h>

#include "meta/volume_cache.h"
#include "meta/volume_int.h"

void rk_volume_cache_binding(struct rk_volume *v, uint8_t *array_uuid, uint64_t *array_size,
                             uint32_t *flags, uint8_t *cache_uuid)
{
    pthread_mutex_lock(&v->lock);
    if (array_uuid)
        memcpy(array_uuid, v->sb.array_uuid, RK_UUID_LEN);
    if (array_size)
        *array_size = v->sb.array_size;
    if (flags)
        *flags = v->sb.cache_flags;
    if (cache_uuid)
        memcpy(cache_uuid, v->sb.cache_uuid, RK_UUID_LEN);
    pthread_mutex_unlock(&v->lock);
}

int rk_volume_cache_bind(struct rk_volume *v, uint32_t flags, const uint8_t *cache_uuid)
{
    static const uint8_t zero[RK_UUID_LEN];
    if (v->read_only)
        return -EROFS;
    if (!cache_uuid)
        cache_uuid = zero;
    bool bound = (flags & RK_SB_CACHE_BOUND) != 0;
    if ((flags & ~RK_SB_CACHE_MASK) || ((flags & RK_SB_CACHE_DIRTY) && !bound) ||
        bound == !memcmp(cache_uuid, zero, RK_UUID_LEN))
        return -EINVAL;
    pthread_mutex_lock(&v->lock);
    uint32_t old_flags = v->sb.cache_flags;
    uint8_t old_uuid[RK_UUID_LEN];
    memcpy(old_uuid, v->sb.cache_uuid, RK_UUID_LEN);
    v->sb.cache_flags = flags;
    memcpy(v->sb.cache_uuid, cache_uuid, RK_UUID_LEN);
    v->sb.events++;
    int r = vol_write_sbs(v, false);
    if (r) {
        v->sb.cache_flags = old_flags;
        memcpy(v->sb.cache_uuid, old_uuid, RK_UUID_LEN);
    }
    pthread_mutex_unlock(&v->lock);
    return r;
}
