/* raidkit device interface: every layer of the stack (read-only filter, raid, member) is an
 * rk_dev. Offsets and lengths are 64-bit bytes; every call returns 0 or a negative errno.
 *
 *   front ends (nbd, C API)
 *        |  rk_dev_read/write/flush/discard/write_zeroes  (validated at the edge)
 *   [read-only filter] -> raid (linear|0|1|10|5|6) -> members (file | emul | fault)
 *
 * Thread safety: every operation of every device may be called from many threads at once, with
 * many requests in flight. A device never reads errno across the layer boundary.
 */
#ifndef RAIDKIT_DEVICE_H
#define RAIDKIT_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Write flag: the write is durable on stable storage before the call returns (NBD proto:
 * "NBD_CMD_FLAG_FUA"). */
#define RK_WRITE_FUA 0x1u
/* Write-zeroes flag: the range must stay allocated (no hole punched); NBD proto:
 * "NBD_CMD_FLAG_NO_HOLE". */
#define RK_ZERO_NO_HOLE 0x2u

/* Largest number of members an array may have. */
#define RK_MAX_MEMBERS 32

struct rk_dev;
struct rk_io;
struct rk_io_batch;

/* Operation codes of an asynchronous request (struct rk_io). */
enum rk_op {
    RK_OP_READ = 0,
    RK_OP_WRITE,
    RK_OP_FLUSH,
    RK_OP_DISCARD,
    RK_OP_WRITE_ZEROES,
};

/*
 * One asynchronous request to one device. The submitter owns the struct and the buffer until
 * completion. Completion is reported exactly once through rk_io_complete(), from any thread.
 */
struct rk_io {
    struct rk_dev *dev;        /* target device */
    enum rk_op op;             /* what to do */
    uint32_t flags;            /* RK_WRITE_FUA / RK_ZERO_NO_HOLE */
    void *buf;                 /* data for READ/WRITE; NULL otherwise */
    uint64_t len;              /* bytes */
    uint64_t off;              /* byte offset on dev */
    int result;                /* 0 or -errno, valid after completion */
    struct rk_io_batch *batch; /* completion group, set by rk_io_submit() */
    void *member_priv;         /* scratch for the device executing the request */
    uint64_t member_done;      /* scratch of the executing device (file: bytes already done) */
};

/* Fill *io for one request (op on dev, len bytes at byte offset off, buf NULL unless READ or
 * WRITE, flags as in struct rk_io) with cleared completion and scratch fields; the caller
 * passes it to rk_io_submit() or rk_io_run(). The buffer stays owned by the caller. */
static inline void rk_io_init(struct rk_io *io, struct rk_dev *dev, enum rk_op op, void *buf,
                              uint64_t len, uint64_t off, uint32_t flags)
{
    *io = (struct rk_io){.dev = dev, .op = op, .flags = flags, .buf = buf, .len = len, .off = off};
}

/*
 * Device operations: a const table filled with designated initialisers (nbdkit's plugin-table
 * idea). NULL means unsupported: the rk_dev_* wrappers then emulate (write_zeroes writes zero
 * buffers, discard becomes a no-op, submit runs the synchronous operation in the caller's thread).
 * Operations are called only with requests the wrappers have validated: in range, aligned to
 * the device's block size, len > 0 (flush has neither).
 */
struct rk_dev_ops {
    const char *kind; /* short name: "file", "fault", "raid1", ... */
    /* Read len bytes at off into buf. */
    int (*read)(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off);
    /* Write len bytes from buf at off; flags may hold RK_WRITE_FUA. */
    int (*write)(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off, uint32_t flags);
    /* Make every completed write durable. */
    int (*flush)(struct rk_dev *dev);
    /* Advisory: the range's content becomes unspecified (zeros or old data, never garbage). */
    int (*discard)(struct rk_dev *dev, uint64_t len, uint64_t off);
    /* Write zeros to the range; flags may hold RK_WRITE_FUA | RK_ZERO_NO_HOLE. */
    int (*write_zeroes)(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags);
    /* Optional asynchronous start of io (already validated); must call rk_io_complete(io, r)
     * exactly once, possibly before returning. */
    void (*submit)(struct rk_dev *dev, struct rk_io *io);
    /* Free the device's private state (and children it owns). Called once by rk_dev_close(). */
    void (*close)(struct rk_dev *dev);
    /* Optional allocation query (NBD proto: "base:allocation"): *extent_len = bytes from off
     * (1..len, a multiple of block_size unless it ends at len) that are all holes reading as
     * zeros (*is_hole true) or all possibly data (false). NULL: everything is data. */
    int (*map)(struct rk_dev *dev, uint64_t off, uint64_t len, uint64_t *extent_len, bool *is_hole);
    /* Optional: true when write_zeroes costs no data transfer (hole punch / zero range on
     * every member), which NBD's FAST_ZERO needs. NULL: not fast. */
    bool (*zero_fast)(struct rk_dev *dev);
    /*
     * Optional pair used by rk_io_run only (a round of two or more ios): start_local takes io
     * (validated and counted already) onto an engine of the calling thread and returns true,
     * or returns false with io untouched (rk_io_run then submits it as usual). start_local may
     * do the data transfer itself, blocking (rk_io_run starts what other engines prepared
     * before calling it). wait_local
     * returns once every io of ios[0..n) (each taken by this table's start_local on this
     * thread) has completed with io->result set; it may complete other ios of the same thread
     * meanwhile (nested rounds); with n = 0 it only starts what this thread has prepared, not
     * waiting. No rk_io_complete is called for such ios. Both or neither.
     * file members: a per-thread io_uring (src/member/file_local.c); SSD device models: the
     * completion time in io->member_done, one sleep to the latest (src/member/emul.c).
     */
    bool (*start_local)(struct rk_dev *dev, struct rk_io *io);
    void (*wait_local)(struct rk_io *const *ios, int n);
};

