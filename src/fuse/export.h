/* FUSE export of a volume (`raidkit fuse`, docs/CLI.md): the top device of an assembled volume
 * appears as one regular file whose size is exactly the array size, served by a multi-threaded
 * libfuse3 low-level session, so losetup + mkfs + mount put a filesystem on the volume without
 * an NBD hop. Built only when libfuse3 is found (CMake FUSE3); needs /dev/fuse.
 *
 * Request mapping (the FUSE protocol's opcodes, include/linux/fuse.h):
 *   READ / WRITE      -> rk_dev_read / rk_dev_write; unaligned edges are read-modify-write of
 *                        the covering logical blocks (serialised by one mutex, so two unaligned
 *                        writers of one block cannot lose each other's bytes)
 *   FSYNC             -> rk_dev_flush (the volume's FLUSH: every member durable)
 *   FALLOCATE PUNCH_HOLE -> rk_dev_write_zeroes without RK_ZERO_NO_HOLE (a discard that reads
 *                        back zeroes; members may free the space)
 *   FALLOCATE ZERO_RANGE -> rk_dev_write_zeroes with RK_ZERO_NO_HOLE
 *   FALLOCATE 0 / KEEP_SIZE inside the file -> success (every byte already exists)
 *   SETATTR size      -> refused (EPERM) unless it equals the array size
 * Every open uses direct I/O (FOPEN_DIRECT_IO): no page cache in the way, every write reaches the
 * volume before it is answered. */
#ifndef RK_FUSE_EXPORT_H
#define RK_FUSE_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rk_dev;

/* Options of rk_fuse_export_run. */
struct rk_fuse_opts {
    const char *mountpoint; /* a regular file (the export is that file) or a directory (the
                               export is MOUNTPOINT/name) */
    const char *name;       /* file name inside a directory mountpoint; default "volume" */
    int threads;            /* most worker threads, 1..1024 (0: 16) */
    bool read_only;         /* writes, fsync-free changes and fallocate fail with EROFS */
    bool allow_other;       /* mount option allow_other (other users may open the file) */
    uint32_t max_io;        /* largest READ/WRITE request in bytes (0: 1 MiB; 4 KiB..1 MiB) */
};

/*
 * Mount the FUSE export of dev at o->mountpoint and serve it until SIGINT, SIGTERM or SIGHUP
 * or until it is unmounted (fusermount3 -u, umount). On the way out: requests in flight are
 * answered, the kernel mount is removed and dev is flushed; closing (and marking the array
 * clean) stays with the caller. The calling thread runs the session; the signal handlers are
 * libfuse's, installed for the call and removed before it returns. dev stays owned by the
 * caller and must outlive the call.
 * Returns 0 after a clean stop (signal or unmount), or -errno with one line in err: -EINVAL bad
 * options, -ENOENT/-ENOTDIR mountpoint, -EIO mount or session failure, or the flush's error.
 */
int rk_fuse_export_run(struct rk_dev *dev, const struct rk_fuse_opts *o, char *err, size_t errlen);

#endif
