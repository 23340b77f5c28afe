/* Allocation queries of a device (include/raidkit/device.h: rk_dev_map, rk_dev_zero_fast):
 * the validating wrappers around the optional map and zero_fast operations. */
#include <errno.h>

#include "raidkit/device.h"

int rk_dev_map(struct rk_dev *dev, uint64_t off, uint64_t len, uint64_t *extent_len, bool *is_hole)
{
    if (len == 0)
        return -EINVAL;
    int r = rk_dev_check_range(dev, RK_OP_READ, len, off);
    if (r)
        return r;
    *extent_len = len;
    *is_hole = false;
    if (!dev->ops->map)
        return 0;
    uint64_t ext = 0;
    bool hole = false;
    if (dev->ops->map(dev, off, len, &ext, &hole) || ext == 0 || ext > len)
        return 0; /* cannot tell: data */
    *extent_len = ext;
    *is_hole = hole;
    return 0;
}

bool rk_dev_zero_fast(struct rk_dev *dev)
{
    return dev && dev->ops->zero_fast && dev->ops->zero_fast(dev);
}