/* Per-device I/O accounting (docs/ARCHITECTURE.md); updated by the rk_dev_* wrappers.
 * fua_writes / fua_write_bytes: the part of writes / write_bytes issued with RK_WRITE_FUA (on a
 * member of a volume: the write-intent bitmap and partial parity log writes, and the clients'
 * FUA writes), which a drive with a write cache cannot acknowledge from it. */
struct rk_dev_stats {
    _Atomic uint64_t reads, writes, flushes, discards, zeroes;
    _Atomic uint64_t read_bytes, write_bytes;
    _Atomic uint64_t fua_writes, fua_write_bytes;
    _Atomic uint64_t errors;
};

/* A device. Allocated by its driver's open function (which fills every field), freed by
 * rk_dev_close(). Fields other than stats and inflight are constant after open. */
struct rk_dev {
    const struct rk_dev_ops *ops;
    void *priv;               /* driver state */
    uint64_t size;            /* bytes, a multiple of block_size */
    uint32_t block_size;      /* logical block size in bytes: 512 or 4096 */
    uint32_t opt_io_size;     /* preferred I/O size in bytes (chunk or stripe width), >= block */
    bool direct;              /* member I/O bypasses the page cache (O_DIRECT) */
    char name[256];           /* for messages: member path or "raid10" */
    _Atomic int64_t inflight; /* requests currently inside the device (least-busy choice) */
    struct rk_dev_stats stats;
};

/*
 * Allocate and zero a device with the given ops and private state. name is copied (truncated
 * to 255 bytes). Returns NULL when out of memory. The caller fills size/block_size/opt_io_size.
 */
struct rk_dev *rk_dev_alloc(const struct rk_dev_ops *ops, void *priv, const char *name);

/* Close dev (calls ops->close, then frees the struct). NULL is accepted. */
void rk_dev_close(struct rk_dev *dev);

/*
 * Synchronous I/O through the validating wrappers. buf must stay valid for the call; for
 * devices with direct==true, buf must be aligned to 4096 bytes (rk_buf_alloc gives that).
 * Errors: -EINVAL misaligned or read past the end, -ENOSPC write past the end, -EIO member
 * failure, other -errno from the driver. len == 0 is a successful no-op.
 */
int rk_dev_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off);
int rk_dev_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off, uint32_t flags);
int rk_dev_flush(struct rk_dev *dev);
int rk_dev_discard(struct rk_dev *dev, uint64_t len, uint64_t off);
int rk_dev_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags);

/*
 * Allocation status of [off, off+len) (validated like a read: -EINVAL past the end or
 * misaligned, len > 0): fills *extent_len (bytes from off, 1..len) and *is_hole as ops->map
 * does; a device without map reports one data extent of len bytes. Errors of the driver's map
 * are not errors of the device: the range is then reported as data. Returns 0 or -EINVAL.
 */
int rk_dev_map(struct rk_dev *dev, uint64_t off, uint64_t len, uint64_t *extent_len, bool *is_hole);

/* True when rk_dev_write_zeroes on dev is cheap (ops->zero_fast says so); false otherwise. */
bool rk_dev_zero_fast(struct rk_dev *dev);

/*
 * Check a request against dev without doing it: 0, -EINVAL (misaligned, or a read/discard
 * past the end, or off+len overflows 64 bits) or -ENOSPC (write/write-zeroes past the end).
 * Used by front ends to answer before touching data (NBD proto: "Request types").
 */
int rk_dev_check_range(const struct rk_dev *dev, enum rk_op op, uint64_t len, uint64_t off);

/*
 * Completion groups: submit many rk_io (to any devices) and wait for all of them, so member I/O
 * of one request runs in parallel. A batch lives on the caller's stack; no allocation.
 */
struct rk_io_batch {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int pending; /* submitted and not yet completed */
    int errors;  /* completions with result != 0 */
};

/* Initialise an empty batch. */
void rk_io_batch_init(struct rk_io_batch *b);
/* Start io (fields dev, op, flags, buf, len, off filled by the caller) as part of b.
 * Validation failures complete the io at once with the error. */
void rk_io_submit(struct rk_io_batch *b, struct rk_io *io);
/* Run n ios (filled as for rk_io_submit) in parallel as part of b and wait for all of them.
 * With n >= 2, ios of devices with start_local go on the calling thread's own engine (one
 * submission, completions reaped by this thread); of the rest, all but the last are submitted
 * and the last runs synchronously in the caller's thread. Returns the number that failed (each
 * io's result says which). b must have nothing else pending. */
int rk_io_run(struct rk_io_batch *b, struct rk_io *ios, int n);
/* Wait until every io of b has completed; returns the number that failed (0 = all good).
 * The batch can be reused after this returns; destroy with rk_io_batch_destroy. */
int rk_io_batch_wait(struct rk_io_batch *b);
void rk_io_batch_destroy(struct rk_io_batch *b);

/* Called by a device driver when an asynchronous io finishes (result 0 or -errno). */
void rk_io_complete(struct rk_io *io, int result);

/* Allocate len bytes aligned to 4096 (suitable for O_DIRECT); free with free(). NULL on ENOMEM. */
void *rk_buf_alloc(size_t len);

/*
 * An in-memory device of size bytes (sparse: pages are allocated on first write, discard gives
 * them back), block size block_size (512 or 4096). For tests and the benchmark's no-op ceiling.
 * Returns 0 and *out, or -ENOMEM / -EINVAL.
 */
int rk_mem_open(uint64_t size, uint32_t block_size, struct rk_dev **out);

#ifdef __cplusplus
}
#endif
#endif
