/* The nbd member: a remote block device reached through libnbd (an NBD URI, see docs/CLI.md
 * "Member URIs"). One libnbd handle per connection (several when the server offers
 * multi-conn: requests are spread round robin), each driven by its own completion thread:
 *
 *   submitter (rk_io_submit / rk_dev_*)     completion thread (one per connection)
 *   nbd_start: check state, nbd_aio_*,      poll(handle fd in libnbd's direction, wake pipe,
 *   append to the in-flight list, poke       100 ms), nbd_aio_notify_*, then expire requests
 *   the wake pipe                            older than the timeout (-ETIMEDOUT, member dead)
 *
 * libnbd calls the completion callback in the thread that runs its state machine (the
 * completion thread, or a submitter whose nbd_aio_* call finished the command at once); the
 * request is completed exactly once, by whoever first takes it off the in-flight list.
 * A transport error, a server error or a timeout on any connection makes the member dead:
 * every later request fails with -EIO, so the array fails the member like a local one
 * (docs/ARCHITECTURE.md). With multi-conn a FLUSH on one connection covers the writes
 * completed on all of them (NBD protocol, "CAN_MULTI_CONN"), so a flush goes to one.
 */
#include "raidkit/member.h"
#include "raidkit/member_nbd.h"
#include "raidkit/member_rbd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "member/nbd_uri.h"

#ifdef RAIDKIT_HAVE_LIBNBD
#include <libnbd.h>

/* Default per-request timeout (RAIDKIT_NBD_MEMBER_TIMEOUT_MS overrides). */
#define NBD_MEMBER_TIMEOUT_MS_DEFAULT 30000u

enum nbd_state { NBD_ST_CONNECTED = 0, NBD_ST_DEAD, NBD_ST_TIMED_OUT, NBD_ST_CLOSING };

struct nbd_req;
struct nbd_priv;

/* One connection: a libnbd handle and the thread that drives it. */
struct nbd_conn {
    struct nbd_priv *p;
    struct nbd_handle *h;
    pthread_t thread;
    bool started;         /* thread created */
    int wake[2];          /* pipe: submitters poke the completion thread */
    pthread_mutex_t lock; /* in-flight list */
    struct nbd_req *head; /* in-flight requests, oldest first */
    struct nbd_req *tail;
};

struct nbd_priv {
    struct nbd_conn conn[RK_NBD_MAX_CONNECTIONS];
    unsigned nconn;      /* connections open (1 unless the server offers multi-conn) */
    _Atomic unsigned rr; /* round-robin cursor over conn[] */
    _Atomic int state;   /* enum nbd_state */
    bool can_fua, can_flush, can_trim, can_zero, multi_conn;
    uint64_t timeout_ns;
    _Atomic uint64_t done, lat_ns; /* completed requests and their summed latency */
    char uri[256];                 /* as given (display, messages) */
    char luri[1024];               /* what libnbd connects to (raidkit's query keys removed) */
};

/* One request in flight. Freed by libnbd's free callback (after its completion callback). */
struct nbd_req {
    struct nbd_req *prev, *next;
    struct nbd_priv *p;
    struct nbd_conn *c;    /* the connection it was issued on */
    struct rk_io *io;      /* asynchronous request, or NULL for a synchronous one */
    struct nbd_sync *sync; /* synchronous waiter, or NULL */
    uint64_t start_ns;
    bool listed;      /* still on the in-flight list (not yet completed) */
    _Atomic int refs; /* libnbd's (free callback) and the issuer's */
    void *zero_buf;   /* write-zeroes emulated with a write of zeros */
};

