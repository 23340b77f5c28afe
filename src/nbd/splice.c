/* Zero-copy READ replies (issue 13 item 5; docs/ARCHITECTURE.md "Zero-copy reads"): a READ
 * whose range the device maps to one extent of one member file is sent member -> pipe ->
 * socket with splice(2), so its data never passes through a user-space buffer (the usual path
 * copies it twice: member -> request buffer -> socket). Plain connections only (TLS encrypts in
 * user space). Off unless RAIDKIT_NBD_SPLICE=N (docs/CLI.md "Environment"): it measured slower
 * at queue depth 1 and not clearly faster at 8-32 (bench/RESULTS.md "Zero-copy reads").
 *
 * Order, so that every member error still gets a proper error reply through the usual path:
 *   1. the socket must be writable now (poll) and free (nbd_send_claim: this thread owns the
 *      send side, so the connection's one pipe needs no lock);
 *   2. rk_dev_map_extent, then the whole range is spliced from the member into the pipe: any
 *      failure here empties the pipe (closes it) and gives the request back to the usual path;
 *   3. only then the reply header is sent and the pipe spliced to the socket. A send error now
 *      cuts the connection: a reply whose header went out cannot be completed otherwise (NBD
 *      protocol, "Transmission": the peer sees the connection end, never a short reply).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/util.h"
#include "nbd/nbd_int.h"
#include "nbd/proto.h"
#include "nbd/wire.h"

/* Open c's pipe if needed (sized NBD_SPLICE_PIPE when the kernel allows). False when there is
 * none (a failure is remembered: the connection then never tries again). */
static bool nbd_pipe_open(struct nbd_conn *c)
{
    if (c->spipe_cap)
        return true;
    if (c->spipe_bad || pipe2(c->spipe, O_CLOEXEC)) {
        c->spipe_bad = true;
        return false;
    }
    (void)fcntl(c->spipe[1], F_SETPIPE_SZ, (int)NBD_SPLICE_PIPE); /* else the default size */
    int cap = fcntl(c->spipe[1], F_GETPIPE_SZ);
    c->spipe_cap = cap > 0 ? (size_t)cap : 4096;
    return true;
}

void nbd_splice_close(struct nbd_conn *c)
{
    if (!c->spipe_cap)
        return;
    close(c->spipe[0]);
    close(c->spipe[1]);
    c->spipe_cap = 0;
}

/* Move len bytes of file fd at file_off into c's (empty) pipe. 0, or -errno (-EIO for an early
 * end of file, -EAGAIN when the pipe has no room: more pipe buffers than pages). */
static int nbd_pipe_fill(struct nbd_conn *c, int fd, uint64_t file_off, size_t len)
{
    loff_t off = (loff_t)file_off;
    while (len) {
        ssize_t n = splice(fd, &off, c->spipe[1], NULL, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n == 0 ? -EIO : -errno;
    }
    return 0;
}

/* Send the header h (blocking: it is small and the socket was writable), then len bytes from
 * c's pipe to the socket. 0 or -errno. */
static int nbd_pipe_send(struct nbd_conn *c, const struct iovec *h, size_t len)
{
    const char *p = h->iov_base;
    size_t hl = h->iov_len;
    while (hl) {
        ssize_t n = send(c->fd, p, hl, MSG_NOSIGNAL | MSG_MORE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        p += n;
        hl -= (size_t)n;
    }
    while (len) {
        ssize_t n = splice(c->spipe[0], NULL, c->fd, NULL, len, SPLICE_F_MOVE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        len -= (size_t)n;
    }
    return 0;
}

void nbd_splice_end(struct nbd_conn *c)
{
    if (c->nspliced)
        rk_debug("nbd: %" PRIu64 " READ replies of this connection went out by splice",
                 c->nspliced);
    nbd_splice_close(c);
}

bool nbd_splice_read(struct nbd_req *r)
{
    struct nbd_conn *c = r->conn;
    struct rk_nbd_server *srv = c->srv;
    if (!srv->splice_min || r->len < srv->splice_min || c->spipe_bad || nbd_wire_is_tls(c->fd))
        return false;
    struct pollfd pf = {.fd = c->fd, .events = POLLOUT};
    if (poll(&pf, 1, 0) != 1 || pf.revents != POLLOUT)
        return false; /* a full window: the usual path queues for the writer, blocking nobody */
    if (!nbd_send_claim(c))
        return false;
    int fd;
    uint64_t file_off;
    if (!nbd_pipe_open(c) || r->len > c->spipe_cap ||
        rk_dev_map_extent(srv->dev, r->off, r->len, &fd, &file_off)) {
        nbd_send_release(c, NULL, true);
        return false;
    }
    if (nbd_pipe_fill(c, fd, file_off, r->len)) {
        nbd_splice_close(c); /* what reached the pipe goes with it; a new one comes next time */
        nbd_send_release(c, NULL, true);
        return false; /* the usual read reports (or repairs) the member's error */
    }
    int e = nbd_pipe_send(c, nbd_reply_head(r), r->len);
    if (e)
        nbd_splice_close(c); /* the connection is cut below; drop what is left */
    c->nspliced += e == 0;
    nbd_send_release(c, r, e == 0);
    return true;
}
