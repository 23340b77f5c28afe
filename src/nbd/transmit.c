/* NBD transmission phase (NBD protocol, "Transmission", "Request types", "Error values"): the
 * per-connection reader validates each request once and runs it itself or hands it to pool.c's
 * workers (by its CPU cost); replies leave out of order through reply.c. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "core/util.h"
#include "nbd/nbd_int.h"
#include "nbd/proto.h"
#include "nbd/wire.h"

/* The only place -errno becomes an NBD error value. */
static uint32_t nbd_errno(int r)
{
    switch (-r) {
    case 0:
        return 0;
    case EPERM:
    case EROFS:
        return NBD_EPERM;
    case ENOMEM:
        return NBD_ENOMEM;
    case EINVAL:
        return NBD_EINVAL;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        return NBD_ENOSPC;
    case EOVERFLOW:
        return NBD_EOVERFLOW;
    case ENOTSUP:
        return NBD_ENOTSUP;
    case ESHUTDOWN:
        return NBD_ESHUTDOWN;
    default:
        return NBD_EIO;
    }
}

/* Inline or pool: a connection's small READ/WRITE runs in its reader while the sampled mean
 * CPU time of its executions stays below NBD_INLINE_CPU_NS and fewer than NBD_INLINE_BLOCK per
 * mille of its requests of that direction blocked (a voluntary context switch and over
 * NBD_BLOCK_NS of wall time: a member that makes us wait). CPU time, unlike wall time, does not
 * grow when other processes take the cores, so a crowded machine does not flip cheap requests to
 * the pool. One request in NBD_SAMPLE_EVERY is measured (getrusage costs two system calls),
 * chosen by nbd_sampled.
 *
 * Blocking is kept per direction and the bar is low because the costs are lopsided: a request
 * run inline that blocks stalls every later request of the connection for its whole wait (a
 * disk read: milliseconds), while one sent to the pool costs a hand-off (microseconds). A disk
 * with a write cache acknowledges writes at once and makes every read wait: with one shared
 * mean at 500 per mille, a 50/50 stream ran half its reads in the reader and left the disk's
 * queue empty behind them (-15..-24 % on an emulated HDD, docs/BENCHMARKS.md). One blocked
 * sample (250) keeps that direction in the pool for the next ~4 samples of it. */
#define NBD_INLINE_MAX    (64u * 1024)
#define NBD_INLINE_CPU_NS 20000
#define NBD_INLINE_BLOCK  100
#define NBD_BLOCK_NS      100000
#define NBD_SAMPLE_EVERY  8

/* Thread CPU time (user + system, ns) and voluntary context switches so far. */
static void nbd_thread_usage(int64_t *cpu_ns, long *nvcsw)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    *cpu_ns = ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
              ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
    *nvcsw = ru.ru_nvcsw;
}

/* Run r's command on the device: 0 or -errno. */
static int nbd_req_run(struct nbd_req *r, struct rk_dev *dev)
{
    switch (r->type) {
    case NBD_CMD_READ:
        return rk_dev_read(dev, r->buf, r->len, r->off);
    case NBD_CMD_WRITE:
        return rk_dev_write(dev, r->buf, r->len, r->off,
                            r->flags & NBD_CMD_FLAG_FUA ? RK_WRITE_FUA : 0);
    case NBD_CMD_FLUSH:
        return rk_dev_flush(dev);
    case NBD_CMD_TRIM: {
        int ret = rk_dev_discard(dev, r->len, r->off);
        if (!ret && (r->flags & NBD_CMD_FLAG_FUA))
            ret = rk_dev_flush(dev);
        return ret;
    }
    case NBD_CMD_CACHE:
        return 0; /* advisory; nothing to prefetch */
    case NBD_CMD_BLOCK_STATUS:
        /* The whole structured reply is built here and sent as r's reply (block_status.c). */
        return nbd_block_status_build(r->conn, r, &r->extra, &r->extra_len);
    case NBD_CMD_WRITE_ZEROES:
        /* FAST_ZERO: fail at once unless zeroing costs no data transfer. */
        if ((r->flags & NBD_CMD_FLAG_FAST_ZERO) && !rk_dev_zero_fast(dev))
            return -ENOTSUP;
        return rk_dev_write_zeroes(dev, r->len, r->off,
                                   (r->flags & NBD_CMD_FLAG_FUA ? RK_WRITE_FUA : 0) |
                                       (r->flags & NBD_CMD_FLAG_NO_HOLE ? RK_ZERO_NO_HOLE : 0));
    }
    return -EINVAL;
}

