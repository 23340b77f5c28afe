/* The file member: a regular file or block device at the bottom of the stack, driven through
 * io_uring (one ring and one reaper thread per member) with a pread/pwrite fallback. */
#include "raidkit/member.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/util.h"
#include "member/file_int.h"

/*
 * Request flow with io_uring:
 *
 *   submitter (rk_io_submit)              reaper thread (one per member)
 *   file_start: lock, wait for a slot,    io_uring_wait_cqe, take a batch of CQEs,
 *   prep SQE, io_uring_submit, unlock     lock: resubmit short/-EAGAIN I/O and the fdatasync
 *                                         stage of FUA writes in the same slot, free the others;
 *                                         unlock, then rk_io_complete the finished ones
 *
 * Synchronous operations (rk_dev_read...) use pread/pwrite in the caller's thread: see
 * file_sync_io.
 *
 * Every SQE in the kernel holds one of FILE_RING_ENTRIES slots (file_priv.inflight). The CQ has
 * twice as many entries as the SQ, so bounding the slots means the CQ can never overflow and
 * submitters wait for a slot instead of ever seeing -EAGAIN/-EBUSY.
 */
#define FILE_RING_ENTRIES 256u
/* CQEs handled per reaper wake-up (bounded so the completion array lives on the stack). */
#define FILE_REAP_BATCH 64u
/* user_data of the NOP that stops the reaper; real requests are never NULL. */
#define FILE_STOP_DATA 0ull

/* ---- the pread/pwrite path (also used for zero-filling) ---- */

/* file_int.h */
int file_pio(struct file_priv *p, bool write, void *buf, uint64_t len, uint64_t off)
{
    uint64_t done = 0;
    while (done < len) {
        uint64_t n = len - done < FILE_MAX_PIECE ? len - done : FILE_MAX_PIECE;
        ssize_t r = write ? pwrite(p->fd, (char *)buf + done, n, (off_t)(off + done))
                          : pread(p->fd, (char *)buf + done, n, (off_t)(off + done));
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        if (r == 0) /* members are sized at create: hitting EOF means the file shrank */
            return -EIO;
        done += (uint64_t)r;
    }
    return 0;
}

static int file_datasync(struct file_priv *p)
{
    while (fdatasync(p->fd) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    return 0;
}

/* ---- io_uring submission (caller holds p->lock) ---- */

/* Hand every prepared SQE to the kernel. Transient failures are retried: the reaper does not
 * need the lock to drain the CQ, so progress is guaranteed. */
static void file_push_locked(struct file_priv *p)
{
    unsigned spins = 0;
    while (io_uring_sq_ready(&p->ring) > 0) {
        int r = io_uring_submit(&p->ring);
        if (r > 0)
            continue;
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && ++spins % 1000 == 1)
            rk_err("io_uring_submit: %s (retrying)", strerror(-r));
        usleep(50); /* the kernel is short of memory or the CQ is being drained */
    }
}

void file_prep_sqe(struct io_uring_sqe *sqe, int fd, struct rk_io *io, uint64_t tag)
{
    if (tag == FILE_TAG_FSYNC || io->op == RK_OP_FLUSH) {
        io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
    } else {
        uint64_t rest = io->len - io->member_done;
        unsigned n = (unsigned)(rest < FILE_MAX_PIECE ? rest : FILE_MAX_PIECE);
        char *buf = (char *)io->buf + io->member_done;
        if (io->op == RK_OP_READ)
            io_uring_prep_read(sqe, fd, buf, n, io->off + io->member_done);
        else
            io_uring_prep_write(sqe, fd, buf, n, io->off + io->member_done);
    }
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)io | tag);
}

/* Prepare the next SQE of io on the shared ring. The caller has reserved a slot for it. */
static void file_prep_locked(struct file_priv *p, struct rk_io *io, uint64_t tag)
{
    struct io_uring_sqe *sqe;
    while (!(sqe = io_uring_get_sqe(&p->ring)))
        file_push_locked(p);
    file_prep_sqe(sqe, p->fd, io, tag);
}

