/* The device interface core: validating wrappers, I/O accounting, emulation of missing
 * operations, completion batches, and the in-memory device used by tests and benchmarks. */
#include "raidkit/device.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>

#include "core/util.h"

struct rk_dev *rk_dev_alloc(const struct rk_dev_ops *ops, void *priv, const char *name)
{
    struct rk_dev *dev = calloc(1, sizeof(*dev));
    if (!dev)
        return NULL;
    dev->ops = ops;
    dev->priv = priv;
    dev->block_size = 512;
    dev->opt_io_size = 4096;
    snprintf(dev->name, sizeof(dev->name), "%s", name ? name : "");
    return dev;
}

void rk_dev_close(struct rk_dev *dev)
{
    if (!dev)
        return;
    if (dev->ops && dev->ops->close)
        dev->ops->close(dev);
    free(dev);
}

int rk_dev_check_range(const struct rk_dev *dev, enum rk_op op, uint64_t len, uint64_t off)
{
    if (op == RK_OP_FLUSH)
        return 0;
    uint64_t mask = dev->block_size - 1;
    if ((off & mask) || (len & mask))
        return -EINVAL;
    if (off > dev->size || len > dev->size - off) {
        if (op == RK_OP_WRITE || op == RK_OP_WRITE_ZEROES)
            return -ENOSPC;
        return -EINVAL;
    }
    return 0;
}

static int count(struct rk_dev *dev, int r)
{
    if (r < 0)
        atomic_fetch_add_explicit(&dev->stats.errors, 1, memory_order_relaxed);
    return r;
}

/* Count (sign 1) or uncount (sign -1) a write of len bytes in the FUA counters when flags ask
 * for FUA. */
static void count_fua(struct rk_dev *dev, uint32_t flags, uint64_t len, int sign)
{
    if (!(flags & RK_WRITE_FUA))
        return;
    if (sign > 0) {
        atomic_fetch_add_explicit(&dev->stats.fua_writes, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&dev->stats.fua_write_bytes, len, memory_order_relaxed);
    } else {
        atomic_fetch_sub_explicit(&dev->stats.fua_writes, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&dev->stats.fua_write_bytes, len, memory_order_relaxed);
    }
}

int rk_dev_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    int r = rk_dev_check_range(dev, RK_OP_READ, len, off);
    if (r || len == 0)
        return r;
    atomic_fetch_add_explicit(&dev->stats.reads, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&dev->stats.read_bytes, len, memory_order_relaxed);
    atomic_fetch_add_explicit(&dev->inflight, 1, memory_order_relaxed);
    r = dev->ops->read(dev, buf, len, off);
    atomic_fetch_sub_explicit(&dev->inflight, 1, memory_order_relaxed);
    return count(dev, r);
}

int rk_dev_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off, uint32_t flags)
{
    int r = rk_dev_check_range(dev, RK_OP_WRITE, len, off);
    if (r)
        return r;
    if (len == 0)
        return (flags & RK_WRITE_FUA) ? rk_dev_flush(dev) : 0;
    if (!dev->ops->write)
        return -EPERM;
    atomic_fetch_add_explicit(&dev->stats.writes, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&dev->stats.write_bytes, len, memory_order_relaxed);
    count_fua(dev, flags, len, 1);
    atomic_fetch_add_explicit(&dev->inflight, 1, memory_order_relaxed);
    r = dev->ops->write(dev, buf, len, off, flags);
    atomic_fetch_sub_explicit(&dev->inflight, 1, memory_order_relaxed);
    return count(dev, r);
}

int rk_dev_flush(struct rk_dev *dev)
{
    atomic_fetch_add_explicit(&dev->stats.flushes, 1, memory_order_relaxed);
    if (!dev->ops->flush)
        return 0;
    return count(dev, dev->ops->flush(dev));
}

int rk_dev_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    int r = rk_dev_check_range(dev, RK_OP_DISCARD, len, off);
    if (r || len == 0)
        return r;
    atomic_fetch_add_explicit(&dev->stats.discards, 1, memory_order_relaxed);
    if (!dev->ops->discard)
        return 0; /* advisory: keeping old data is allowed */
    return count(dev, dev->ops->discard(dev, len, off));
}

/* A shared 1 MiB zero buffer for emulated write-zeroes (allocated once, never freed). */
static void *zero_buf;
static const size_t zero_buf_len = 1u << 20;
static pthread_once_t zero_once = PTHREAD_ONCE_INIT;

