/* NBD socket helpers (wire.c): whole-buffer receive, vectored send and drain on a connected
 * stream socket. They know nothing of the protocol; every NBD file that talks to a peer uses
 * them. All return 0 or -errno; a peer that closes mid-buffer gives -ECONNRESET. */
#ifndef RK_NBD_WIRE_H
#define RK_NBD_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Receive exactly len bytes into buf (caller-owned, at least len bytes), retrying on EINTR and
 * short reads. -ECONNRESET on EOF before len bytes arrived, else -errno of recv(2). */
int nbd_recv_all(int fd, void *buf, size_t len);

/* Send the n iovecs completely with sendmsg(MSG_NOSIGNAL), resuming after partial sends. The
 * iovec array (caller-owned) is modified while sending and must not be reused afterwards.
 * -errno of sendmsg(2) (-EPIPE when the peer is gone). */
int nbd_send_iov(int fd, struct iovec *iov, int n);

/* Send a prefix of the n iovecs (caller-owned, not modified) without blocking: one
 * sendmsg(MSG_DONTWAIT | MSG_NOSIGNAL). *sent = bytes the transport accepted (0..total). 0 when
 * everything went out; -EAGAIN when the rest would block (continue from *sent later with
 * nbd_send_some or nbd_send_iov); else -errno of sendmsg(2). The caller never mixes this with
 * another sender on the same connection at the same time. */
int nbd_send_some(int fd, const struct iovec *iov, int n, size_t *sent);

/* Receive and throw away len bytes (a payload we refuse but must consume to stay in sync).
 * Errors as nbd_recv_all. */
int nbd_drain(int fd, uint64_t len);

#endif
