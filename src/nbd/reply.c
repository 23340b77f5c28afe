/* NBD replies and request buffers (see nbd_int.h): the per-connection send path that never
 * blocks a shared thread on a slow peer, the connection's writer thread, and the request free
 * list with its memory accounting (per connection and summed over the server). */
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/util.h"
#include "nbd/nbd_int.h"
#include "nbd/proto.h"
#include "nbd/wire.h"

/* ---- request buffers and memory accounting ---- */

/* Free r's buffer and give its capacity back to both accounts (caller holds c->lock). */
static void nbd_buf_drop_locked(struct nbd_conn *c, struct nbd_req *r)
{
    if (!r->buf)
        return;
    free(r->buf);
    c->mem -= r->cap;
    atomic_fetch_sub_explicit(&c->srv->mem_used, r->cap, memory_order_relaxed);
    r->buf = NULL;
    r->cap = 0;
}

/* Free buffers of the free list (never keep's) until at least goal bytes were given back or the
 * list has none left. Returns the bytes given back. Caller holds c->lock. */
static uint64_t nbd_bufs_release_locked(struct nbd_conn *c, const struct nbd_req *keep,
                                        uint64_t goal)
{
    uint64_t freed = 0;
    for (struct nbd_req *f = c->free_reqs; f && freed < goal; f = f->next) {
        if (f == keep || !f->buf)
            continue;
        freed += f->cap;
        nbd_buf_drop_locked(c, f);
    }
    return freed;
}

/* Reserve n bytes of the server's request memory; false (nothing reserved) when the cap would
 * be exceeded. */
static bool nbd_mem_reserve(struct rk_nbd_server *srv, uint64_t n)
{
    uint64_t old = atomic_fetch_add_explicit(&srv->mem_used, n, memory_order_relaxed);
    if (old + n <= srv->max_memory)
        return true;
    atomic_fetch_sub_explicit(&srv->mem_used, n, memory_order_relaxed);
    return false;
}

/* Pick the free request to use for len bytes (one whose buffer is big enough, else the first)
 * and say whether its buffer must be replaced. NULL when the free list is empty. */
static struct nbd_req *nbd_req_pick_locked(struct nbd_conn *c, uint32_t len, bool *grow)
{
    struct nbd_req *r = c->free_reqs;
    while (r && r->cap < len)
        r = r->next;
    if (!r)
        r = c->free_reqs;
    *grow = len > (r ? r->cap : 0);
    return r;
}

/* Can the connection take a buffer of need bytes in place of r's (r may be NULL)? Reserves it
 * when it can, giving back free-list buffers first when a budget is short. Caller holds
 * c->lock. */
static bool nbd_mem_take_locked(struct nbd_conn *c, struct nbd_req *r, uint64_t need)
{
    struct rk_nbd_server *srv = c->srv;
    uint64_t have = r ? r->cap : 0;
    uint64_t after = c->mem - have + need;
    if (after > srv->conn_memory)
        after -= nbd_bufs_release_locked(c, r, after - srv->conn_memory);
    if (after > srv->conn_memory)
        return false;
    if (nbd_mem_reserve(srv, need))
        return true;
    nbd_bufs_release_locked(c, r, UINT64_MAX);
    return nbd_mem_reserve(srv, need);
}

/* Unlink r from the free list (caller holds c->lock). */
static void nbd_free_unlink_locked(struct nbd_conn *c, struct nbd_req *r)
{
    struct nbd_req **pp = &c->free_reqs;
    while (*pp != r)
        pp = &(*pp)->next;
    *pp = r->next;
}