/* Start io on the ring, waiting for a free slot when FILE_RING_ENTRIES are in flight. */
static void file_start(struct file_priv *p, struct rk_io *io)
{
    pthread_mutex_lock(&p->lock);
    while (p->inflight >= FILE_RING_ENTRIES) {
        p->waiters++;
        pthread_cond_wait(&p->space, &p->lock);
        p->waiters--;
    }
    p->inflight++;
    file_prep_locked(p, io, 0);
    file_push_locked(p);
    pthread_mutex_unlock(&p->lock);
}

/* file_int.h */
bool file_step(struct rk_io *io, uint64_t *tag, int res, int *result)
{
    if (res == -EAGAIN || res == -EINTR)
        return false; /* same stage again */
    if (*tag == FILE_TAG_FSYNC || io->op == RK_OP_FLUSH) {
        *result = res < 0 ? res : 0;
        return true;
    }
    if (res <= 0) {
        *result = res < 0 ? res : -EIO; /* 0 bytes: the member shrank under us */
        return true;
    }
    io->member_done += (uint64_t)res;
    if (io->member_done < io->len)
        return false;
    if (io->op == RK_OP_WRITE && (io->flags & RK_WRITE_FUA)) {
        *tag = FILE_TAG_FSYNC;
        return false;
    }
    *result = 0;
    return true;
}

static void *file_reaper(void *arg)
{
    struct file_priv *p = arg;
    struct {
        struct rk_io *io;
        int result;
    } done[FILE_REAP_BATCH];
    uint64_t data[FILE_REAP_BATCH];
    int res[FILE_REAP_BATCH];
    bool stop = false;

    while (!stop) {
        struct io_uring_cqe *cqe;
        int r = io_uring_wait_cqe(&p->ring, &cqe);
        if (r < 0) {
            if (r != -EINTR && r != -EAGAIN) {
                rk_err("io_uring_wait_cqe: %s", strerror(-r));
                usleep(1000);
            }
            continue;
        }
        unsigned n = 0, head;
        io_uring_for_each_cqe(&p->ring, head, cqe)
        {
            data[n] = io_uring_cqe_get_data64(cqe);
            res[n] = cqe->res;
            if (++n == FILE_REAP_BATCH)
                break;
        }
        io_uring_cq_advance(&p->ring, n);

        unsigned ndone = 0, freed = 0;
        pthread_mutex_lock(&p->lock);
        for (unsigned i = 0; i < n; i++) {
            if (data[i] == FILE_STOP_DATA) {
                stop = true;
                freed++;
                continue;
            }
            struct rk_io *io = (struct rk_io *)(uintptr_t)(data[i] & ~FILE_TAG_FSYNC);
            uint64_t tag = data[i] & FILE_TAG_FSYNC;
            int result = 0;
            if (file_step(io, &tag, res[i], &result)) {
                done[ndone].io = io;
                done[ndone++].result = result;
                freed++;
            } else {
                file_prep_locked(p, io, tag);
            }
        }
        p->inflight -= freed;
        if (freed && p->waiters)
            pthread_cond_broadcast(&p->space);
        file_push_locked(p);
        pthread_mutex_unlock(&p->lock);

        for (unsigned i = 0; i < ndone; i++)
            rk_io_complete(done[i].io, done[i].result);
    }
    return NULL;
}

/*
 * Run one request synchronously with plain system calls in the caller's thread, whatever the
 * engine: the caller blocks anyway, and a hand-off to the reaper costs two context switches
 * (measured: ~40% fewer 4K O_DIRECT IOPS through the ring for synchronous callers).
 */