struct nbd_sync {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    int result;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void req_unlink(struct nbd_conn *p, struct nbd_req *q)
{
    if (q->prev)
        q->prev->next = q->next;
    else
        p->head = q->next;
    if (q->next)
        q->next->prev = q->prev;
    else
        p->tail = q->prev;
    q->prev = q->next = NULL;
    q->listed = false;
}

/* Hand the result to the waiter (the request is already off the list). */
static void req_finish(struct nbd_req *q, int result)
{
    if (result == 0) {
        atomic_fetch_add(&q->p->done, 1);
        atomic_fetch_add(&q->p->lat_ns, now_ns() - q->start_ns);
    }
    if (q->io) {
        struct rk_io *io = q->io;
        q->io = NULL;
        rk_io_complete(io, result);
    } else if (q->sync) {
        struct nbd_sync *s = q->sync;
        q->sync = NULL;
        pthread_mutex_lock(&s->lock);
        s->done = true;
        s->result = result;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
    }
}

static void mark_dead(struct nbd_priv *p, int state, const char *why)
{
    int old = NBD_ST_CONNECTED;
    if (atomic_compare_exchange_strong(&p->state, &old, state))
        rk_err("nbd member %s: %s; the member fails", p->uri, why);
}

/* libnbd completion callback: *error is the server's or the transport's errno. */
static int req_done_cb(void *user_data, int *error)
{
    struct nbd_req *q = user_data;
    struct nbd_conn *c = q->c;
    pthread_mutex_lock(&c->lock);
    bool mine = q->listed;
    if (mine)
        req_unlink(c, q);
    pthread_mutex_unlock(&c->lock);
    if (!mine)
        return 1; /* timed out already */
    int r = *error ? -*error : 0;
    if (r) {
        char why[96];
        snprintf(why, sizeof(why), "request failed: %s", strerror(-r));
        mark_dead(q->p, NBD_ST_DEAD, why);
        r = -EIO;
    }
    req_finish(q, r);
    return 1; /* retire the command */
}

static void req_put(struct nbd_req *q)
{
    if (atomic_fetch_sub(&q->refs, 1) == 1) {
        free(q->zero_buf);
        free(q);
    }
}

static void req_free_cb(void *user_data)
{
    req_put(user_data);
}

static void poke(struct nbd_conn *p)
{
    char c = 1;
    ssize_t w = write(p->wake[1], &c, 1);
    (void)w; /* a full pipe already wakes the thread */
}

/* Issue one command on p's handle. Completes (io or sync) exactly once, possibly before it
 * returns. */
static void nbd_start(struct nbd_priv *p, enum rk_op op, void *buf, uint64_t len, uint64_t off,
                      uint32_t flags, struct rk_io *io, struct nbd_sync *sync)
{
    struct nbd_req *q = calloc(1, sizeof(*q));
    if (!q || atomic_load(&p->state) != NBD_ST_CONNECTED) {
        struct nbd_req tmp = {.p = p, .io = io, .sync = sync};
        free(q);
        req_finish(&tmp, q ? -EIO : -ENOMEM);
        return;
    }
    /* Round robin over the connections; a flush needs only one (multi-conn, above). */
    struct nbd_conn *cn = &p->conn[atomic_fetch_add(&p->rr, 1) % p->nconn];
    q->p = p;
    q->c = cn;
    q->refs = 2;
    q->io = io;
    q->sync = sync;
    q->start_ns = now_ns();
    uint32_t nf = 0;
    if ((flags & RK_WRITE_FUA) && p->can_fua)
        nf |= LIBNBD_CMD_FLAG_FUA;
    if (op == RK_OP_WRITE_ZEROES && !p->can_zero) {
        q->zero_buf = calloc(1, (size_t)len);
        if (!q->zero_buf) {
            req_finish(q, -ENOMEM);
            free(q);
            return;
        }
        buf = q->zero_buf;
        op = RK_OP_WRITE;
    }
    if (op == RK_OP_WRITE_ZEROES && (flags & RK_ZERO_NO_HOLE))
        nf |= LIBNBD_CMD_FLAG_NO_HOLE;
    /* Listed before issuing: the completion callback may run inside nbd_aio_*. */
    pthread_mutex_lock(&cn->lock);
    q->listed = true;
    q->prev = cn->tail;
    if (cn->tail)
        cn->tail->next = q;
    else
        cn->head = q;
    cn->tail = q;
    pthread_mutex_unlock(&cn->lock);
    nbd_completion_callback cb = {.callback = req_done_cb, .user_data = q, .free = req_free_cb};
    int64_t c;
    switch (op) {
    case RK_OP_READ:
        c = nbd_aio_pread(cn->h, buf, len, off, cb, 0);
        break;
    case RK_OP_WRITE:
        c = nbd_aio_pwrite(cn->h, buf, len, off, cb, nf);
        break;
    case RK_OP_FLUSH:
        c = nbd_aio_flush(cn->h, cb, 0);
        break;
    case RK_OP_DISCARD:
        c = nbd_aio_trim(cn->h, len, off, cb, 0);
        break;
    default:
        c = nbd_aio_zero(cn->h, len, off, cb, nf);
        break;
    }
    if (c == -1) {
        /* Not issued: libnbd calls only the free callback, never the completion one. */
        char why[200];
        snprintf(why, sizeof(why), "cannot issue a request: %s", nbd_get_error());
        mark_dead(p, NBD_ST_DEAD, why);
        pthread_mutex_lock(&cn->lock);
        bool mine = q->listed;
        if (mine)
            req_unlink(cn, q);
        pthread_mutex_unlock(&cn->lock);
        if (mine)
            req_finish(q, -EIO);
    } else {
        poke(cn);
    }
    req_put(q);
}

/* Fail every request of connection p older than the timeout with -ETIMEDOUT (the member is
 * then dead). */
static void expire(struct nbd_conn *p)
{
    uint64_t now = now_ns();
    for (;;) {
        pthread_mutex_lock(&p->lock);
        struct nbd_req *q = p->head;
        /* A deadline, not an age: now was read before the lock, so a request listed since
         * may have started after it, and now - start_ns would wrap to ~2^64 ns (timed out). */
        bool old = q && now > q->start_ns + p->p->timeout_ns;
        if (old) {
            req_unlink(p, q);
            atomic_fetch_add(&q->refs, 1); /* keep it while finishing */
        }
        pthread_mutex_unlock(&p->lock);
        if (!old)
            return;
        mark_dead(p->p, NBD_ST_TIMED_OUT, "a request was not answered within the timeout");
        /* The caller may reuse the buffer once its request fails: cut the socket so a late
         * reply is never read into it (libnbd then retires every command with an error). This
         * thread is the only reader of replies, so none is being read now. */
        int fd = nbd_aio_get_fd(p->h);
        if (fd >= 0)
            shutdown(fd, SHUT_RDWR);
        req_finish(q, -ETIMEDOUT);
        req_put(q);
    }
}

/* Fail everything still listed on connection p (dead connection or close). */
static void fail_all(struct nbd_conn *p, int r)
{
    for (;;) {
        pthread_mutex_lock(&p->lock);
        struct nbd_req *q = p->head;
        if (q) {
            req_unlink(p, q);
            atomic_fetch_add(&q->refs, 1);
        }
        pthread_mutex_unlock(&p->lock);
        if (!q)
            return;
        req_finish(q, r);
        req_put(q);
    }
}

static void *nbd_thread(void *arg)
{
    struct nbd_conn *p = arg;
    while (atomic_load(&p->p->state) != NBD_ST_CLOSING) {
        struct pollfd fds[2] = {{.fd = nbd_aio_get_fd(p->h)}, {.fd = p->wake[0], .events = POLLIN}};
        unsigned dir = nbd_aio_get_direction(p->h);
        if (dir & LIBNBD_AIO_DIRECTION_READ)
            fds[0].events |= POLLIN;
        if (dir & LIBNBD_AIO_DIRECTION_WRITE)
            fds[0].events |= POLLOUT;
        int n = fds[0].fd >= 0 ? poll(fds, 2, 100) : poll(&fds[1], 1, 100);
        if (n < 0 && errno != EINTR)
            break;
        if (fds[1].revents & POLLIN) {
            char buf[64];
            ssize_t rd = read(p->wake[0], buf, sizeof(buf));
            (void)rd;
        }
        if (fds[0].fd >= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
            nbd_aio_notify_read(p->h);
        else if (fds[0].fd >= 0 && (fds[0].revents & POLLOUT))
            nbd_aio_notify_write(p->h);
        if (nbd_aio_is_dead(p->h) || nbd_aio_is_closed(p->h)) {
            mark_dead(p->p, NBD_ST_DEAD, "the connection to the server is lost");
            fail_all(p, -EIO);
            if (atomic_load(&p->p->state) != NBD_ST_CLOSING)
                usleep(100 * 1000);
            continue;
        }
        expire(p);
    }
    return NULL;
}

/* Run one command synchronously in the caller's thread (waits for the completion thread). */
static int nbd_sync_op(struct rk_dev *dev, enum rk_op op, void *buf, uint64_t len, uint64_t off,
                       uint32_t flags)
{
    struct nbd_priv *p = dev->priv;
    bool emulate_fua = (flags & RK_WRITE_FUA) && !p->can_fua && p->can_flush;
    struct nbd_sync s = {.done = false};
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.cond, NULL);
    nbd_start(p, op, buf, len, off, flags, NULL, &s);
    pthread_mutex_lock(&s.lock);
    while (!s.done)
        pthread_cond_wait(&s.cond, &s.lock);
    pthread_mutex_unlock(&s.lock);
    if (s.result == 0 && emulate_fua) {
        s.done = false;
        nbd_start(p, RK_OP_FLUSH, NULL, 0, 0, 0, NULL, &s);
        pthread_mutex_lock(&s.lock);
        while (!s.done)
            pthread_cond_wait(&s.cond, &s.lock);
        pthread_mutex_unlock(&s.lock);
    }
    pthread_mutex_destroy(&s.lock);
    pthread_cond_destroy(&s.cond);
    return s.result;
}

static int nbd_read_op(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    return nbd_sync_op(dev, RK_OP_READ, buf, len, off, 0);
}

static int nbd_write_op(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                        uint32_t flags)
{
    return nbd_sync_op(dev, RK_OP_WRITE, (void *)buf, len, off, flags);
}

static int nbd_flush_op(struct rk_dev *dev)
{
    struct nbd_priv *p = dev->priv;
    return p->can_flush ? nbd_sync_op(dev, RK_OP_FLUSH, NULL, 0, 0, 0) : 0;
}

static int nbd_discard_op(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct nbd_priv *p = dev->priv;
    return p->can_trim ? nbd_sync_op(dev, RK_OP_DISCARD, NULL, len, off, 0) : 0;
}

static int nbd_zero_op(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    return nbd_sync_op(dev, RK_OP_WRITE_ZEROES, NULL, len, off, flags);
}

static void nbd_submit_op(struct rk_dev *dev, struct rk_io *io)
{
    struct nbd_priv *p = dev->priv;
    bool no_op =
        (io->op == RK_OP_FLUSH && !p->can_flush) || (io->op == RK_OP_DISCARD && !p->can_trim);
    if (no_op) {
        rk_io_complete(io, atomic_load(&p->state) == NBD_ST_CONNECTED ? 0 : -EIO);
        return;
    }
    if ((io->flags & RK_WRITE_FUA) && !p->can_fua && p->can_flush) {
        /* Rare (servers without FUA): write then flush, in this thread. */
        rk_io_complete(io, nbd_sync_op(dev, io->op, io->buf, io->len, io->off, io->flags));
        return;
    }
    nbd_start(p, io->op, io->buf, io->len, io->off, io->flags, io, NULL);
}

/* Tear down the connections of p (threads joined, handles closed, pipes closed). */
static void conns_close(struct nbd_priv *p)
{
    atomic_store(&p->state, NBD_ST_CLOSING);
    for (unsigned i = 0; i < RK_NBD_MAX_CONNECTIONS; i++) {
        struct nbd_conn *c = &p->conn[i];
        if (c->started) {
            poke(c);
            pthread_join(c->thread, NULL);
            fail_all(c, -EIO);
        }
        if (c->h)
            nbd_close(c->h); /* calls the free callbacks of anything libnbd still holds */
        if (c->wake[0] >= 0) {
            close(c->wake[0]);
            close(c->wake[1]);
        }
        pthread_mutex_destroy(&c->lock);
    }
}

static void nbd_close_op(struct rk_dev *dev)
{
    struct nbd_priv *p = dev->priv;
    /* Closing first: the threads must not take the disconnect for a lost server. */
    int old = NBD_ST_CONNECTED;
    bool live = atomic_compare_exchange_strong(&p->state, &old, NBD_ST_CLOSING);
    for (unsigned i = 0; live && i < p->nconn; i++)
        if (nbd_aio_is_ready(p->conn[i].h))
            nbd_aio_disconnect(p->conn[i].h, 0);
    conns_close(p);
    free(p);
}

static const struct rk_dev_ops nbd_ops = {
    .kind = "nbd",
    .read = nbd_read_op,
    .write = nbd_write_op,
    .flush = nbd_flush_op,
    .discard = nbd_discard_op,
    .write_zeroes = nbd_zero_op,
    .submit = nbd_submit_op,
    .close = nbd_close_op,
};

static uint64_t env_timeout_ms(void)
{
    const char *e = getenv("RAIDKIT_NBD_MEMBER_TIMEOUT_MS");
    char *end;
    unsigned long long v = e && *e ? strtoull(e, &end, 10) : 0;
    return e && *e && !*end && v > 0 ? v : NBD_MEMBER_TIMEOUT_MS_DEFAULT;
}

/* Connect connection c (blocking) to p->luri. 0 or -errno, message in err. */
static int conn_open(struct nbd_priv *p, struct nbd_conn *c, char *err, size_t errlen)
{
    c->h = nbd_create();
    if (!c->h) {
        snprintf(err, errlen, "%s", nbd_get_error());
        return -ENOMEM;
    }
    /* The URI is the administrator's (command line, config): its tls-certificates= directory
     * and tls-psk-file= are files to read, as for nbdinfo; libnbd refuses them by default. */
    nbd_set_uri_allow_local_file(c->h, true);
    int r = rk_nbd_connect_deadline(c->h, p->luri, p->timeout_ns, err, errlen);
    if (r)
        return r;
    if (pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

/* Connect the first connection and read the server's capabilities into p, then, when the
 * server offers multi-conn, the others (want of them in all). 0 or -errno, message in err. */
static int nbd_connect(struct nbd_priv *p, unsigned want, uint32_t flags, uint64_t *size, char *err,
                       size_t errlen)
{
    int r = conn_open(p, &p->conn[0], err, errlen);
    if (r)
        return r;
    struct nbd_handle *h = p->conn[0].h;
    p->nconn = 1;
    int64_t sz = nbd_get_size(h);
    if (sz < 0) {
        snprintf(err, errlen, "%s", nbd_get_error());
        return -EIO;
    }
    if (!(flags & RK_FILE_READ_ONLY) && nbd_is_read_only(h) == 1) {
        snprintf(err, errlen, "the server exports it read-only");
        return -EROFS;
    }
    *size = (uint64_t)sz;
    p->can_fua = nbd_can_fua(h) == 1;
    p->can_flush = nbd_can_flush(h) == 1;
    p->can_trim = nbd_can_trim(h) == 1;
    p->can_zero = nbd_can_zero(h) == 1;
    p->multi_conn = nbd_can_multi_conn(h) == 1;
    /* Without multi-conn a flush on one connection would not cover the others' writes. */
    unsigned n = p->multi_conn ? want : 1;
    for (unsigned i = 1; i < n; i++) {
        r = conn_open(p, &p->conn[i], err, errlen);
        p->nconn = i + 1;
        if (!r && nbd_get_size(p->conn[i].h) != sz) {
            snprintf(err, errlen, "connection %u reports another export size", i + 1);
            r = -EIO;
        }
        if (r)
            return r;
    }
    return 0;
}

/* Why the calling thread's last rk_nbd_open failed (rk_nbd_last_error). */
static _Thread_local char last_err[300];

/* The device of a connected p: block size from the server's minimum, threads started. */
static int nbd_make_dev(struct nbd_priv *p, const char *uri, uint64_t size, struct rk_dev **out)
{
    struct rk_dev *dev = rk_dev_alloc(&nbd_ops, p, uri);
    if (!dev)
        return -ENOMEM;
    uint32_t bs = 512;
    int64_t min = nbd_get_block_size(p->conn[0].h, LIBNBD_SIZE_MINIMUM);
    if (min > 512)
        bs = 4096;
    dev->block_size = bs;
    dev->opt_io_size = bs;
    dev->size = size / bs * bs;
    dev->direct = false;
    for (unsigned i = 0; i < p->nconn; i++) {
        int r = -pthread_create(&p->conn[i].thread, NULL, nbd_thread, &p->conn[i]);
        if (r) {
            free(dev);
            return r;
        }
        p->conn[i].started = true;
    }
    *out = dev;
    return 0;
}

int rk_nbd_open(const char *uri, uint32_t flags, struct rk_dev **out)
{
    struct nbd_priv *p = calloc(1, sizeof(*p));
    char err[300] = "";
    uint64_t size = 0;
    int r = p ? 0 : -ENOMEM;
    struct rk_nbd_uri_opts uo;
    if (p) {
        for (unsigned i = 0; i < RK_NBD_MAX_CONNECTIONS; i++) {
            p->conn[i].p = p;
            p->conn[i].wake[0] = p->conn[i].wake[1] = -1;
            pthread_mutex_init(&p->conn[i].lock, NULL);
        }
        snprintf(p->uri, sizeof(p->uri), "%s", uri);
        r = rk_nbd_uri_parse(uri, &uo, p->luri, sizeof(p->luri), err, sizeof(err));
    }
    if (!r) {
        p->timeout_ns = (uo.timeout_ms ? uo.timeout_ms : env_timeout_ms()) * 1000000ull;
        r = nbd_connect(p, uo.connections, flags, &size, err, sizeof(err));
    }
    if (!r)
        r = nbd_make_dev(p, uri, size, out);
    if (r) {
        snprintf(last_err, sizeof(last_err), "%s", err[0] ? err : strerror(-r));
        if (p) {
            conns_close(p);
            free(p);
        }
        return r;
    }
    return 0;
}

const char *rk_nbd_state(const struct rk_dev *dev)
{
    static const char *const names[] = {"connected", "disconnected", "timed-out", "closing"};
    if (!dev || dev->ops != &nbd_ops)
        return NULL;
    return names[atomic_load(&((struct nbd_priv *)dev->priv)->state)];
}

double rk_nbd_mean_latency_us(const struct rk_dev *dev)
{
    if (!dev || dev->ops != &nbd_ops)
        return 0;
    struct nbd_priv *p = dev->priv;
    uint64_t n = atomic_load(&p->done), lat = atomic_load(&p->lat_ns);
    return n ? (double)lat / (double)n / 1000.0 : 0.0;
}

int rk_nbd_info(const struct rk_dev *dev, struct rk_nbd_member_info *out)
{
    if (!dev || dev->ops != &nbd_ops)
        return -EINVAL;
    const struct nbd_priv *p = dev->priv;
    *out = (struct rk_nbd_member_info){.connections = p->nconn,
                                       .multi_conn = p->multi_conn,
                                       .fua = p->can_fua,
                                       .flush = p->can_flush,
                                       .trim = p->can_trim,
                                       .zero = p->can_zero,
                                       .timeout_ms = p->timeout_ns / 1000000u};
    return 0;
}

#else /* !RAIDKIT_HAVE_LIBNBD */

static _Thread_local char last_err[300];

int rk_nbd_open(const char *uri, uint32_t flags, struct rk_dev **out)
{
    (void)flags;
    (void)out;
    snprintf(last_err, sizeof(last_err),
             "raidkit was built without libnbd (install libnbd-dev and rebuild)");
    return -EPROTONOSUPPORT;
}

const char *rk_nbd_state(const struct rk_dev *dev)
{
    return NULL;
}

double rk_nbd_mean_latency_us(const struct rk_dev *dev)
{
    return 0;
}

int rk_nbd_info(const struct rk_dev *dev, struct rk_nbd_member_info *out)
{
    (void)dev;
    (void)out;
    return -EINVAL;
}
#endif

const char *rk_nbd_last_error(void)
{
    return last_err;
}

bool rk_member_is_uri(const char *path)
{
    return path && (!strncmp(path, "nbd:", 4) || !strncmp(path, "nbd+unix:", 9) ||
                    !strncmp(path, "nbds:", 5) || !strncmp(path, "nbds+unix:", 10) ||
                    rk_member_is_rbd(path));
}

int rk_member_open(const char *path, uint32_t flags, struct rk_dev **out)
{
    if (rk_member_is_rbd(path)) { /* Ceph RBD (src/member/rbd.c); reason as rk_nbd_last_error */
        int r = rk_rbd_open(path, flags, out);
        if (r)
            snprintf(last_err, sizeof(last_err), "%s", rk_rbd_last_error());
        return r;
    }
    if (rk_member_is_uri(path))
        return rk_nbd_open(path, flags, out);
    return rk_file_open(path, flags, out);
}