static void zero_buf_init(void)
{
    zero_buf = rk_buf_alloc(zero_buf_len);
    if (zero_buf)
        memset(zero_buf, 0, zero_buf_len);
}

/* Write zeros with plain writes of the shared zero buffer. */
static int emulate_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    pthread_once(&zero_once, zero_buf_init);
    if (!zero_buf)
        return -ENOMEM;
    while (len) {
        uint64_t n = len < zero_buf_len ? len : zero_buf_len;
        int r = dev->ops->write(dev, zero_buf, n, off, 0);
        if (r)
            return r;
        len -= n;
        off += n;
    }
    return (flags & RK_WRITE_FUA) && dev->ops->flush ? dev->ops->flush(dev) : 0;
}

int rk_dev_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    int r = rk_dev_check_range(dev, RK_OP_WRITE_ZEROES, len, off);
    if (r || len == 0)
        return r;
    if (!dev->ops->write)
        return -EPERM;
    atomic_fetch_add_explicit(&dev->stats.zeroes, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&dev->inflight, 1, memory_order_relaxed);
    if (dev->ops->write_zeroes)
        r = dev->ops->write_zeroes(dev, len, off, flags);
    else
        r = emulate_write_zeroes(dev, len, off, flags);
    atomic_fetch_sub_explicit(&dev->inflight, 1, memory_order_relaxed);
    return count(dev, r);
}

/* ---- completion batches ---- */

void rk_io_batch_init(struct rk_io_batch *b)
{
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    b->pending = 0;
    b->errors = 0;
}

void rk_io_batch_destroy(struct rk_io_batch *b)
{
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
}