static int file_sync_io(struct rk_dev *dev, enum rk_op op, void *buf, uint64_t len, uint64_t off,
                        uint32_t flags)
{
    struct file_priv *p = dev->priv;
    if (op == RK_OP_FLUSH)
        return file_datasync(p);
    if (p->mapped && (op == RK_OP_READ || op == RK_OP_WRITE)) {
        /* tmpfs/ramfs: the page cache is the storage, so a copy into it is durable as far as
         * the file system can make it (its fdatasync does nothing): FUA needs nothing more. */
        int r = file_mmap_io(p, op == RK_OP_WRITE, buf, len, off);
        if (r <= 0)
            return r;
    }
    if (op == RK_OP_WRITE && (flags & RK_WRITE_FUA) && p->dsync_ok && len <= FILE_MAX_PIECE) {
        /* One system call: the write is durable when it returns (O_DSYNC semantics, which on
         * a block device or O_DIRECT file is a FUA write where the device supports it). */
        struct iovec v = {.iov_base = buf, .iov_len = len};
        ssize_t n;
        do
            n = pwritev2(p->fd, &v, 1, (off_t)off, RWF_DSYNC);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)len)
            return 0;
        if (n < 0 && errno == EOPNOTSUPP) {
            p->dsync_ok = false; /* the write did not happen: fall through */
        } else if (n < 0) {
            return -errno;
        } else {
            /* Short: finish it, then make the whole range durable. */
            int r = file_pio(p, true, (char *)buf + n, len - (uint64_t)n, off + (uint64_t)n);
            return r ? r : file_datasync(p);
        }
    }
    int r = file_pio(p, op == RK_OP_WRITE, buf, len, off);
    if (r == 0 && op == RK_OP_WRITE && (flags & RK_WRITE_FUA))
        r = file_datasync(p);
    return r;
}

/* ---- operations ---- */

static int file_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    return file_sync_io(dev, RK_OP_READ, buf, len, off, 0);
}

static int file_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                      uint32_t flags)
{
    struct file_priv *p = dev->priv;
    if (p->read_only)
        return -EPERM;
    return file_sync_io(dev, RK_OP_WRITE, (void *)buf, len, off, flags);
}

static int file_flush(struct rk_dev *dev)
{
    return file_sync_io(dev, RK_OP_FLUSH, NULL, 0, 0, 0);
}

static int file_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct file_priv *p = dev->priv;
    if (p->read_only)
        return -EPERM;
    int r;
    if (p->is_blk) {
        uint64_t range[2] = {off, len};
        r = ioctl(p->fd, BLKDISCARD, range) ? -errno : 0;
    } else if (p->mapped) {
        r = file_mmap_discard(p, len, off);
    } else {
        r = fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len)
                ? -errno
                : 0;
    }
    /* Discard is advisory: a member that cannot do it keeps its old data. */
    if (r == -EOPNOTSUPP || r == -ENOTTY || r == -ENOSYS)
        return 0;
    return r;
}

/* A shared zero buffer for members whose file system cannot zero a range (never freed). */
static void *file_zero_buf;
static const uint64_t file_zero_len = 1u << 20;
static pthread_once_t file_zero_once = PTHREAD_ONCE_INIT;

static void file_zero_init(void)
{
    file_zero_buf = rk_buf_alloc(file_zero_len);
    if (file_zero_buf)
        memset(file_zero_buf, 0, file_zero_len);
}

