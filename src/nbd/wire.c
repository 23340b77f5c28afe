/* NBD socket helpers (see wire.h): the only place the server calls recv(2) and sendmsg(2), and
 * the only place it reads or writes TLS records. The transport of a connection is looked up by
 * its fd: a session pointer in a table indexed by fd (NULL = plain). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nbd/wire.h"

#ifdef RAIDKIT_HAVE_GNUTLS
#include <gnutls/gnutls.h>
#endif

#define WIRE_FD_MAX 65536
/* Records are filled to this size (the TLS maximum plaintext) from the corked replies; large
 * payloads go record by record from the caller's buffer (no copy, no extra memory held for a
 * slow peer). */
#define WIRE_CORK_MAX 16384u

/* Encrypted records are gathered up to this many bytes and sent with one sendmsg: a 1 MiB reply
 * is 64 records, and a syscall (and a wake-up of the reader) per record costs more than the
 * cipher on a crowded machine. */
#define WIRE_BATCH (128u * 1024)

/* A reply batch of at most this many plaintext bytes (replies without data: writes, flushes,
 * trims; small reads) is encrypted and sent by the thread that built it, without blocking
 * (nbd_send_some); what the socket does not take waits in `out` for the writer's nbd_wire_flush.
 * Larger batches go to the writer: by the time it sends, more replies have gathered, so records
 * are fuller, and a client pays per record (measured: inlining 4 KiB read replies too saved the
 * server nothing and cost the client 3.5 us more per read). */
#define WIRE_INLINE_MAX 4096u

/* Encrypted bytes are received up to this many at a time: GnuTLS asks for a record's 5-byte
 * header and then its body, two receives per record without this buffer. */
#define WIRE_IN (32u * 1024)

/* The TLS transport of one fd. out/used (under out_lock) hold records not yet on the socket;
 * GnuTLS pushes into it from the sending thread and, for post-handshake messages, from the
 * receiving one; rx_pushed says the receiving side pushed records (a key update's answer) that
 * it must flush before it blocks. in[ipos..iend) holds received bytes GnuTLS has not pulled yet
 * (the receiving thread only). */
struct wire_tls {
    void *session; /* gnutls_session_t */
    int fd;
    pthread_mutex_t out_lock;
    size_t used;
    bool rx_pushed;
    size_t ipos, iend;
    uint8_t out[WIRE_BATCH];
    uint8_t in[WIRE_IN];
};

static _Atomic(struct wire_tls *) wire_tls[WIRE_FD_MAX];

static struct wire_tls *wire_get(int fd)
{
    return fd >= 0 && fd < WIRE_FD_MAX ? atomic_load_explicit(&wire_tls[fd], memory_order_acquire)
                                       : NULL;
}

static void *wire_session(int fd)
{
    struct wire_tls *t = wire_get(fd);
    return t ? t->session : NULL;
}

/* Send buf[*done..len) on fd, advancing *done. wait: block until all is out (a non-blocking fd
 * is waited on); else stop where the socket is full (-EAGAIN). 0 or -errno. */
static int wire_send_raw(int fd, const uint8_t *buf, size_t len, bool wait, size_t *done)
{
    while (*done < len) {
        ssize_t n = send(fd, buf + *done, len - *done, MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            if (!wait)
                return -EAGAIN;
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            poll(&p, 1, 1000);
            continue;
        }
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        *done += (size_t)n;
    }
    return 0;
}

/* Put the gathered records on the socket; caller holds out_lock. */
static int wire_flush_locked(struct wire_tls *t)
{
    size_t done = 0;
    int r = wire_send_raw(t->fd, t->out, t->used, true, &done);
    t->used = 0;
    return r;
}

static int wire_flush(struct wire_tls *t)
{
    pthread_mutex_lock(&t->out_lock);
    int r = t->used ? wire_flush_locked(t) : 0;
    __atomic_store_n(&t->rx_pushed, false, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&t->out_lock);
    return r;
}

#ifdef RAIDKIT_HAVE_GNUTLS
/* Set while this thread is inside gnutls_record_recv: what GnuTLS pushes then is the receiving
 * side's (wire_push marks rx_pushed). */
static _Thread_local bool wire_in_recv;

/* Before the receiving thread blocks: flush the records it pushed itself, if any (no lock, and
 * no wait behind a sender, in the common case). The racy read is safe: only this thread sets
 * rx_pushed; a sender's flush may clear it, having sent those records. */