/* Is the connection's n-th execution measured? One in NBD_SAMPLE_EVERY, at no fixed phase: n
 * times 2^32/phi modulo 2^32 (a Weyl sequence) falls in the bottom 1/NBD_SAMPLE_EVERY of the
 * range. Every NBD_SAMPLE_EVERY-th request would always measure the same phase of a periodic
 * stream: 16 KiB sequential writes on a raid6 with 128 KiB stripes, where the write that
 * completes a gathered stripe waits for the disks and the seven before it do not, were sampled
 * only at a phase that never waited, so that waiting write ran inline and stalled the
 * connection's reader for a stripe write-out on an HDD (bench/RESULTS.md, 2026-12-07 "Gathered
 * sequential writes on an HDD"). */
static bool nbd_sampled(unsigned n)
{
    return (uint32_t)(n * 0x9e3779b9u) < UINT32_MAX / NBD_SAMPLE_EVERY;
}

/* Run r and reply: from the reader (defer) into its batch, else at once (nbd_reply_send). */
static void nbd_req_execute_in(struct nbd_req *r, bool defer)
{
    struct nbd_conn *c = r->conn;
    void (*reply)(struct nbd_req *, uint32_t) = defer ? nbd_reply_defer : nbd_reply_send;
    unsigned n = atomic_fetch_add_explicit(&c->nexec, 1, memory_order_relaxed);
    if (!nbd_sampled(n)) {
        reply(r, nbd_errno(nbd_req_run(r, c->srv->dev)));
        return;
    }
    int64_t cpu0, cpu1;
    long sw0, sw1;
    nbd_thread_usage(&cpu0, &sw0);
    uint64_t t0 = nbd_now_ns();
    int ret = nbd_req_run(r, c->srv->dev);
    uint64_t wall = nbd_now_ns() - t0;
    nbd_thread_usage(&cpu1, &sw1);
    int64_t m = atomic_load_explicit(&c->cpu_ewma_ns, memory_order_relaxed);
    atomic_store_explicit(&c->cpu_ewma_ns, m + (cpu1 - cpu0 - m) / 4, memory_order_relaxed);
    if (r->type == NBD_CMD_READ || r->type == NBD_CMD_WRITE) { /* the two that may run inline */
        int blocked = sw1 != sw0 && wall > NBD_BLOCK_NS ? 1000 : 0;
        atomic_int *be = &c->block_ewma[r->type == NBD_CMD_WRITE];
        int b = atomic_load_explicit(be, memory_order_relaxed);
        atomic_store_explicit(be, b + (blocked - b) / 4, memory_order_relaxed);
    }
    reply(r, nbd_errno(ret));
}

void nbd_req_execute(struct nbd_req *r)
{
    nbd_req_execute_in(r, false);
}

/* Should the reader run r itself (see NBD_INLINE_CPU_NS)? Cheap requests run in the reader,
 * their replies batched (nbd_reply_defer): with the batched receive that costs no system call
 * beyond the member I/O itself, far less than a hand-off to a worker. */
static bool nbd_run_inline(const struct nbd_conn *c, const struct nbd_req *r)
{
    return c->srv->inline_ok && (r->type == NBD_CMD_READ || r->type == NBD_CMD_WRITE) &&
           r->len <= NBD_INLINE_MAX &&
           atomic_load_explicit(&c->cpu_ewma_ns, memory_order_relaxed) < NBD_INLINE_CPU_NS &&
           atomic_load_explicit(&c->block_ewma[r->type == NBD_CMD_WRITE], memory_order_relaxed) <
               NBD_INLINE_BLOCK;
}