/* Zero [off, off+len) of p's file (file_int.h). */
int file_zero_range(struct file_priv *p, uint64_t len, uint64_t off, uint32_t flags)
{
    int r = -EOPNOTSUPP;
    /* Punching a hole both zeroes and frees space; ZERO_RANGE keeps the blocks allocated. */
    if (!(flags & RK_ZERO_NO_HOLE) &&
        fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
        r = 0;
    if (r &&
        fallocate(p->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
        r = 0;
    if (r) {
        pthread_once(&file_zero_once, file_zero_init);
        if (!file_zero_buf)
            return -ENOMEM;
        for (uint64_t done = 0; done < len;) {
            uint64_t n = len - done < file_zero_len ? len - done : file_zero_len;
            r = file_pio(p, true, file_zero_buf, n, off + done);
            if (r)
                return r;
            done += n;
        }
    }
    if (flags & RK_WRITE_FUA)
        r = file_datasync(p);
    return r;
}

static int file_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    struct file_priv *p = dev->priv;
    if (p->read_only)
        return -EPERM;
    return p->mapped ? file_mmap_write_zeroes(p, len, off, flags)
                     : file_zero_range(p, len, off, flags);
}

/* Asynchronous start: data and flushes go through the ring; the rare discard and zeroing
 * requests run in the submitter's thread. */
static void file_submit(struct rk_dev *dev, struct rk_io *io)
{
    struct file_priv *p = dev->priv;
    io->member_done = 0;
    switch (io->op) {
    case RK_OP_WRITE:
        if (p->read_only) {
            rk_io_complete(io, -EPERM);
            return;
        }
        break;
    case RK_OP_DISCARD:
        rk_io_complete(io, file_discard(dev, io->len, io->off));
        return;
    case RK_OP_WRITE_ZEROES:
        rk_io_complete(io, file_write_zeroes(dev, io->len, io->off, io->flags));
        return;
    default:
        break;
    }
    if (p->inline_io) {
        rk_io_complete(io, file_sync_io(dev, io->op, io->buf, io->len, io->off, io->flags));
        return;
    }
    file_start(p, io);
}

/* Stop the reaper with a NOP carrying FILE_STOP_DATA; no request may be in flight. */
static void file_stop_uring(struct file_priv *p)
{
    pthread_mutex_lock(&p->lock);
    struct io_uring_sqe *sqe;
    while (!(sqe = io_uring_get_sqe(&p->ring)))
        file_push_locked(p);
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, FILE_STOP_DATA);
    p->inflight++;
    file_push_locked(p);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->reaper, NULL);
    io_uring_queue_exit(&p->ring);
    p->use_uring = false;
}

static void file_close(struct rk_dev *dev)
{
    struct file_priv *p = dev->priv;
    if (!p)
        return;
    if (p->use_uring)
        file_stop_uring(p);
    file_mmap_teardown(p);
    /* Release the member lock now: io_uring drops its file references asynchronously after
     * the ring exits, and until then close() alone would leave the flock held, so an immediate
     * reopen (restart, re-add) would find the member "busy". */
    if (p->fd >= 0) {
        (void)flock(p->fd, LOCK_UN);
        close(p->fd);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->space);
    free(p);
}

/* Allocation query (rk_dev_ops.map): SEEK_DATA/SEEK_HOLE on regular files; a block device, or a
 * file system without them, reports data. Hole bounds are rounded inwards to the block size. */
static int file_map(struct rk_dev *dev, uint64_t off, uint64_t len, uint64_t *extent_len,
                    bool *is_hole)
{
    struct file_priv *p = dev->priv;
    uint64_t bs = dev->block_size, end = off + len;
    if (p->is_blk)
        return -EOPNOTSUPP;
    off_t d = lseek(p->fd, (off_t)off, SEEK_DATA);
    if (d < 0 && errno != ENXIO)
        return -errno;
    uint64_t data = d < 0 ? UINT64_MAX : (uint64_t)d; /* ENXIO: no data up to EOF */
    if (data > off) {
        uint64_t hend = data / bs * bs;
        if (hend > off) {
            *is_hole = true;
            *extent_len = (hend < end ? hend : end) - off;
            return 0;
        }
    }
    off_t h = lseek(p->fd, (off_t)off, SEEK_HOLE);
    if (h < 0)
        return -errno;
    uint64_t hole = ((uint64_t)h + bs - 1) / bs * bs;
    if (hole <= off)
        hole = off + bs;
    *is_hole = false;
    *extent_len = (hole < end ? hole : end) - off;
    return 0;
}

/* Zeroing is fast on a regular file whose file system punches holes or zeroes ranges. */
static bool file_zero_fast(struct rk_dev *dev)
{
    struct file_priv *p = dev->priv;
    return !p->is_blk && !p->read_only;
}

static const struct rk_dev_ops file_uring_ops = {
    .kind = "file",
    .read = file_read,
    .write = file_write,
    .flush = file_flush,
    .discard = file_discard,
    .write_zeroes = file_write_zeroes,
    .submit = file_submit,
    .close = file_close,
    .map = file_map,
    .zero_fast = file_zero_fast,
    .start_local = file_local_start,
    .wait_local = file_local_wait,
};