static void wire_rx_flush(struct wire_tls *t)
{
    if (__atomic_load_n(&t->rx_pushed, __ATOMIC_RELAXED))
        wire_flush(t);
}

/* Send what t->out holds as far as the socket takes it without blocking; the rest moves to the
 * front of t->out. Caller holds out_lock. 0 (all out), -EAGAIN (some left) or -errno. */
static int wire_flush_nowait_locked(struct wire_tls *t)
{
    size_t done = 0;
    int r = wire_send_raw(t->fd, t->out, t->used, false, &done);
    memmove(t->out, t->out + done, t->used - done);
    t->used -= done;
    return r;
}

/* GnuTLS push: gather records in t->out (a record larger than the room left flushes first). */
static ssize_t wire_push(gnutls_transport_ptr_t ptr, const void *data, size_t len)
{
    struct wire_tls *t = ptr;
    pthread_mutex_lock(&t->out_lock);
    int r = 0;
    if (wire_in_recv)
        __atomic_store_n(&t->rx_pushed, true, __ATOMIC_RELAXED);
    if (t->used + len > WIRE_BATCH)
        r = wire_flush_locked(t);
    if (!r && len > WIRE_BATCH)
        r = wire_send_raw(t->fd, data, len, true, &(size_t){0});
    else if (!r) {
        memcpy(t->out + t->used, data, len);
        t->used += len;
    }
    pthread_mutex_unlock(&t->out_lock);
    if (r) {
        gnutls_transport_set_errno(t->session, -r);
        return -1;
    }
    return (ssize_t)len;
}

/* GnuTLS pull: from t->in, refilled with one receive of what the socket holds (blocking as the
 * default pull would). */
static ssize_t wire_pull(gnutls_transport_ptr_t ptr, void *data, size_t len)
{
    struct wire_tls *t = ptr;
    if (t->ipos == t->iend) {
        ssize_t n = recv(t->fd, t->in, sizeof(t->in), 0);
        if (n <= 0) {
            if (n < 0)
                gnutls_transport_set_errno(t->session, errno);
            return n;
        }
        t->ipos = 0;
        t->iend = (size_t)n;
    }
    size_t n = t->iend - t->ipos < len ? t->iend - t->ipos : len;
    memcpy(data, t->in + t->ipos, n);
    t->ipos += n;
    return (ssize_t)n;
}