struct nbd_req *nbd_req_get(struct nbd_conn *c, uint32_t len)
{
    struct rk_nbd_server *srv = c->srv;
    uint64_t need = ((uint64_t)len + 4095) & ~(uint64_t)4095;
    if (need < NBD_BUF_MIN)
        need = NBD_BUF_MIN;
    struct nbd_req *r = NULL;
    bool grow = false;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        r = nbd_req_pick_locked(c, len, &grow);
        if (r || c->nreqs < NBD_CONN_MAX_REQS) {
            if (!grow || nbd_mem_take_locked(c, r, need))
                break;
        }
        if (atomic_load(&srv->stopping) || c->send_failed) {
            pthread_mutex_unlock(&c->lock);
            return NULL;
        }
        if (c->bq_head) { /* the reader's own batched replies free requests: send them first */
            pthread_mutex_unlock(&c->lock);
            nbd_reply_flush(c);
            pthread_mutex_lock(&c->lock);
            continue;
        }
        /* At a bound: a reply of ours frees memory (cond is signalled); another connection's
         * does not signal us, so look again every 20 ms. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&c->cond, &c->lock, &ts);
    }
    if (r) {
        nbd_free_unlink_locked(c, r);
    } else {
        r = calloc(1, sizeof(*r));
        if (!r) {
            if (grow)
                atomic_fetch_sub_explicit(&srv->mem_used, need, memory_order_relaxed);
            pthread_mutex_unlock(&c->lock);
            return NULL;
        }
        r->conn = c;
        c->nreqs++;
    }
    c->outstanding++;
    c->executing++;
    if (grow) {
        nbd_buf_drop_locked(c, r);
        c->mem += need; /* reserved above; the buffer follows outside the lock */
    }
    pthread_mutex_unlock(&c->lock);
    if (grow) {
        r->buf = rk_buf_alloc(need);
        r->cap = need;
        if (!r->buf) {
            pthread_mutex_lock(&c->lock);
            c->mem -= need;
            atomic_fetch_sub_explicit(&srv->mem_used, need, memory_order_relaxed);
            r->cap = 0;
            pthread_mutex_unlock(&c->lock);
        }
    }
    r->len = len;
    r->sent = 0;
    return r;
}

/* Give a request whose reply is out (or dropped) back to the free list (buffers above
 * NBD_BUF_KEEP go back to malloc at once). Caller holds c->lock. */
static void nbd_req_put_locked(struct nbd_conn *c, struct nbd_req *r)
{
    free(r->extra);
    r->extra = NULL;
    r->extra_len = 0;
    if (r->cap > NBD_BUF_KEEP)
        nbd_buf_drop_locked(c, r);
    r->next = c->free_reqs;
    c->free_reqs = r;
    c->outstanding--;
    pthread_cond_broadcast(&c->cond);
}

void nbd_conn_trim_idle(struct nbd_conn *c, uint64_t now)
{
    pthread_mutex_lock(&c->lock);
    if (c->outstanding == 0 && c->mem > NBD_IDLE_KEEP &&
        now - atomic_load(&c->active_ns) >= NBD_IDLE_TRIM_NS) {
        uint64_t kept = 0;
        for (struct nbd_req *f = c->free_reqs; f; f = f->next) {
            if (kept + f->cap > NBD_IDLE_KEEP)
                nbd_buf_drop_locked(c, f);
            else
                kept += f->cap;
        }
        atomic_store_explicit(&c->srv->trim_wanted, true, memory_order_relaxed);
    }
    pthread_mutex_unlock(&c->lock);
}

void nbd_conn_free_reqs(struct nbd_conn *c)
{
    if (c->mem)
        atomic_store_explicit(&c->srv->trim_wanted, true, memory_order_relaxed);
    while (c->free_reqs) {
        struct nbd_req *r = c->free_reqs;
        c->free_reqs = r->next;
        nbd_buf_drop_locked(c, r);
        free(r);
    }
}

/* ---- replies ---- */

/* Fill r->hdr and r->iov with the reply to r; err is an NBD error value. READ data (err == 0)
 * follows the header; with structured replies a READ is answered with OFFSET_DATA (or NONE when
 * empty) or ERROR chunks, never a simple reply (NBD protocol, "Structured reply chunk message
 * types"). */
