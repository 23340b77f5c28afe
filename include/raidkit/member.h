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

/* True when dev's asynchronous submits run their data I/O in the submitter's thread (pread /
 * pwrite; buffered members by default, see src/member/file.c file_inline_wanted; env
 * RAIDKIT_MEMBER_IO=ring|inline overrides), false when they go through its io_uring. false for
 * a device not from rk_file_open. */
bool rk_file_inline(const struct rk_dev *dev);

/* True when dev's reads and writes of pages its file holds are memcpys on a shared mapping (a
 * writable member on tmpfs or ramfs, src/member/file_mmap.c; RAIDKIT_MEMBER_IO=inline|ring|
 * reaper turns it off). false for a device not from rk_file_open. */
bool rk_file_mapped(const struct rk_dev *dev);

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

/* How many more EIO ranges dev accepts (0 for a device that is not a fault device). */
unsigned rk_fault_ranges_free(struct rk_dev *dev);

/* Remove all EIO ranges and the fail-all / fail-after state (not a power cut). */
void rk_fault_clear(struct rk_dev *dev);

/* Every request (including flush) fails with -EIO while on is true. */
void rk_fault_fail_all(struct rk_dev *dev, bool on);

/* After n more successful writes, every request fails with -EIO (n = 0: at the next write). */
void rk_fault_fail_after_writes(struct rk_dev *dev, uint64_t n);

/*
 * Power cut of the device's power domain (the device alone, or every member that joined the
 * shared domain): each member stops taking requests, waits for the writes and flushes it is
 * running, then the writes not yet covered by a successful flush (of that member) are kept or
 * undone on the child according to the member's keep mode (rk_fault_set_keep; default
 * RK_FAULT_KEEP_NONE: all undone, newest first), the child is flushed, and every later request
 * fails with -EIO (or blocks: rk_fault_set_hang); requests running at the cut complete with
 * -EIO (their data is kept or undone like any unflushed write; a flush running then covers
 * nothing). Writes with RK_WRITE_FUA, and writes that had completed before a flush started,
 * always persist. Returns 0 or the child's -errno.
 * To make this possible the fault device keeps the old content of each unflushed write (read
 * from the child before writing); a flush discards the entries it covers. Writes therefore run
 * synchronously inside the fault device (reads still go down asynchronously).
 */
int rk_fault_power_cut(struct rk_dev *dev);

/* Granularity of a power cut's keep decision, bytes: every RK_FAULT_ATOM-aligned block (member
 * offsets) of an unflushed write survives or is undone as a whole, independently of the other
 * blocks of the same write. So a multi-block write can tear at 4 KiB boundaries but never
 * inside a block (docs/TORTURE.md "Power cut model"). */
#define RK_FAULT_ATOM 4096u

/* What a power cut keeps of the unflushed writes. */
enum rk_fault_keep {
    RK_FAULT_KEEP_NONE = 0, /* undo every unflushed write (a disk without a volatile cache) */
    RK_FAULT_KEEP_ALL,      /* keep them all (the cache was written back just in time) */
    RK_FAULT_KEEP_RANDOM,   /* keep each block of each unflushed write with probability 1/2 */
};

/* Set the keep mode of dev's power cuts; seed makes RK_FAULT_KEEP_RANDOM reproducible (mixed
 * with the child's name, so members sharing a seed still choose independently). Returns 0, or
 * -EINVAL (not a fault device, bad mode). */
int rk_fault_set_keep(struct rk_dev *dev, enum rk_fault_keep keep, uint64_t seed);

/* Delay every request of dev by usec microseconds (0..10 s) before it is checked and passed
 * down. Returns 0 or -EINVAL. Set it before I/O starts. */
int rk_fault_set_latency(struct rk_dev *dev, uint64_t usec);

/* Arm a power cut of dev's power domain after n more member writes (write, write-zeroes,
 * discard; counted over every member of the domain): the (n+1)-th fails with -EIO and cuts
 * the power as rk_fault_power_cut does, in the thread that issued it. Returns 0 or -EINVAL. */
int rk_fault_cut_after(struct rk_dev *dev, uint64_t n);

/* hang true: after a cut of dev's power domain, every member request of the domain (new ones,
 * and those running at the cut) blocks forever instead of failing, as on a machine without
 * power no reply is ever sent; the process is then killed (the torture test SIGKILLs the server
 * once "power cut complete" is logged). Default false: requests fail with -EIO (a disk that
 * lost power alone). Returns 0 or -EINVAL. */
int rk_fault_set_hang(struct rk_dev *dev, bool hang);

/* Move dev into the process-wide shared power domain (before any I/O): cut-after then counts
 * the writes of every member in it and a cut hits all of them at once (a power cut of the
 * whole machine). The domain resets when its last member is closed. Returns 0, -EINVAL, or
 * -ENOSPC beyond 64 members. */
int rk_fault_join_shared(struct rk_dev *dev);

/* What the last power cut did to dev, counted in RK_FAULT_ATOM blocks. */
struct rk_fault_cut_stats {
    uint64_t writes; /* unflushed writes (undo entries) at the cut */
    uint64_t kept;   /* blocks of them that persisted */
    uint64_t undone; /* blocks of them put back to their old content */
};

/* Copy the statistics of dev's last power cut (all zero before one). 0 or -EINVAL. */
int rk_fault_last_cut(struct rk_dev *dev, struct rk_fault_cut_stats *out);

/* True once dev's power domain has been cut (rk_fault_power_cut, or cut-after fired), until
 * the domain resets (the shared one: when its last member closes). false for a device that is
 * not a fault device. Lets an in-process driver (bench/torture/) tell "the cut came" from "a
 * request failed for another reason". */
bool rk_fault_was_cut(struct rk_dev *dev);

/*
 * Apply a textual fault spec (the CLI's --debug-fault option), comma-separated items:
 *   fail-all | read-eio=OFF+LEN | write-eio=OFF+LEN | eio=OFF+LEN | fail-after-writes=N |
 *   cut-after=N | keep=none|all|random | seed=S | latency=USEC | power=shared |
 *   on-cut=fail|hang
 * OFF/LEN take K/M/G/T suffixes; offsets are member byte offsets. power=shared is applied
 * first, so cut-after in the same spec arms the shared domain. Nothing is applied unless the
 * whole spec is valid. Returns 0 or -EINVAL, with a message in err (errlen bytes).
 */
int rk_fault_apply_spec(struct rk_dev *dev, const char *spec, char *err, size_t errlen);
/* Check spec as rk_fault_apply_spec would (syntax, values, at most 16 EIO ranges) without a
 * device: 0, or -EINVAL with the same message in err. Lets a caller refuse a bad spec before
 * it opens anything. */
int rk_fault_check_spec(const char *spec, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
