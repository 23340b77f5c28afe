/* Internals shared by the file member's shared ring and reaper (file.c) and its per-thread
 * rings (file_local.c). Not a public interface: include/raidkit/member.h is. */
#ifndef RK_MEMBER_FILE_INT_H
#define RK_MEMBER_FILE_INT_H

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "raidkit/device.h"

/* io_uring read/write lengths are 32-bit; larger requests go in pieces like short I/O. */
#define FILE_MAX_PIECE (1ull << 30)
/* Low bit of user_data: this CQE is the fdatasync stage of a FUA write (rk_io is aligned). */
#define FILE_TAG_FSYNC 1ull

/* The shared mapping of a member on a memory file system (file_mmap.c). */
struct file_mmap {
    char *base;              /* MAP_SHARED mapping of [0, size) of the file */
    uint64_t size;           /* bytes mapped: the member size rounded down to 4 KiB */
    _Atomic uint64_t *alloc; /* one bit per 4 KiB page: set = the file holds the page */
    pthread_rwlock_t punch;  /* read: a write by memcpy; write: a hole punch */
};

struct file_priv {
    int fd;         /* open with O_DIRECT when dev->direct */
    bool read_only; /* opened O_RDONLY: writes, discards and zeroing fail with -EPERM */
    bool is_blk;    /* block device: BLKDISCARD instead of punching holes */
    bool dsync_ok;  /* pwritev2(RWF_DSYNC) works: a FUA write is one system call */
    bool use_uring; /* ring and reaper are running; else pread/pwrite in the caller's thread */
    bool inline_io; /* submit runs data I/O with pread/pwrite in the submitter's thread (see
                     * file_inline_wanted), even with a ring */
    bool local_io;  /* rk_io_run may put this member's I/O on the calling thread's own ring
                     * (file_local.c); use_uring && !inline_io unless RAIDKIT_MEMBER_IO=reaper */
    bool mapped;    /* mm is set up: reads and writes of held pages are memcpys (file_mmap.c) */
    struct file_mmap mm;
    /* io_uring state. lock protects the SQ side of ring, inflight and waiters; it is a leaf
     * lock (nothing else is taken while it is held) and is never held across a completion. */
    struct io_uring ring;
    pthread_mutex_t lock;
    pthread_cond_t space; /* signalled when slots are freed and someone waits */
    unsigned inflight;    /* SQEs in the kernel, <= FILE_RING_ENTRIES */
    unsigned waiters;     /* submitters waiting on space */
    pthread_t reaper;
};

/* Fill sqe with the next stage of io on file descriptor fd: the rest of its data transfer
 * (from io->member_done, at most FILE_MAX_PIECE bytes), the fdatasync of a FUA write (tag
 * FILE_TAG_FSYNC) or a flush; user_data = io | tag. */
void file_prep_sqe(struct io_uring_sqe *sqe, int fd, struct rk_io *io, uint64_t tag);

/* Decide what a CQE with result res means for io at stage *tag. Returns true when io is
 * finished (*result = 0 or -errno); false when *tag holds the stage to submit next (the same
 * one again after a short transfer, -EAGAIN or -EINTR). Advances io->member_done. */
bool file_step(struct rk_io *io, uint64_t *tag, int res, int *result);

/* Transfer len bytes at off of p's file with pread (write false) or pwrite, looping over short
 * transfers, EINTR and EAGAIN. Returns 0, -errno, or -EIO when the file ended first. */
int file_pio(struct file_priv *p, bool write, void *buf, uint64_t len, uint64_t off);

/* Map p's file (size bytes, a multiple of 4 KiB used) for memcpy I/O and learn which pages it
 * holds (SEEK_DATA/SEEK_HOLE); sets p->mapped. Only for writable regular files on tmpfs or
 * ramfs. Returns 0, or -errno (nothing set up: the member then uses pread/pwrite). */
int file_mmap_setup(struct file_priv *p, uint64_t size);

/* Undo file_mmap_setup (nothing when p is not mapped). */
void file_mmap_teardown(struct file_priv *p);

/* A read (write false) or write of len bytes at byte offset off (any alignment) on a mapped
 * member: a memcpy when every 4 KiB page it touches is held by the file, else (writes) pwrite,
 * which allocates the pages or fails, then the pages are marked held. Returns 0, -errno of the
 * pwrite, or 1 when the caller must do the I/O itself (a read touching a hole, a range past the
 * mapping). */
int file_mmap_io(struct file_priv *p, bool write, void *buf, uint64_t len, uint64_t off);

/* Does the member opened as fd (st: its fstat, flags: RK_FILE_* of rk_file_open) get memcpy
 * I/O through a shared mapping? A writable regular file on tmpfs or ramfs, unless env
 * RAIDKIT_MEMBER_IO names another path than `mmap`. */
bool file_mmap_wanted(int fd, const struct stat *st, uint32_t flags);

/* Discard / write-zeroes of [off, off+len) (bytes, any alignment) on a mapped member: the hole
 * punch excludes the writes by memcpy in flight and forgets the whole pages of the range (the
 * kernel keeps a partial page, zeroed in place). discard: fallocate PUNCH_HOLE, 0 or -errno.
 * write_zeroes: file_zero_range under the same exclusion, its result. */
int file_mmap_discard(struct file_priv *p, uint64_t len, uint64_t off);
int file_mmap_write_zeroes(struct file_priv *p, uint64_t len, uint64_t off, uint32_t flags);

/* Zero [off, off+len) of p's file: punch a hole (unless RK_ZERO_NO_HOLE in flags), else
 * FALLOC_FL_ZERO_RANGE, else write a shared zero buffer with pwrite; RK_WRITE_FUA makes it
 * durable (fdatasync). No mapping exclusion: on a mapped member call file_mmap_write_zeroes.
 * Returns 0, -ENOMEM (no zero buffer) or -errno of the write / fdatasync. */
int file_zero_range(struct file_priv *p, uint64_t len, uint64_t off, uint32_t flags);

/* rk_dev_ops.start_local / wait_local of file members (include/raidkit/device.h): io on the
 * calling thread's own ring, submitted and reaped by that thread (file_local.c); wait with
 * n = 0 submits what the thread prepared without waiting. */
bool file_local_start(struct rk_dev *dev, struct rk_io *io);
void file_local_wait(struct rk_io *const *ios, int n);

#endif
