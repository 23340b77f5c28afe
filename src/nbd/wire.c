/* NBD socket helpers (see wire.h): the only place the server calls recv(2) and sendmsg(2). */
#include <errno.h>
#include <sys/socket.h>

#include "nbd/wire.h"

int nbd_recv_all(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
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

int nbd_send_some(int fd, const struct iovec *iov, int n, size_t *sent)
{
    struct msghdr msg = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n};
    *sent = 0;
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