/* Without a ring, the core runs rk_io_submit requests synchronously in the caller's thread. */
static const struct rk_dev_ops file_pread_ops = {
    .kind = "file",
    .read = file_read,
    .write = file_write,
    .flush = file_flush,
    .discard = file_discard,
    .write_zeroes = file_write_zeroes,
    .close = file_close,
    .map = file_map,
    .zero_fast = file_zero_fast,
};

/* ---- open ---- */

static bool file_uring_wanted(uint32_t flags)
{
    const char *env = getenv("RAIDKIT_NO_URING");
    if (flags & RK_FILE_NO_URING)
        return false;
    return !(env && *env && strcmp(env, "0") != 0);
}

/*
 * Does submit run data I/O inline (pread/pwrite in the submitter's thread) rather than on the
 * ring? Measured on tmpfs (bench/RESULTS.md "Member I/O path"): a buffered write to a file
 * without NOWAIT support is punted by io_uring to an io-wq worker, completed by the reaper and
 * handed back through a condition variable, about two context switches per member I/O, while
 * the same pwrite in the submitter's thread is a memory copy of ~1-2 us. So members whose
 * I/O is a page-cache copy run inline: files on a memory file system (tmpfs, ramfs: their
 * O_DIRECT is a copy too) and buffered files (a file system that refused O_DIRECT); O_DIRECT
 * members of real devices (device latency, where parallel member I/O pays) use the ring.
 * RAIDKIT_MEMBER_IO=ring (or =reaper) or =inline overrides the choice for every member
 * (measurements, tests).
 */
static bool file_inline_wanted(int fd, bool direct)
{
    const char *env = getenv("RAIDKIT_MEMBER_IO");
    if (env && (!strcmp(env, "ring") || !strcmp(env, "reaper")))
        return false;
    if (env && !strcmp(env, "inline"))
        return true;
    struct statfs sf;
    if (fstatfs(fd, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC))
        return true;
    return !direct;
}

/* May rk_io_run rounds use the per-thread rings (file_local.c)? Yes unless
 * RAIDKIT_MEMBER_IO=reaper (every submitted io through the member's ring and reaper thread:
 * measurements, tests). */
static bool file_local_wanted(void)
{
    const char *env = getenv("RAIDKIT_MEMBER_IO");
    return !(env && !strcmp(env, "reaper"));
}

/* Set up the ring and its reaper; false (with everything undone) when the kernel lacks
 * io_uring or one of the opcodes we use. */
