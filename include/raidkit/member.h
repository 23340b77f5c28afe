/* raidkit members: the devices at the bottom of the stack.
 * file = a regular file or block device (io_uring with a pread/pwrite fallback, O_DIRECT when the
 * member supports it); fault = fault injection wrapping any device (tests and debugging only). */
#ifndef RAIDKIT_MEMBER_H
#define RAIDKIT_MEMBER_H

#include <stdbool.h>
#include <stdint.h>

#include "raidkit/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rk_file_open flags. */
#define RK_FILE_READ_ONLY 0x1u /* open O_RDONLY; writes return -EPERM */
#define RK_FILE_BUFFERED  0x2u /* never use O_DIRECT */
#define RK_FILE_NO_URING  0x4u /* use the pread/pwrite fallback (also: env RAIDKIT_NO_URING=1) */

/*
 * Open a member file or block device at path.
 * O_DIRECT is used when the file system accepts it (probed with an aligned read); then
 * dev->direct is true and dev->block_size is the smallest alignment O_DIRECT accepts (512 or
 * 4096), and every buffer passed in must be 4096-aligned. Otherwise buffered I/O with block
 * size 512. dev->size is the file size (block devices: BLKGETSIZE64) rounded down to block_size.
 * I/O goes through io_uring when the kernel supports it (probed at run time), else pread/pwrite;
 * short transfers and -EAGAIN are resubmitted until complete, so callers never see them.
 * A writable open takes an exclusive flock on the file, so one member serves one array user at a
 * time: -EBUSY when another open (any process) holds it. Read-only opens take no lock.
 * Returns 0 and *out, or -errno from open/fstat (e.g. -ENOENT, -EACCES, -EISDIR for a directory),
 * or -EBUSY.
 */
int rk_file_open(const char *path, uint32_t flags, struct rk_dev **out);

/* Which I/O path a file member uses: "io_uring" or "pread". dev must come from rk_file_open. */
const char *rk_file_engine(const struct rk_dev *dev);

/* Fault kinds for rk_fault_add_range(). */
#define RK_FAULT_READ  0x1u
#define RK_FAULT_WRITE 0x2u

/*
 * Wrap child in a fault-injection device with identical geometry. With own_child, closing the
 * fault device closes child. Initially passes everything through. Returns 0 / -ENOMEM.
 */
int rk_fault_open(struct rk_dev *child, bool own_child, struct rk_dev **out);

/* Requests of kind `which` (RK_FAULT_READ and/or RK_FAULT_WRITE) touching [off, off+len) fail
 * with -EIO from now on. Up to 16 ranges; -ENOSPC beyond. dev must be a fault device. */
int rk_fault_add_range(struct rk_dev *dev, uint32_t which, uint64_t off, uint64_t len);

/* Remove all EIO ranges and the fail-all / fail-after state (not a power cut). */
void rk_fault_clear(struct rk_dev *dev);

/* Every request (including flush) fails with -EIO while on is true. */
void rk_fault_fail_all(struct rk_dev *dev, bool on);

/* After n more successful writes, every request fails with -EIO (n = 0: at the next write). */
void rk_fault_fail_after_writes(struct rk_dev *dev, uint64_t n);

/*
 * Power cut: every write not yet followed by a successful flush (of this device) is undone on
 * the child (its old content restored, newest first), then every later request fails with
 * -EIO. Writes with RK_WRITE_FUA count as flushed. Returns 0 or the child's -errno.
 * To make this possible the fault device keeps the old content of each unflushed write (read
 * from the child before writing); flush discards that undo log.
 */
int rk_fault_power_cut(struct rk_dev *dev);

/*
 * Apply a textual fault spec (the CLI's --debug-fault option), comma-separated items:
 *   fail-all | read-eio=OFF+LEN | write-eio=OFF+LEN | eio=OFF+LEN | fail-after-writes=N
 * OFF/LEN take K/M/G/T suffixes; offsets are member byte offsets. Returns 0 or -EINVAL, with a
 * message in err (errlen bytes).
 */
int rk_fault_apply_spec(struct rk_dev *dev, const char *spec, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