void rk_io_complete(struct rk_io *io, int result)
{
    struct rk_io_batch *b = io->batch;
    io->result = result;
    if (result)
        atomic_fetch_add_explicit(&io->dev->stats.errors, 1, memory_order_relaxed);
    if (io->op != RK_OP_FLUSH)
        atomic_fetch_sub_explicit(&io->dev->inflight, 1, memory_order_relaxed);
    pthread_mutex_lock(&b->lock);
    if (result)
        b->errors++;
    if (--b->pending == 0)
        pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

/* Rounds of up to this many ios may use thread-local engines (rk_io_run's stack arrays). */
#define RK_IO_LOCAL_MAX 64

static int run_sync(struct rk_io *io)
{
    struct rk_dev *dev = io->dev;
    switch (io->op) {
    case RK_OP_READ:
        return dev->ops->read(dev, io->buf, io->len, io->off);
    case RK_OP_WRITE:
        return dev->ops->write ? dev->ops->write(dev, io->buf, io->len, io->off, io->flags)
                               : -EPERM;
    case RK_OP_FLUSH:
        return dev->ops->flush ? dev->ops->flush(dev) : 0;
    case RK_OP_DISCARD:
        return dev->ops->discard ? dev->ops->discard(dev, io->len, io->off) : 0;
    case RK_OP_WRITE_ZEROES:
        if (!dev->ops->write)
            return -EPERM;
        return dev->ops->write_zeroes ? dev->ops->write_zeroes(dev, io->len, io->off, io->flags)
                                      : emulate_write_zeroes(dev, io->len, io->off, io->flags);
    }
    return -EINVAL;
}

/* Validate io and count it in its device's statistics and in-flight gauge. Returns 0, or the
 * validation error (the io is then not counted as an operation). */
static int io_account(struct rk_io *io)
{
    struct rk_dev *dev = io->dev;
    io->result = 0;
    io->member_done = 0;
    if (io->op != RK_OP_FLUSH)
        atomic_fetch_add_explicit(&dev->inflight, 1, memory_order_relaxed);
    int r = rk_dev_check_range(dev, io->op, io->len, io->off);
    if (r)
        return r;
    switch (io->op) {
    case RK_OP_READ:
        atomic_fetch_add_explicit(&dev->stats.reads, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&dev->stats.read_bytes, io->len, memory_order_relaxed);
        break;
    case RK_OP_WRITE:
        atomic_fetch_add_explicit(&dev->stats.writes, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&dev->stats.write_bytes, io->len, memory_order_relaxed);
        count_fua(dev, io->flags, io->len, 1);
        break;
    case RK_OP_FLUSH:
        atomic_fetch_add_explicit(&dev->stats.flushes, 1, memory_order_relaxed);
        break;
    case RK_OP_DISCARD:
        atomic_fetch_add_explicit(&dev->stats.discards, 1, memory_order_relaxed);
        break;
    case RK_OP_WRITE_ZEROES:
        atomic_fetch_add_explicit(&dev->stats.zeroes, 1, memory_order_relaxed);
        break;
    }
    return 0;
}

void rk_io_submit(struct rk_io_batch *b, struct rk_io *io)
{
    io->batch = b;
    pthread_mutex_lock(&b->lock);
    b->pending++;
    pthread_mutex_unlock(&b->lock);

    int r = io_account(io);
    if (r || (io->len == 0 && io->op != RK_OP_FLUSH)) {
        rk_io_complete(io, r);
        return;
    }
    if (io->dev->ops->submit)
        io->dev->ops->submit(io->dev, io);
    else
        rk_io_complete(io, run_sync(io));
}

/* Undo io_account of a valid io (it will be counted again on another path). */
static void io_uncount(struct rk_io *io)
{
    struct rk_dev *dev = io->dev;
    if (io->op != RK_OP_FLUSH)
        atomic_fetch_sub_explicit(&dev->inflight, 1, memory_order_relaxed);
    switch (io->op) {
    case RK_OP_READ:
        atomic_fetch_sub_explicit(&dev->stats.reads, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&dev->stats.read_bytes, io->len, memory_order_relaxed);
        break;
    case RK_OP_WRITE:
        atomic_fetch_sub_explicit(&dev->stats.writes, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&dev->stats.write_bytes, io->len, memory_order_relaxed);
        count_fua(dev, io->flags, io->len, -1);
        break;
    case RK_OP_FLUSH:
        atomic_fetch_sub_explicit(&dev->stats.flushes, 1, memory_order_relaxed);
        break;
    case RK_OP_DISCARD:
        atomic_fetch_sub_explicit(&dev->stats.discards, 1, memory_order_relaxed);
        break;
    case RK_OP_WRITE_ZEROES:
        atomic_fetch_sub_explicit(&dev->stats.zeroes, 1, memory_order_relaxed);
        break;
    }
}

/* End of an io that ran outside the batch (synchronously or on a thread-local engine): its
 * in-flight gauge and error count. */
static void io_finish_here(struct rk_io *io, int r)
{
    io->result = r;
    if (io->op != RK_OP_FLUSH)
        atomic_fetch_sub_explicit(&io->dev->inflight, 1, memory_order_relaxed);
    if (r)
        atomic_fetch_add_explicit(&io->dev->stats.errors, 1, memory_order_relaxed);
}

/* Offer ios[0..n) to their devices' thread-local engines (rk_dev_ops.start_local); taken ones
 * are listed in local[] and marked in taken[]. Returns how many were taken. */
static int io_start_local(struct rk_io *ios, int n, struct rk_io **local, bool *taken)
{
    int nl = 0;
    for (int i = 0; i < n; i++) {
        struct rk_io *io = &ios[i];
        taken[i] = false;
        if (!io->dev->ops->start_local || (io->len == 0 && io->op != RK_OP_FLUSH))
            continue;
        if (rk_dev_check_range(io->dev, io->op, io->len, io->off))
            continue; /* the normal path reports the error */
        io->batch = NULL;
        io_account(io);
        /* An engine may do its part at once (a device model's child I/O): what another engine
         * prepared before it is started first, so it never waits behind that. */
        void (*prev)(struct rk_io *const *, int) = nl ? local[nl - 1]->dev->ops->wait_local : NULL;
        if (prev && prev != io->dev->ops->wait_local)
            prev(NULL, 0);
        if (io->dev->ops->start_local(io->dev, io)) {
            taken[i] = true;
            local[nl++] = io;
        } else {
            /* Not taken: undo the count, the normal path counts it again. */
            io_uncount(io);
        }
    }
    return nl;
}

/* Start the nl ios taken by thread-local engines without waiting (wait_local with n = 0 once
 * per engine). */
static void io_kick_local(struct rk_io **local, int nl)
{
    void (*prev)(struct rk_io *const *, int) = NULL;
    for (int i = 0; i < nl; i++) {
        void (*wait)(struct rk_io *const *, int) = local[i]->dev->ops->wait_local;
        if (wait != prev)
            wait(NULL, 0);
        prev = wait;
    }
}

/* Wait for the nl ios taken by thread-local engines (grouped by wait_local) and finish them.
 * Returns how many failed. */
static int io_wait_local(struct rk_io **local, int nl)
{
    int errs = 0;
    for (int done = 0; done < nl;) {
        void (*wait)(struct rk_io *const *, int) = local[done]->dev->ops->wait_local;
        int k = done;
        while (k < nl && local[k]->dev->ops->wait_local == wait)
            k++;
        wait(local + done, k - done);
        for (int i = done; i < k; i++) {
            int r = local[i]->result;
            io_finish_here(local[i], r);
            errs += r != 0;
        }
        done = k;
    }
    return errs;
}

int rk_io_run(struct rk_io_batch *b, struct rk_io *ios, int n)
{
    if (n <= 0)
        return 0;
    /* Two or more ios: those whose device has a thread-local engine go there (one submission,
     * reaped by this thread: no hand-off to a completion thread and back). RK_IO_LOCAL_MAX
     * bounds the stack; larger rounds take the batch path. */
    struct rk_io *local[RK_IO_LOCAL_MAX];
    bool taken[RK_IO_LOCAL_MAX];
    int nl = n > 1 && n <= RK_IO_LOCAL_MAX ? io_start_local(ios, n, local, taken) : 0;
    int last = n - 1, submitted = 0;
    while (last >= 0 && nl && taken[last])
        last--;
    /* Others run too: the local ios reach their devices first, whatever the others do (one of
     * them may block this thread, e.g. a fault member that hangs after a power cut). */
    if (nl && last >= 0)
        io_kick_local(local, nl);
    for (int i = 0; i < last; i++) {
        if (nl && taken[i])
            continue;
        rk_io_submit(b, &ios[i]);
        submitted++;
    }
    int errs = 0;
    if (last >= 0) {
        /* The last io not on a local engine runs in the caller's thread: a single-io round (the
         * common small request) then costs no hand-off to a completion thread and back. */
        struct rk_io *io = &ios[last];
        io->batch = b;
        int r = io_account(io);
        if (!r && (io->len || io->op == RK_OP_FLUSH))
            r = run_sync(io);
        io_finish_here(io, r);
        errs += r != 0;
    }
    if (nl)
        errs += io_wait_local(local, nl);
    if (submitted)
        errs += rk_io_batch_wait(b);
    return errs;
}

int rk_io_batch_wait(struct rk_io_batch *b)
{
    pthread_mutex_lock(&b->lock);
    while (b->pending > 0)
        pthread_cond_wait(&b->cond, &b->lock);
    int e = b->errors;
    b->errors = 0;
    pthread_mutex_unlock(&b->lock);
    return e;
}

void *rk_buf_alloc(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, len ? len : 4096))
        return NULL;
    return p;
}

