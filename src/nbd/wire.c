/* NBD socket helpers (see wire.h): the only place the server calls recv(2) and sendmsg(2), and
 * the only place it reads or writes TLS records. The transport of a connection is looked up by
 * its fd: a session pointer in a table indexed by fd (NULL = plain). */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "nbd/wire.h"

#ifdef RAIDKIT_HAVE_GNUTLS
#include <gnutls/gnutls.h>
#endif

#define WIRE_FD_MAX 65536
/* Replies up to this size leave as one corked record; larger payloads go record by record
 * from the caller's buffer (no copy, no extra memory held for a slow peer). */
#define WIRE_CORK_MAX 16384u

static _Atomic(void *) wire_tls[WIRE_FD_MAX];

static void *wire_session(int fd)
{
    return fd >= 0 && fd < WIRE_FD_MAX ? atomic_load_explicit(&wire_tls[fd], memory_order_acquire)
                                       : NULL;
}

#ifdef RAIDKIT_HAVE_GNUTLS
/* Wait until a TLS call that returned GNUTLS_E_AGAIN can go on (a non-blocking fd). */
static void wire_tls_wait(int fd, gnutls_session_t s)
{
    struct pollfd p = {.fd = fd, .events = gnutls_record_get_direction(s) ? POLLOUT : POLLIN};
    poll(&p, 1, 1000);
}

static int wire_tls_recv(int fd, gnutls_session_t s, uint8_t *p, size_t len)
{
    while (len) {
        ssize_t n = gnutls_record_recv(s, p, len);
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

/* Small replies go out as one record (corked); large payloads record by record, uncopied. */
static int wire_tls_send(int fd, gnutls_session_t s, struct iovec *iov, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    bool cork = total <= WIRE_CORK_MAX;
    if (cork)
        gnutls_record_cork(s);
    for (int i = 0; i < n; i++) {
        int r = wire_tls_send_buf(fd, s, iov[i].iov_base, iov[i].iov_len);
        if (r) {
            if (cork)
                gnutls_record_uncork(s, 0);
            return r;
        }
    }
    if (!cork)
        return 0;
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
    atomic_store_explicit(&wire_tls[fd], session, memory_order_release);
    return 0;
}

bool nbd_wire_is_tls(int fd)
{
    return wire_session(fd) != NULL;
}

size_t nbd_wire_pending(int fd)
{
#ifdef RAIDKIT_HAVE_GNUTLS
    void *s = wire_session(fd);
    if (s)
        return gnutls_record_check_pending(s);
#endif
    return 0;
}

void nbd_wire_close(int fd)
{
    if (fd < 0 || fd >= WIRE_FD_MAX)
        return;
    void *s = atomic_exchange(&wire_tls[fd], NULL);
#ifdef RAIDKIT_HAVE_GNUTLS
    if (s) {
        /* SHUT_WR: never wait for the peer's close_notify (the socket is usually shut down
         * already, so this fails at once rather than block on a peer that does not read). */
        gnutls_bye(s, GNUTLS_SHUT_WR);
        gnutls_deinit(s);
    }
#else
    (void)s;
#endif
}
