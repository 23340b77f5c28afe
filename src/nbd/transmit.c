/* NBD transmission phase (NBD protocol, "Transmission", "Request types", "Error values"): the
 * per-connection reader validates each request once, pool.c's workers run it and reply out of
 * order. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
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

/* Send one whole reply under the send lock. After a failed send the peer is unusable: wake the
 * reader (shutdown) and drop later replies. */
static void nbd_send_locked(struct nbd_conn *c, struct iovec *iov, int n)
{
    if (atomic_load_explicit(&c->send_failed, memory_order_relaxed))
        return;
    atomic_int *sending = &c->srv->workers_sending;
    if (nbd_in_worker)
        atomic_fetch_add_explicit(sending, 1, memory_order_relaxed);
    pthread_mutex_lock(&c->send_lock);
    int r = nbd_send_iov(c->fd, iov, n);
    pthread_mutex_unlock(&c->send_lock);
    if (nbd_in_worker)
        atomic_fetch_sub_explicit(sending, 1, memory_order_relaxed);
    if (r) {
        atomic_store(&c->send_failed, true);
        shutdown(c->fd, SHUT_RDWR);
    }
}

/* Reply to a request: err is an NBD error value. READ data (err == 0) follows the header; with
 * structured replies a READ is answered with OFFSET_DATA (or NONE when empty) or ERROR chunks,
 * never a simple reply. */
static void nbd_reply(struct nbd_conn *c, uint64_t handle, uint16_t type, uint32_t err,
                      uint64_t off, void *data, uint32_t len)
{
    uint8_t hdr[NBD_STRUCTURED_SIZE + 8];
    struct iovec iov[2] = {{.iov_base = hdr}, {.iov_base = data, .iov_len = 0}};
    if (!c->structured || type != NBD_CMD_READ) {
        rk_put_be32(hdr, NBD_SIMPLE_MAGIC);
        rk_put_be32(hdr + 4, err);
        rk_put_be64(hdr + 8, handle);
        iov[0].iov_len = NBD_SIMPLE_SIZE;
        if (!err && type == NBD_CMD_READ)
            iov[1].iov_len = len;
        nbd_send_locked(c, iov, 2);
        return;
    }
    rk_put_be32(hdr, NBD_STRUCTURED_MAGIC);
    rk_put_be16(hdr + 4, NBD_REPLY_FLAG_DONE);
    rk_put_be64(hdr + 8, handle);
    if (err) {
        /* Error chunk payload: 32-bit error, 16-bit message length (no message). */
        rk_put_be16(hdr + 6, NBD_REPLY_TYPE_ERROR);
        rk_put_be32(hdr + 16, 6);
        rk_put_be32(hdr + 20, err);
        rk_put_be16(hdr + 24, 0);
        iov[0].iov_len = NBD_STRUCTURED_SIZE + 6;
    } else if (len == 0) {
        rk_put_be16(hdr + 6, NBD_REPLY_TYPE_NONE);
        rk_put_be32(hdr + 16, 0);
        iov[0].iov_len = NBD_STRUCTURED_SIZE;
    } else {
        rk_put_be16(hdr + 6, NBD_REPLY_TYPE_OFFSET_DATA);
        rk_put_be32(hdr + 16, 8 + len);
        rk_put_be64(hdr + 20, off);
        iov[0].iov_len = NBD_STRUCTURED_SIZE + 8;
        iov[1].iov_len = len;
    }
    nbd_send_locked(c, iov, 2);
}

/* Take a free request with a buffer of at least len bytes, waiting while the connection is at
 * its bounds. NULL when out of memory. */
static struct nbd_req *nbd_req_get(struct nbd_conn *c, uint32_t len)
{
    struct nbd_req *r = NULL;
    pthread_mutex_lock(&c->lock);
    while (c->outstanding > 0 && ((!c->free_reqs && c->nreqs >= NBD_CONN_MAX_REQS) ||
                                  c->bytes_out + len > NBD_CONN_MAX_BYTES))
        pthread_cond_wait(&c->cond, &c->lock);
    /* Prefer a free request whose buffer is already big enough. */
    struct nbd_req **pp = &c->free_reqs;
    while (*pp && (*pp)->cap < len)
        pp = &(*pp)->next;
    if (!*pp)
        pp = &c->free_reqs;
    if (*pp) {
        r = *pp;
        *pp = r->next;
    } else {
        r = calloc(1, sizeof(*r));
        if (r) {
            r->conn = c;
            c->nreqs++;
        }
    }
    if (r) {
        c->outstanding++;
        c->bytes_out += len;
    }
    pthread_mutex_unlock(&c->lock);
    if (r && r->cap < len) {
        size_t cap = ((size_t)len + 4095) & ~(size_t)4095;
        if (cap < NBD_BUF_MIN)
            cap = NBD_BUF_MIN;
        free(r->buf);
        r->buf = rk_buf_alloc(cap);
        r->cap = r->buf ? cap : 0;
        if (!r->buf) {
            r->len = len;
            r->next = NULL;
            pthread_mutex_lock(&c->lock);
            r->next = c->free_reqs;
            c->free_reqs = r;
            c->outstanding--;
            c->bytes_out -= len;
            pthread_cond_broadcast(&c->cond);
            pthread_mutex_unlock(&c->lock);
            return NULL;
        }
    }
    if (r)
        r->len = len;
    return r;
}

