/* Internals shared by the file member's shared ring and reaper (file.c) and its per-thread
 * rings (file_local.c). Not a public interface: include/raidkit/member.h is. */
#ifndef RK_MEMBER_FILE_INT_H
#define RK_MEMBER_FILE_INT_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "raidkit/device.h"

/* io_uring read/write lengths are 32-bit; larger requests go in pieces like short I/O. */
#define FILE_MAX_PIECE (1ull << 30)
/* Low bit of user_data: this CQE is the fdatasync stage of a FUA write (rk_io is aligned). */
#define FILE_TAG_FSYNC 1ull

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

/* rk_dev_ops.start_local / wait_local of file members (include/raidkit/device.h): io on the
 * calling thread's own ring, submitted and reaped by that thread (file_local.c); wait with
 * n = 0 submits what the thread prepared without waiting. */
bool file_local_start(struct rk_dev *dev, struct rk_io *io);
void file_local_wait(struct rk_io *const *ios, int n);

#endif