static int wire_pull_timeout(gnutls_transport_ptr_t ptr, unsigned ms)
{
    struct wire_tls *t = ptr;
    if (t->ipos < t->iend)
        return 1;
    struct pollfd p = {.fd = t->fd, .events = POLLIN};
    return poll(&p, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
}

/* Wait until a TLS call that returned GNUTLS_E_AGAIN can go on (a non-blocking fd). */
static void wire_tls_wait(int fd, gnutls_session_t s)
{
    struct pollfd p = {.fd = fd, .events = gnutls_record_get_direction(s) ? POLLOUT : POLLIN};
    poll(&p, 1, 1000);
}

static int wire_tls_recv(int fd, gnutls_session_t s, uint8_t *p, size_t len)
{
    /* A record GnuTLS answers by itself while receiving (key update) leaves with the next
     * reply's flush, or here when the caller reads again. */
    wire_rx_flush(wire_get(fd));
    while (len) {
        wire_in_recv = true;
        ssize_t n = gnutls_record_recv(s, p, len);
        wire_in_recv = false;
        if (n == 0)
            return -ECONNRESET;
        if (n == GNUTLS_E_INTERRUPTED)
            continue;
        if (n == GNUTLS_E_AGAIN) {
            wire_tls_wait(fd, s);
            continue;
        }
        if (n < 0)
            return n == GNUTLS_E_PREMATURE_TERMINATION || n == GNUTLS_E_PUSH_ERROR ||
                           n == GNUTLS_E_PULL_ERROR
                       ? -ECONNRESET
                       : -EPROTO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int wire_tls_send_buf(int fd, gnutls_session_t s, const uint8_t *p, size_t len)
{
    while (len) {
        ssize_t n = gnutls_record_send(s, p, len);
        if (n == GNUTLS_E_INTERRUPTED || n == GNUTLS_E_AGAIN) {
            /* Retried with the same data, as GnuTLS requires. */
            if (n == GNUTLS_E_AGAIN)
                wire_tls_wait(fd, s);
            continue;
        }
        if (n < 0)
            return -EPIPE;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int wire_tls_send_records(int fd, gnutls_session_t s, struct iovec *iov, int n);

/* The iovecs go out in full records (wire_tls_send_records), gathered into WIRE_BATCH sends.
 * Everything is on the socket when it returns. */
static int wire_tls_send(int fd, gnutls_session_t s, struct iovec *iov, int n)
{
    int r = wire_tls_send_records(fd, s, iov, n);
    int f = wire_flush(wire_get(fd));
    return r ? r : f;
}

/* Uncork s: put the corked bytes on the wire as records (blocking). 0 or -EPIPE. */
static int wire_tls_uncork(int fd, gnutls_session_t s)
{
    for (;;) {
        int r = gnutls_record_uncork(s, GNUTLS_RECORD_WAIT);
        if (r >= 0)
            return 0;
        if (r == GNUTLS_E_AGAIN)
            wire_tls_wait(fd, s);
        else if (r != GNUTLS_E_INTERRUPTED)
            return -EPIPE;
    }
}

/* Every record full: the bytes of all n iovecs (several replies' headers and data) are corked
 * into WIRE_CORK_MAX records; a large payload with nothing corked before it goes out record by
 * record from the caller's buffer (no copy into the cork), its tail corked with what follows.
 * A 4 KiB read reply is then no longer two records (header, data) but part of one. */
static int wire_tls_send_records(int fd, gnutls_session_t s, struct iovec *iov, int n)
{
    size_t corked = 0;
    gnutls_record_cork(s);
    for (int i = 0; i < n; i++) {
        const uint8_t *p = iov[i].iov_base;
        size_t len = iov[i].iov_len;
        while (len) {
            size_t take;
            int r;
            if (corked == 0 && len >= WIRE_CORK_MAX) {
                take = len / WIRE_CORK_MAX * WIRE_CORK_MAX;
                r = wire_tls_uncork(fd, s); /* nothing corked: only leaves cork mode */
                if (!r)
                    r = wire_tls_send_buf(fd, s, p, take);
                gnutls_record_cork(s);
            } else {
                take = len < WIRE_CORK_MAX - corked ? len : WIRE_CORK_MAX - corked;
                r = wire_tls_send_buf(fd, s, p, take);
                corked += take;
                if (!r && corked == WIRE_CORK_MAX) {
                    r = wire_tls_uncork(fd, s);
                    corked = 0;
                    gnutls_record_cork(s);
                }
            }
            if (r) {
                gnutls_record_uncork(s, 0);
                return r;
            }
            p += take;
            len -= take;
        }
    }
    return wire_tls_uncork(fd, s);
}
#endif

int nbd_recv_all(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
#ifdef RAIDKIT_HAVE_GNUTLS
    void *s = wire_session(fd);
    if (s)
        return wire_tls_recv(fd, s, p, len);
#endif
    while (len) {
        ssize_t n = recv(fd, p, len, MSG_WAITALL);
        if (n == 0)
            return -ECONNRESET;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int nbd_recv_some(int fd, void *buf, size_t len, size_t *got, bool nowait)
{
    *got = 0;
#ifdef RAIDKIT_HAVE_GNUTLS
    gnutls_session_t s = wire_session(fd);
    if (s) {
        struct wire_tls *t = wire_get(fd);
        if (nowait && !gnutls_record_check_pending(s) && t->ipos == t->iend) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, 0) != 1)
                return -EAGAIN;
        }
        if (!nowait)
            wire_rx_flush(t);
        for (;;) {
            wire_in_recv = true;
            ssize_t n = gnutls_record_recv(s, buf, len);
            wire_in_recv = false;
            if (n > 0) {
                *got = (size_t)n;
                return 0;
            }
            if (n == 0)
                return -ECONNRESET;
            if (n == GNUTLS_E_INTERRUPTED)
                continue;
            if (n == GNUTLS_E_AGAIN) {
                wire_tls_wait(fd, s);
                continue;
            }
            return n == GNUTLS_E_PREMATURE_TERMINATION || n == GNUTLS_E_PUSH_ERROR ||
                           n == GNUTLS_E_PULL_ERROR
                       ? -ECONNRESET
                       : -EPROTO;
        }
    }
#endif
    for (;;) {
        ssize_t n = recv(fd, buf, len, nowait ? MSG_DONTWAIT : 0);
        if (n > 0) {
            *got = (size_t)n;
            return 0;
        }
        if (n == 0)
            return -ECONNRESET;
        if (errno == EINTR)
            continue;
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    }
}

int nbd_send_iov(int fd, struct iovec *iov, int n)
{
#ifdef RAIDKIT_HAVE_GNUTLS
    void *s = wire_session(fd);
    if (s)
        return wire_tls_send(fd, s, iov, n);
#endif
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    for (;;) {
        ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        /* Partial send: skip what went out and send the rest. */
        size_t done = (size_t)w;
        while (msg.msg_iovlen && done >= msg.msg_iov->iov_len) {
            done -= msg.msg_iov->iov_len;
            msg.msg_iov++;
            msg.msg_iovlen--;
        }
        if (!msg.msg_iovlen)
            return 0;
        msg.msg_iov->iov_base = (uint8_t *)msg.msg_iov->iov_base + done;
        msg.msg_iov->iov_len -= done;
    }
}

int nbd_drain(int fd, uint64_t len)
{
    uint8_t scratch[16384];
    while (len) {
        size_t n = len < sizeof(scratch) ? (size_t)len : sizeof(scratch);
        int r = nbd_recv_all(fd, scratch, n);
        if (r)
            return r;
        len -= n;
    }
    return 0;
}

int nbd_wire_set_tls(int fd, void *session)
{
    if (fd < 0 || fd >= WIRE_FD_MAX)
        return -EMFILE;
    struct wire_tls *t = malloc(sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->session = session;
    t->fd = fd;
    t->used = 0;
    t->rx_pushed = false;
    t->ipos = t->iend = 0;
    pthread_mutex_init(&t->out_lock, NULL);
#ifdef RAIDKIT_HAVE_GNUTLS
    gnutls_transport_set_ptr(session, t);
    gnutls_transport_set_push_function(session, wire_push);
    gnutls_transport_set_pull_function(session, wire_pull);
    gnutls_transport_set_pull_timeout_function(session, wire_pull_timeout);
#endif
    atomic_store_explicit(&wire_tls[fd], t, memory_order_release);
    return 0;
}

bool nbd_wire_is_tls(int fd)
{
    return wire_get(fd) != NULL;
}

size_t nbd_wire_pending(int fd)
{
#ifdef RAIDKIT_HAVE_GNUTLS
    struct wire_tls *t = wire_get(fd);
    if (t)
        return gnutls_record_check_pending(t->session) + (t->iend - t->ipos);
#endif
    return 0;
}

void nbd_wire_close(int fd)
{
    if (fd < 0 || fd >= WIRE_FD_MAX)
        return;
    struct wire_tls *t = atomic_exchange(&wire_tls[fd], NULL);
    if (!t)
        return;
#ifdef RAIDKIT_HAVE_GNUTLS
    /* SHUT_WR: never wait for the peer's close_notify (the socket is usually shut down already,
     * so this fails at once rather than block on a peer that does not read). */
    gnutls_bye(t->session, GNUTLS_SHUT_WR);
    wire_flush(t);
    gnutls_deinit(t->session);
#endif
    pthread_mutex_destroy(&t->out_lock);
    free(t);
}

#ifdef RAIDKIT_HAVE_GNUTLS
/* nbd_send_some over TLS: iovecs of at most WIRE_INLINE_MAX bytes in all are encrypted whole
 * into t->out (they fit: nothing but a few receive-side records can be there, see
 * nbd_replies_send) and sent without blocking; more is left to the writer (nbd_send_iov), which
 * gathers replies into full records. */
static int wire_tls_send_some(struct wire_tls *t, const struct iovec *iov, int n, size_t *sent)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    if (total > WIRE_INLINE_MAX)
        return -EAGAIN;
    int r = wire_tls_send_records(t->fd, t->session, (struct iovec *)iov, n);
    if (r)
        return r;
    *sent = total;
    pthread_mutex_lock(&t->out_lock);
    r = t->used ? wire_flush_nowait_locked(t) : 0;
    pthread_mutex_unlock(&t->out_lock);
    return r == -EAGAIN ? -EINPROGRESS : r;
}
#endif

int nbd_wire_flush(int fd)
{
    struct wire_tls *t = wire_get(fd);
    return t ? wire_flush(t) : 0;
}

int nbd_send_some(int fd, const struct iovec *iov, int n, size_t *sent)
{
    struct msghdr msg = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n};
    *sent = 0;
#ifdef RAIDKIT_HAVE_GNUTLS
    struct wire_tls *t = wire_get(fd);
    if (t)
        return wire_tls_send_some(t, iov, n, sent);
#endif
    for (;;) {
        ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        }
        *sent = (size_t)w;
        size_t total = 0;
        for (int i = 0; i < n; i++)
            total += iov[i].iov_len;
        return *sent == total ? 0 : -EAGAIN;
    }
}
