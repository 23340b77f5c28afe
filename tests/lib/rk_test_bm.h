/* The write-intent bitmap checker shared by the unit tests of the bitmap's ordering
 * (test_bitmap, test_bitmap_share, test_bitmap_stress). Header-only, as rk_test.h. */
#ifndef RK_TEST_BM_H
#define RK_TEST_BM_H

#include <stdint.h>
#include <stdlib.h>

#include "meta/superblock.h"
#include "raid/bitmap_disk.h"
#include "raidkit/device.h"

/* Regions of the member data write [off, off + len) (member byte offsets; data area from doff,
 * regions of region bytes) whose bit the 4 KiB bitmap area that member dev holds at
 * RK_BM_OFFSET does not mark; 1 when that area does not decode (or cannot be read), 0 when every
 * region is marked. The caller serializes it against writes of the area. */
static inline int rk_test_bm_unmarked(struct rk_dev *dev, uint64_t off, uint64_t len, uint64_t doff,
                                      uint64_t region)
{
    uint8_t area[4096];
    struct rk_bm_hdr h;
    char err[200];
    if (rk_dev_read(dev, area, sizeof(area), RK_BM_OFFSET) != 0 ||
        rk_bm_decode(area, sizeof(area), 0, &h, err, sizeof(err)) != 0)
        return 1;
    int n = 0;
    for (uint64_t i = (off - doff) / region; i <= (off + len - 1 - doff) / region; i++)
        n += !rk_bm_test(area, i);
    return n;
}

/* A checking member of these tests wraps a mem device: its priv starts with the inner device
 * (owned). What it does not check it forwards: read, flush, close (frees priv). */
struct rk_test_fwd {
    struct rk_dev *inner;
};

static inline int rk_test_fwd_read(struct rk_dev *d, void *buf, uint64_t len, uint64_t off)
{
    return rk_dev_read(((struct rk_test_fwd *)d->priv)->inner, buf, len, off);
}

static inline int rk_test_fwd_flush(struct rk_dev *d)
{
    return rk_dev_flush(((struct rk_test_fwd *)d->priv)->inner);
}

static inline void rk_test_fwd_close(struct rk_dev *d)
{
    struct rk_test_fwd *o = d->priv;
    rk_dev_close(o->inner);
    free(o);
}

#endif