/* Check a request once, here at the edge: 0 or -errno for the reply. */
static int nbd_validate(struct nbd_conn *c, uint16_t type, uint16_t flags, uint64_t off,
                        uint32_t len)
{
    struct rk_nbd_server *srv = c->srv;
    uint16_t allowed;
    enum rk_op op;
    switch (type) {
    case NBD_CMD_READ:
        allowed = 0;
        op = RK_OP_READ;
        break;
    case NBD_CMD_WRITE:
        allowed = NBD_CMD_FLAG_FUA;
        op = RK_OP_WRITE;
        break;
    case NBD_CMD_FLUSH:
        allowed = 0;
        op = RK_OP_FLUSH;
        break;
    case NBD_CMD_TRIM:
        allowed = NBD_CMD_FLAG_FUA;
        op = RK_OP_DISCARD;
        break;
    case NBD_CMD_WRITE_ZEROES:
        allowed = NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_FAST_ZERO;
        op = RK_OP_WRITE_ZEROES;
        break;
    case NBD_CMD_CACHE:
        allowed = 0;
        op = RK_OP_READ;
        break;
    case NBD_CMD_BLOCK_STATUS:
        /* Only after SET_META_CONTEXT selected base:allocation; len 0 is refused. */
        if (!c->meta_alloc || len == 0)
            return -EINVAL;
        allowed = NBD_CMD_FLAG_REQ_ONE;
        op = RK_OP_READ;
        break;
    default:
        return -EINVAL;
    }
    if (flags & ~allowed)
        return -EINVAL;
    if (srv->read_only && (op == RK_OP_WRITE || op == RK_OP_DISCARD || op == RK_OP_WRITE_ZEROES))
        return -EPERM;
    if ((type == NBD_CMD_READ || type == NBD_CMD_WRITE) && len > srv->max_request)
        return -EINVAL;
    return rk_dev_check_range(srv->dev, op, len, off);
}

/* ---- connection end (docs/ARCHITECTURE.md "Connection end") ---- */

/* Count c as ending (once): requests read afterwards on other connections wait for it. */
static void nbd_end_mark(struct nbd_conn *c)
{
    struct rk_nbd_server *srv = c->srv;
    pthread_mutex_lock(&srv->drain_lock);
    if (c->end_state == 0) {
        c->end_state = 1;
        atomic_fetch_add(&srv->ndraining, 1);
    }
    /* c's own reader may be waiting in nbd_end_wait: it no longer waits for anyone. */
    pthread_cond_broadcast(&srv->drain_cond);
    pthread_mutex_unlock(&srv->drain_lock);
}

/* Every request c read has run: stop holding back the other connections. */
static void nbd_end_done(struct nbd_conn *c)
{
    struct rk_nbd_server *srv = c->srv;
    pthread_mutex_lock(&srv->drain_lock);
    if (c->end_state == 1 && atomic_fetch_sub(&srv->ndraining, 1) == 1)
        pthread_cond_broadcast(&srv->drain_cond);
    c->end_state = 2;
    pthread_mutex_unlock(&srv->drain_lock);
}