/* ---- in-memory device: an anonymous mapping, sparse until written ---- */

struct mem_priv {
    uint8_t *base;
    uint64_t size;
};

static int mem_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct mem_priv *m = dev->priv;
    memcpy(buf, m->base + off, len);
    return 0;
}

static int mem_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                     uint32_t flags)
{
    struct mem_priv *m = dev->priv;
    memcpy(m->base + off, buf, len);
    return 0;
}

/* Zero a range: whole pages go back to the kernel (read as zero), edges are memset. */
static int mem_zero(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct mem_priv *m = dev->priv;
    const uint64_t pg = 4096;
    uint64_t start = (off + pg - 1) & ~(pg - 1), end = (off + len) & ~(pg - 1);
    if (start >= end) {
        memset(m->base + off, 0, len);
        return 0;
    }
    memset(m->base + off, 0, start - off);
    memset(m->base + end, 0, off + len - end);
    madvise(m->base + start, end - start, MADV_DONTNEED);
    return 0;
}

static int mem_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    return mem_zero(dev, len, off);
}

static int mem_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    return mem_zero(dev, len, off);
}

static void mem_close(struct rk_dev *dev)
{
    struct mem_priv *m = dev->priv;
    if (m) {
        munmap(m->base, m->size);
        free(m);
    }
}

static const struct rk_dev_ops mem_ops = {
    .kind = "mem",
    .read = mem_read,
    .write = mem_write,
    .discard = mem_discard,
    .write_zeroes = mem_write_zeroes,
    .close = mem_close,
};

int rk_mem_open(uint64_t size, uint32_t block_size, struct rk_dev **out)
{
    if ((block_size != 512 && block_size != 4096) || size == 0 || size % block_size)
        return -EINVAL;
    struct mem_priv *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m->base == MAP_FAILED) {
        free(m);
        return -ENOMEM;
    }
    m->size = size;
    struct rk_dev *dev = rk_dev_alloc(&mem_ops, m, "mem");
    if (!dev) {
        munmap(m->base, size);
        free(m);
        return -ENOMEM;
    }
    dev->size = size;
    dev->block_size = block_size;
    *out = dev;
    return 0;
}
