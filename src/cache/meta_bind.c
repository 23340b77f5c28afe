/* The array side of a cache binding (docs/FORMAT.md "Cache binding"): whether an array whose
 * superblock names a cache may start with the cache given, without one, or not at all. */
#include <errno.h>
#include <string.h>

#include "cache/meta_int.h"
#include "core/util.h"

int rk_cache_binding_check(uint32_t flags, const uint8_t bound_uuid[16],
                           const struct rk_cache_meta *m, bool force, char *err, size_t errlen)
{
    char a[RK_CACHE_UUID_STR], b[RK_CACHE_UUID_STR];
    bool bound = (flags & RK_CACHE_BIND_BOUND) != 0;
    if (m) {
        if (bound && !memcmp(bound_uuid, m->sb.cache_uuid, 16))
            return 0;
        if (bound)
            rk_set_err(err, errlen, "cache %s (%s) is stale: the array is bound to cache %s",
                       m->name, rk_cache_uuid_format(m->sb.cache_uuid, a),
                       rk_cache_uuid_format(bound_uuid, b));
        else
            rk_set_err(err, errlen,
                       "cache %s (%s) is stale: the array is bound to no cache (it was used "
                       "without it)",
                       m->name, rk_cache_uuid_format(m->sb.cache_uuid, a));
        return -ESTALE;
    }
    if (!bound)
        return 0;
    if ((flags & RK_CACHE_BIND_DIRTY) && !force) {
        rk_set_err(err, errlen,
                   "the array is bound to cache %s, which may hold dirty data: give the cache "
                   "device (or --force to use the backing alone, losing that data)",
                   rk_cache_uuid_format(bound_uuid, a));
        return -EUCLEAN;
    }
    return RK_CACHE_BIND_UNBIND;
}