/* Before running a request: wait while other connections that ended still run theirs. */
static void nbd_end_wait(struct nbd_conn *c)
{
    struct rk_nbd_server *srv = c->srv;
    if (atomic_load_explicit(&srv->ndraining, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&srv->drain_lock);
    while (atomic_load(&srv->ndraining) > 0 && c->end_state == 0 && !atomic_load(&srv->stopping))
        pthread_cond_wait(&srv->drain_cond, &srv->drain_lock);
    pthread_mutex_unlock(&srv->drain_lock);
}

void nbd_conn_check_end(struct nbd_conn *c)
{
    if (atomic_load(&c->phase) != NBD_PHASE_TRANSMIT)
        return;
    struct pollfd p = {.fd = c->fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        nbd_end_mark(c);
}

/* A new connection enters transmission: every other connection whose peer has already closed
 * counts as ending, so what it sent before closing runs before our requests. */
static void nbd_end_scan(struct nbd_conn *self)
{
    struct rk_nbd_server *srv = self->srv;
    pthread_mutex_lock(&srv->conn_lock);
    for (struct nbd_conn *o = srv->conns; o; o = o->next)
        if (o != self)
            nbd_conn_check_end(o);
    pthread_mutex_unlock(&srv->conn_lock);
}

/* The reader leaves (DISC, EOF or error): requests read finish running (other connections
 * wait for that), then their replies go out or are dropped, then the writer stops. */
static void nbd_conn_end(struct nbd_conn *c)
{
    nbd_reply_flush(c);
    pthread_mutex_lock(&c->lock);
    bool busy = c->executing > 0;
    pthread_mutex_unlock(&c->lock);
    if (busy)
        nbd_end_mark(c);
    pthread_mutex_lock(&c->lock);
    while (c->executing > 0)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
    nbd_end_done(c);
    pthread_mutex_lock(&c->lock);
    while (c->outstanding > 0)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
    nbd_writer_stop(c);
}

/* ---- the reader ---- */

/* The reader's receive buffer: one recv takes in as many requests (headers and small payloads)
 * as the socket holds, parsed from c->rbuf without further system calls. Payload bytes beyond
 * the buffer of a WRITE of at least NBD_DIRECT_MIN go straight into the request buffer. */
#define NBD_RBUF_SIZE  (64u * 1024)
#define NBD_DIRECT_MIN (16u * 1024)

/* Until at least want (<= NBD_RBUF_SIZE) unparsed bytes are in c->rbuf. A receive that would
 * block sends the batched replies first. 0 or -errno of the transport. */
static int nbd_rb_fill(struct nbd_conn *c, size_t want)
{
    while (c->rend - c->rpos < want) {
        if (c->rpos == c->rend) {
            c->rpos = c->rend = 0;
        } else if (c->rpos + want > NBD_RBUF_SIZE) {
            memmove(c->rbuf, c->rbuf + c->rpos, c->rend - c->rpos);
            c->rend -= c->rpos;
            c->rpos = 0;
        }
        /* Replies wait: when the last receive left more in the socket, look without blocking
         * first (more requests join the batch); when it emptied the socket, do not ask again
         * (that is a system call per request at queue depth 1): send them and wait. */
        size_t got, room = NBD_RBUF_SIZE - c->rend;
        if (c->rlarge && room > want - (c->rend - c->rpos))
            room = want - (c->rend - c->rpos); /* a large write's payload skips the buffer */
        int e = -EAGAIN;
        if (c->bq_head && c->rfull)
            e = nbd_recv_some(c->fd, c->rbuf + c->rend, room, &got, true);
        if (e == -EAGAIN) {
            nbd_reply_flush(c);
            e = nbd_recv_some(c->fd, c->rbuf + c->rend, room, &got, false);
        }
        if (e)
            return e;
        c->rfull = got == room;
        c->rend += got;
    }
    return 0;
}

/* Take len payload bytes into dst (NULL: throw them away): from the buffer, then the socket. */
static int nbd_rb_take(struct nbd_conn *c, uint8_t *dst, uint64_t len)
{
    for (;;) {
        size_t have = c->rend - c->rpos;
        size_t n = have < len ? have : (size_t)len;
        if (dst && n) {
            memcpy(dst, c->rbuf + c->rpos, n);
            dst += n;
        }
        c->rpos += n;
        len -= n;
        if (!len)
            return 0;
        if (len >= NBD_DIRECT_MIN) { /* large: no detour through the buffer */
            nbd_reply_flush(c);
            return dst ? nbd_recv_all(c->fd, dst, len) : nbd_drain(c->fd, len);
        }
        int e = nbd_rb_fill(c, len);
        if (e)
            return e;
    }
}

/* Answer a request that will not run (err: -errno, 0 for an empty READ/WRITE). 0, or -1 when
 * the connection must close. */
static int nbd_reply_now(struct nbd_conn *c, const uint8_t *h, int err)
{
    struct nbd_req *r = nbd_req_get(c, 0);
    if (!r)
        return -1;
    r->handle = rk_get_be64(h + 8);
    r->type = rk_get_be16(h + 6);
    r->flags = rk_get_be16(h + 4);
    r->off = rk_get_be64(h + 16);
    r->len = 0;
    nbd_reply_defer(r, nbd_errno(err));
    return 0;
}

/* Read one request after its header h and hand it to a runner. 0, or -1 to close. */
static int nbd_conn_request(struct nbd_conn *c, const uint8_t *h)
{
    uint16_t flags = rk_get_be16(h + 4), type = rk_get_be16(h + 6);
    uint64_t off = rk_get_be64(h + 16);
    uint32_t len = rk_get_be32(h + 24);
    /* After a large WRITE, the next receive takes only the next header: if that is another
     * large WRITE its payload goes straight to its request buffer, not through ours. */
    c->rlarge = type == NBD_CMD_WRITE && len >= NBD_DIRECT_MIN;
    int err = nbd_validate(c, type, flags, off, len);
    if (err) {
        /* A WRITE's payload always follows; consume it to stay in sync. */
        if (type == NBD_CMD_WRITE && (len > NBD_WRITE_DRAIN_MAX || nbd_rb_take(c, NULL, len)))
            return -1;
        return nbd_reply_now(c, h, err);
    }
    bool has_buf = type == NBD_CMD_READ || type == NBD_CMD_WRITE;
    if (has_buf && len == 0)
        return nbd_reply_now(c, h, 0);
    struct nbd_req *r = nbd_req_get(c, has_buf ? len : 0);
    if (!r)
        return -1;
    r->handle = rk_get_be64(h + 8);
    r->type = type;
    r->flags = flags;
    r->off = off;
    r->len = len;
    if (has_buf && !r->buf) {
        if (type == NBD_CMD_WRITE && nbd_rb_take(c, NULL, len) != 0) {
            nbd_req_drop(r); /* not received in full: no reply */
            return -1;
        }
        r->len = 0;
        nbd_reply_defer(r, NBD_ENOMEM);
        return 0;
    }
    if (type == NBD_CMD_WRITE && nbd_rb_take(c, r->buf, len) != 0) {
        /* The payload ended early (the peer left, or a stop shut our receive side while the
         * client was still sending it): the request was never received, so it gets no reply. */
        nbd_req_drop(r);
        return -1;
    }
    if (atomic_load_explicit(&c->srv->ndraining, memory_order_acquire))
        nbd_reply_flush(c); /* nbd_end_wait may block */
    nbd_end_wait(c);
    if (nbd_run_inline(c, r))
        nbd_req_execute_in(r, true); /* cheap: cheaper here than waking a worker */
    else
        nbd_pool_push(c->srv, r);
    return 0;
}

void nbd_conn_serve(struct nbd_conn *c)
{
    c->rbuf = malloc(NBD_RBUF_SIZE);
    if (!c->rbuf || nbd_writer_start(c)) {
        rk_warn("nbd: cannot start a connection's writer thread or buffer; closing it");
        free(c->rbuf);
        c->rbuf = NULL;
        return;
    }
    atomic_store(&c->phase, NBD_PHASE_TRANSMIT);
    nbd_end_scan(c);
    for (;;) {
        uint8_t h[NBD_REQUEST_SIZE];
        if (nbd_rb_fill(c, sizeof(h)))
            break;
        memcpy(h, c->rbuf + c->rpos, sizeof(h));
        c->rpos += sizeof(h);
        atomic_store_explicit(&c->active_ns, nbd_now_ns(), memory_order_relaxed);
        if (rk_get_be32(h) != NBD_REQUEST_MAGIC) {
            rk_debug("nbd: bad request magic, closing");
            break;
        }
        if (rk_get_be16(h + 6) == NBD_CMD_DISC || nbd_conn_request(c, h))
            break;
    }
    nbd_conn_end(c);
    free(c->rbuf);
    c->rbuf = NULL;
    atomic_store(&c->phase, NBD_PHASE_DONE);
}
