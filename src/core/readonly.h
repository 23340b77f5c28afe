/* The read-only filter device: reads pass through to the device below, writes, discards and
 * write-zeroes fail with -EPERM, flush succeeds (nothing was written). */
#ifndef RK_CORE_READONLY_H
#define RK_CORE_READONLY_H

#include "raidkit/device.h"

/*
 * Open a read-only filter over lower: same size, block size, preferred I/O size and direct
 * flag as lower, same name. The filter does not own lower: rk_dev_close on it frees only the
 * filter, and lower must outlive it. Use it where the device below would take a refused write
 * for a failing member (e.g. a raid device over members opened read-only): the refusal happens
 * at the top and nothing below sees the write. Returns 0 and *out, or -ENOMEM (*out NULL).
 */
int rk_readonly_open(struct rk_dev *lower, struct rk_dev **out);

#endif