static bool file_start_uring(struct file_priv *p)
{
    if (io_uring_queue_init(FILE_RING_ENTRIES, &p->ring, 0) < 0)
        return false;
    struct io_uring_probe *probe = io_uring_get_probe_ring(&p->ring);
    bool ok = probe && io_uring_opcode_supported(probe, IORING_OP_READ) &&
              io_uring_opcode_supported(probe, IORING_OP_WRITE) &&
              io_uring_opcode_supported(probe, IORING_OP_FSYNC) &&
              io_uring_opcode_supported(probe, IORING_OP_NOP);
    if (probe)
        io_uring_free_probe(probe);
    if (ok) {
        /* The reaper must not take signals meant for the server's main thread. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        ok = pthread_create(&p->reaper, NULL, file_reaper, p) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (!ok)
        io_uring_queue_exit(&p->ring);
    return ok;
}

/* Open with O_DIRECT and find the smallest alignment it accepts; -1 when it does not work. */
static int file_open_direct(const char *path, int mode, uint32_t *block_size)
{
    int fd = open(path, mode | O_DIRECT | O_CLOEXEC);
    if (fd < 0)
        return -1; /* tmpfs: EINVAL; real errors show again on the buffered open */
    void *buf = rk_buf_alloc(4096);
    if (buf && pread(fd, buf, 512, 0) >= 0) {
        *block_size = 512;
    } else if (buf && errno == EINVAL && pread(fd, buf, 4096, 0) >= 0) {
        *block_size = 4096;
    } else {
        close(fd);
        fd = -1;
    }
    free(buf);
    return fd;
}

int rk_file_open(const char *path, uint32_t flags, struct rk_dev **out)
{
    int mode = (flags & RK_FILE_READ_ONLY) ? O_RDONLY : O_RDWR;
    uint32_t block_size = 512;
    struct file_priv *p = NULL;
    struct rk_dev *dev = NULL;
    struct stat st;
    uint64_t size;
    int fd = -1, r = 0;

    if (!path || !out)
        return -EINVAL;
    *out = NULL;
    if (!(flags & RK_FILE_BUFFERED))
        fd = file_open_direct(path, mode, &block_size);
    bool direct = fd >= 0;
    if (!direct) {
        block_size = 512;
        fd = open(path, mode | O_CLOEXEC);
        if (fd < 0) {
            r = -errno;
            goto out;
        }
    }
    if (fstat(fd, &st) < 0) {
        r = -errno;
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        r = -EISDIR;
        goto out;
    }
    /* A writable member belongs to one user at a time: a second server (or create) over a
     * member in use would split the array's state. Read-only opens (info) take no lock. */
    if (!(flags & RK_FILE_READ_ONLY) && flock(fd, LOCK_EX | LOCK_NB) < 0) {
        r = errno == EWOULDBLOCK ? -EBUSY : -errno;
        goto out;
    }
    if (S_ISBLK(st.st_mode)) {
        if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
            r = -errno;
            goto out;
        }
    } else if (S_ISREG(st.st_mode)) {
        size = (uint64_t)st.st_size;
    } else {
        r = -EINVAL;
        goto out;
    }

    p = calloc(1, sizeof(*p));
    if (!p) {
        r = -ENOMEM;
        goto out;
    }
    p->fd = fd;
    p->read_only = flags & RK_FILE_READ_ONLY;
    p->is_blk = S_ISBLK(st.st_mode);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->space, NULL);
    p->dsync_ok = true;
    p->inline_io = file_inline_wanted(fd, direct);
    p->use_uring = file_uring_wanted(flags) && file_start_uring(p);
    p->local_io = p->use_uring && !p->inline_io && file_local_wanted();
    if (p->inline_io && file_mmap_wanted(fd, &st, flags) && size >= 4096) {
        int m = file_mmap_setup(p, size);
        if (m)
            rk_debug("member %s: no shared mapping (%s): pread/pwrite", path, strerror(-m));
    }

    dev = rk_dev_alloc(p->use_uring ? &file_uring_ops : &file_pread_ops, p, path);
    if (!dev) {
        r = -ENOMEM;
        goto out;
    }
    dev->size = size - size % block_size;
    dev->block_size = block_size;
    dev->direct = direct;
    rk_debug("member %s: %s, %s, block %u, engine %s%s", path, direct ? "O_DIRECT" : "buffered",
             p->read_only ? "read-only" : "read-write", block_size,
             p->use_uring ? "io_uring" : "pread",
             p->mapped                      ? " (data I/O by memcpy on a shared mapping)"
             : p->use_uring && p->inline_io ? " (data I/O inline)"
             : p->local_io                  ? " (rounds on per-thread rings)"
                                            : "");
    *out = dev;
    return 0;
out:
    if (p) {
        struct rk_dev tmp = {.priv = p};
        file_close(&tmp); /* also closes fd */
    } else if (fd >= 0) {
        close(fd);
    }
    return r;
}

bool rk_file_inline(const struct rk_dev *dev)
{
    if (!dev || (dev->ops != &file_uring_ops && dev->ops != &file_pread_ops))
        return false;
    const struct file_priv *p = dev->priv;
    return !p->use_uring || p->inline_io;
}

bool rk_file_mapped(const struct rk_dev *dev)
{
    if (!dev || (dev->ops != &file_uring_ops && dev->ops != &file_pread_ops))
        return false;
    return ((const struct file_priv *)dev->priv)->mapped;
}

const char *rk_file_engine(const struct rk_dev *dev)
{
    if (!dev || (dev->ops != &file_uring_ops && dev->ops != &file_pread_ops))
        return "none";
    const struct file_priv *p = dev->priv;
    return p->use_uring ? "io_uring" : "pread";
}