static void nbd_reply_build(struct nbd_conn *c, struct nbd_req *r, uint32_t err)
{
    uint8_t *hdr = r->hdr;
    r->iov[0].iov_base = hdr;
    r->iov[1].iov_base = r->buf;
    r->iov[1].iov_len = 0;
    r->sent = 0;
    if (!err && r->extra) {
        r->iov[0].iov_base = r->extra;
        r->iov[0].iov_len = r->extra_len;
        return;
    }
    if (!c->structured || r->type != NBD_CMD_READ) {
        rk_put_be32(hdr, NBD_SIMPLE_MAGIC);
        rk_put_be32(hdr + 4, err);
        rk_put_be64(hdr + 8, r->handle);
        r->iov[0].iov_len = NBD_SIMPLE_SIZE;
        if (!err && r->type == NBD_CMD_READ)
            r->iov[1].iov_len = r->len;
        return;
    }
    rk_put_be32(hdr, NBD_STRUCTURED_MAGIC);
    rk_put_be16(hdr + 4, NBD_REPLY_FLAG_DONE);
    rk_put_be64(hdr + 8, r->handle);
    if (err) {
        /* Error chunk payload: 32-bit error, 16-bit message length (no message). */
        rk_put_be16(hdr + 6, NBD_REPLY_TYPE_ERROR);
        rk_put_be32(hdr + 16, 6);
        rk_put_be32(hdr + 20, err);
        rk_put_be16(hdr + 24, 0);
        r->iov[0].iov_len = NBD_STRUCTURED_SIZE + 6;
    } else if (r->len == 0) {
        rk_put_be16(hdr + 6, NBD_REPLY_TYPE_NONE);
        rk_put_be32(hdr + 16, 0);
        r->iov[0].iov_len = NBD_STRUCTURED_SIZE;
    } else {
        rk_put_be16(hdr + 6, NBD_REPLY_TYPE_OFFSET_DATA);
        rk_put_be32(hdr + 16, 8 + r->len);
        rk_put_be64(hdr + 20, r->off);
        r->iov[0].iov_len = NBD_STRUCTURED_SIZE + 8;
        r->iov[1].iov_len = r->len;
    }
}

/* The peer is gone: drop every queued reply, wake the reader (shutdown). Caller holds c->lock. */
static void nbd_send_fail_locked(struct nbd_conn *c)
{
    c->send_failed = true;
    shutdown(c->fd, SHUT_RDWR);
    while (c->rq_head) {
        struct nbd_req *q = c->rq_head;
        c->rq_head = q->next;
        nbd_req_put_locked(c, q);
    }
    c->rq_tail = NULL;
}