/* Return a finished request (its reply already sent) to the free list. */
static void nbd_req_put(struct nbd_req *r, uint32_t accounted)
{
    struct nbd_conn *c = r->conn;
    if (r->cap > NBD_BUF_KEEP) {
        free(r->buf);
        r->buf = NULL;
        r->cap = 0;
    }
    pthread_mutex_lock(&c->lock);
    r->next = c->free_reqs;
    c->free_reqs = r;
    c->outstanding--;
    c->bytes_out -= accounted;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* Buffer bytes a request holds in the connection's budget. */
static uint32_t nbd_req_bytes(const struct nbd_req *r)
{
    return r->type == NBD_CMD_READ || r->type == NBD_CMD_WRITE ? r->len : 0;
}

void nbd_req_execute(struct nbd_req *r)
{
    struct nbd_conn *c = r->conn;
    struct rk_dev *dev = c->srv->dev;
    int ret = 0;
    switch (r->type) {
    case NBD_CMD_READ:
        ret = rk_dev_read(dev, r->buf, r->len, r->off);
        break;
    case NBD_CMD_WRITE:
        ret = rk_dev_write(dev, r->buf, r->len, r->off,
                           r->flags & NBD_CMD_FLAG_FUA ? RK_WRITE_FUA : 0);
        break;
    case NBD_CMD_FLUSH:
        ret = rk_dev_flush(dev);
        break;
    case NBD_CMD_TRIM:
        ret = rk_dev_discard(dev, r->len, r->off);
        if (!ret && (r->flags & NBD_CMD_FLAG_FUA))
            ret = rk_dev_flush(dev);
        break;
    case NBD_CMD_CACHE:
        break; /* advisory; nothing to prefetch */
    case NBD_CMD_BLOCK_STATUS: {
        void *msg;
        size_t n;
        ret = nbd_block_status_build(c, r, &msg, &n); /* block_status.c */
        if (ret)
            break;
        struct iovec iov = {.iov_base = msg, .iov_len = n};
        nbd_send_locked(c, &iov, 1);
        free(msg);
        nbd_req_put(r, 0);
        return;
    }
    case NBD_CMD_WRITE_ZEROES:
        /* FAST_ZERO: fail at once unless zeroing costs no data transfer. */
        if ((r->flags & NBD_CMD_FLAG_FAST_ZERO) && !rk_dev_zero_fast(dev)) {
            ret = -ENOTSUP;
            break;
        }
        ret = rk_dev_write_zeroes(dev, r->len, r->off,
                                  (r->flags & NBD_CMD_FLAG_FUA ? RK_WRITE_FUA : 0) |
                                      (r->flags & NBD_CMD_FLAG_NO_HOLE ? RK_ZERO_NO_HOLE : 0));
        break;
    }
    nbd_reply(c, r->handle, r->type, nbd_errno(ret), r->off, r->buf, r->len);
    nbd_req_put(r, nbd_req_bytes(r));
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

/* Inline execution in the reader (see nbd_conn_serve): small READ/WRITE only, while the mean
 * service time stays below NBD_INLINE_NS. */
#define NBD_INLINE_MAX (64u * 1024)
#define NBD_INLINE_NS  20000

void nbd_conn_serve(struct nbd_conn *c)
{
    struct rk_nbd_server *srv = c->srv;
    for (;;) {
        uint8_t h[NBD_REQUEST_SIZE];
        if (nbd_recv_all(c->fd, h, sizeof(h)))
            break;
        if (rk_get_be32(h) != NBD_REQUEST_MAGIC) {
            rk_debug("nbd: bad request magic, closing");
            break;
        }
        uint16_t flags = rk_get_be16(h + 4), type = rk_get_be16(h + 6);
        uint64_t handle = rk_get_be64(h + 8), off = rk_get_be64(h + 16);
        uint32_t len = rk_get_be32(h + 24);
        if (type == NBD_CMD_DISC)
            break;

        int err = nbd_validate(c, type, flags, off, len);
        if (err) {
            /* A WRITE's payload always follows; consume it to stay in sync. */
            if (type == NBD_CMD_WRITE && (len > NBD_WRITE_DRAIN_MAX || nbd_drain(c->fd, len) != 0))
                break;
            nbd_reply(c, handle, type, nbd_errno(err), off, NULL, 0);
            continue;
        }
        bool has_buf = type == NBD_CMD_READ || type == NBD_CMD_WRITE;
        if (has_buf && len == 0) {
            nbd_reply(c, handle, type, 0, off, NULL, 0);
            continue;
        }
        struct nbd_req *r = nbd_req_get(c, has_buf ? len : 0);
        if (!r) {
            if (type == NBD_CMD_WRITE && nbd_drain(c->fd, len) != 0)
                break;
            nbd_reply(c, handle, type, NBD_ENOMEM, off, NULL, 0);
            continue;
        }
        r->handle = handle;
        r->type = type;
        r->flags = flags;
        r->off = off;
        r->len = len;
        if (type == NBD_CMD_WRITE && nbd_recv_all(c->fd, r->buf, len) != 0) {
            nbd_req_put(r, len);
            break;
        }
        if (srv->inline_ok && has_buf && len <= NBD_INLINE_MAX &&
            atomic_load_explicit(&srv->svc_ewma_ns, memory_order_relaxed) < NBD_INLINE_NS) {
            /* The device answers in microseconds (memory, page cache): running the request
             * here is cheaper than waking a worker. A slow request raises the mean and sends
             * the following ones back to the pool, where they run concurrently. */
            nbd_pool_run(srv, r);
            continue;
        }
        nbd_pool_push(srv, r);
    }
    /* DISC or EOF: every request already read finishes and is answered before we close. */
    pthread_mutex_lock(&c->lock);
    while (c->outstanding > 0)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}
