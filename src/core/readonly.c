/* The read-only filter device (core/readonly.h): reads go to the device below, every write
 * is refused with -EPERM before it reaches it. */
#include "core/readonly.h"

#include <errno.h>
#include <stddef.h>

static int ro_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    return rk_dev_read(dev->priv, buf, len, off);
}

static int ro_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off, uint32_t flags)
{
    return -EPERM;
}

static int ro_flush(struct rk_dev *dev)
{
    return 0; /* nothing was written */
}

static int ro_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    return -EPERM;
}

static int ro_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    return -EPERM;
}

static int ro_map(struct rk_dev *dev, uint64_t off, uint64_t len, uint64_t *extent_len,
                  bool *is_hole)
{
    return rk_dev_map(dev->priv, off, len, extent_len, is_hole);
}

static const struct rk_dev_ops ro_ops = {
    .kind = "read-only",
    .read = ro_read,
    .write = ro_write,
    .flush = ro_flush,
    .discard = ro_discard,
    .write_zeroes = ro_write_zeroes,
    .map = ro_map,
};

int rk_readonly_open(struct rk_dev *lower, struct rk_dev **out)
{
    struct rk_dev *dev = rk_dev_alloc(&ro_ops, lower, lower->name);
    *out = dev;
    if (!dev)
        return -ENOMEM;
    dev->size = lower->size;
    dev->block_size = lower->block_size;
    dev->opt_io_size = lower->opt_io_size;
    dev->direct = lower->direct;
    return 0;
}