void nbd_conn_cut(struct nbd_conn *c)
{
    pthread_mutex_lock(&c->lock);
    nbd_send_fail_locked(c);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* Bytes of r's reply (header and data). */
static size_t nbd_reply_len(const struct nbd_req *r)
{
    return r->iov[0].iov_len + r->iov[1].iov_len;
}

/* Fill iov (room for 2 * NBD_SEND_BATCH) with the unsent bytes of up to NBD_SEND_BATCH replies
 * of the list from r (each from its r->sent on). Returns the iovecs filled; *nreq = replies. */
static int nbd_batch_iov(struct nbd_req *r, struct iovec *iov, int *nreq)
{
    int k = 0, m = 0;
    for (; r && m < NBD_SEND_BATCH; r = r->next, m++) {
        size_t skip = r->sent;
        for (int i = 0; i < 2; i++) {
            size_t l = r->iov[i].iov_len;
            if (skip >= l) { /* an empty iov may have a NULL base: never used */
                skip -= l;
                continue;
            }
            iov[k].iov_base = (uint8_t *)r->iov[i].iov_base + skip;
            iov[k].iov_len = l - skip;
            skip = 0;
            k++;
        }
    }
    *nreq = m;
    return k;
}

/* Account sent bytes to the replies of the list from r, in order: returns the first reply not
 * completely sent (its r->sent updated), NULL when all are out. */
static struct nbd_req *nbd_batch_advance(struct nbd_req *r, size_t sent)
{
    for (; r; r = r->next) {
        size_t left = nbd_reply_len(r) - r->sent;
        if (sent < left) {
            r->sent += sent;
            return r;
        }
        sent -= left;
        r->sent = nbd_reply_len(r);
    }
    return NULL;
}

/* Send the replies of the list from b without blocking, NBD_SEND_BATCH per sendmsg. Returns 0
 * with *rest NULL when all are out; else *rest = the first not completely sent (NULL: none) and
 * -EAGAIN (the rest would block), -EINPROGRESS (TLS: what went out left records in the
 * transport, see nbd_send_some) or -errno. */
static int nbd_batch_send_some(struct nbd_conn *c, struct nbd_req *b, struct nbd_req **rest)
{
    struct iovec iov[2 * NBD_SEND_BATCH];
    while (b) {
        int m;
        int k = nbd_batch_iov(b, iov, &m);
        size_t sent = 0;
        int e = nbd_send_some(c->fd, iov, k, &sent);
        b = nbd_batch_advance(b, sent);
        if (e) {
            *rest = b;
            return b || e == -EINPROGRESS ? e : 0;
        }
    }
    *rest = NULL;
    return 0;
}

/* n requests of c end their execution (replied or dropped); the connection's end waits for
 * executing to reach 0. Caller holds c->lock. */
static void nbd_exec_end_locked(struct nbd_conn *c, int n)
{
    c->executing -= n;
    if (c->executing == 0)
        pthread_cond_broadcast(&c->cond);
}

void nbd_req_drop(struct nbd_req *r)
{
    struct nbd_conn *c = r->conn;
    pthread_mutex_lock(&c->lock);
    nbd_exec_end_locked(c, 1);
    nbd_req_put_locked(c, r);
    pthread_mutex_unlock(&c->lock);
}

void nbd_reply_defer(struct nbd_req *r, uint32_t err)
{
    struct nbd_conn *c = r->conn;
    nbd_reply_build(c, r, err);
    r->next = NULL;
    if (c->bq_tail)
        c->bq_tail->next = r;
    else
        c->bq_head = r;
    c->bq_tail = r;
    if (++c->bq_n >= NBD_SEND_BATCH)
        nbd_reply_flush(c);
}

/* Return the replies of the list from b up to (not including) end to the free list. Caller
 * holds c->lock. */
static void nbd_batch_put_locked(struct nbd_conn *c, struct nbd_req *b, struct nbd_req *end)
{
    while (b != end) {
        struct nbd_req *next = b->next;
        nbd_req_put_locked(c, b);
        b = next;
    }
}

/* Hand the built replies b..tail (n of them, linked, still counted as executing) to the send
 * path, ending their execution: dropped when the peer is gone; behind the queue (the writer's)
 * when someone owns the socket or replies wait; else sent at once without blocking, what would
 * block going to the writer in front of its queue. A single reply is a batch of one. */
static void nbd_replies_send(struct nbd_conn *c, struct nbd_req *b, struct nbd_req *tail, int n)
{
    pthread_mutex_lock(&c->lock);
    nbd_exec_end_locked(c, n);
    if (c->send_failed || c->rq_head || c->sending || c->tls_pending) {
        if (c->send_failed) {
            nbd_batch_put_locked(c, b, NULL);
        } else { /* someone owns the socket or replies wait: ours go behind, to the writer */
            if (c->rq_tail)
                c->rq_tail->next = b;
            else
                c->rq_head = b;
            c->rq_tail = tail;
            if (!c->sending)
                pthread_cond_signal(&c->wcond); /* it puts tls_pending records out first */
        }
        pthread_mutex_unlock(&c->lock);
        return;
    }
    c->sending = true;
    pthread_mutex_unlock(&c->lock);
    struct nbd_req *rest;
    int e = nbd_batch_send_some(c, b, &rest);
    atomic_store_explicit(&c->active_ns, nbd_now_ns(), memory_order_relaxed);
    pthread_mutex_lock(&c->lock);
    c->sending = false;
    nbd_batch_put_locked(c, b, rest);
    if (e == -EINPROGRESS) /* TLS: the records of what went out wait for the writer's flush */
        c->tls_pending = true;
    if (rest && (e == -EAGAIN || e == -EINPROGRESS)) {
        /* The peer's window is full: the writer sends the rest, before any later reply. */
        tail->next = c->rq_head;
        c->rq_head = rest;
        if (!c->rq_tail)
            c->rq_tail = tail;
    } else if (rest) {
        nbd_batch_put_locked(c, rest, NULL);
        nbd_send_fail_locked(c);
    }
    if (c->rq_head || c->tls_pending)
        pthread_cond_signal(&c->wcond);
    pthread_mutex_unlock(&c->lock);
}

void nbd_reply_send(struct nbd_req *r, uint32_t err)
{
    nbd_reply_build(r->conn, r, err);
    r->next = NULL;
    nbd_replies_send(r->conn, r, r, 1);
}

void nbd_reply_flush(struct nbd_conn *c)
{
    struct nbd_req *b = c->bq_head, *tail = c->bq_tail;
    if (!b)
        return;
    int n = c->bq_n;
    c->bq_head = c->bq_tail = NULL;
    c->bq_n = 0;
    nbd_replies_send(c, b, tail, n);
}

/* The connection's writer: sends queued replies in order, up to NBD_SEND_BATCH per sendmsg;
 * only it may block on the peer. */
static void *nbd_writer(void *arg)
{
    struct nbd_conn *c = arg;
    struct iovec iov[2 * NBD_SEND_BATCH];
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->writer_stop && ((!c->rq_head && !c->tls_pending) || c->sending))
            pthread_cond_wait(&c->wcond, &c->lock);
        if (c->sending || (!c->rq_head && !c->tls_pending)) {
            if (c->writer_stop && !c->rq_head && !c->tls_pending)
                break;
            continue;
        }
        if (!c->rq_head) { /* only records of inline replies wait: put them out */
            c->tls_pending = false;
            c->sending = true;
            pthread_mutex_unlock(&c->lock);
            int e = nbd_wire_flush(c->fd);
            pthread_mutex_lock(&c->lock);
            c->sending = false;
            if (e)
                nbd_send_fail_locked(c);
            continue;
        }
        c->tls_pending = false; /* nbd_send_iov below sends them before its own */
        struct nbd_req *b = c->rq_head;
        int m;
        int k = nbd_batch_iov(b, iov, &m);
        struct nbd_req *end = b;
        for (int i = 0; i < m; i++)
            end = end->next;
        c->rq_head = end;
        if (!c->rq_head)
            c->rq_tail = NULL;
        c->sending = true;
        pthread_mutex_unlock(&c->lock);
        int e = nbd_send_iov(c->fd, iov, k);
        atomic_store_explicit(&c->active_ns, nbd_now_ns(), memory_order_relaxed);
        pthread_mutex_lock(&c->lock);
        c->sending = false;
        nbd_batch_put_locked(c, b, end);
        if (e)
            nbd_send_fail_locked(c);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

int nbd_writer_start(struct nbd_conn *c)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    int e = pthread_create(&c->writer, &a, nbd_writer, c);
    pthread_attr_destroy(&a);
    if (e)
        return -e;
    c->writer_started = true;
    return 0;
}

void nbd_writer_stop(struct nbd_conn *c)
{
    if (!c->writer_started)
        return;
    pthread_mutex_lock(&c->lock);
    c->writer_stop = true;
    pthread_cond_signal(&c->wcond);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->writer, NULL);
    c->writer_started = false;
}

void nbd_mem_trim(void)
{
    malloc_trim(0);
}
