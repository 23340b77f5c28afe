/* NBD socket helpers (wire.c): whole-buffer receive, vectored send and drain on a connected
 * stream socket, over the connection's transport: the plain socket, or the TLS session that
 * NBD_OPT_STARTTLS put on it (nbd_wire_set_tls). Callers name the connection by its fd either
 * way and never touch the socket with recv/send themselves. They know nothing of the protocol.
 * All return 0 or -errno; a peer that closes mid-buffer gives -ECONNRESET. */
#ifndef RK_NBD_WIRE_H
#define RK_NBD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Receive exactly len bytes into buf (caller-owned, at least len bytes), retrying on EINTR and
 * short reads. -ECONNRESET on EOF before len bytes arrived, else -errno of recv(2) (-EPROTO for
 * a TLS record error). */
int nbd_recv_all(int fd, void *buf, size_t len);

/* Receive what is there, up to len bytes, into buf (caller-owned, at least len bytes): one
 * recv(2) (over TLS: the rest of one record). Blocks until at least one byte arrived unless
 * nowait, which gives -EAGAIN when nothing can be read at once. 0 with *got >= 1; -ECONNRESET on
 * EOF, else as nbd_recv_all. */
int nbd_recv_some(int fd, void *buf, size_t len, size_t *got, bool nowait);

/* Send the n iovecs completely with sendmsg(MSG_NOSIGNAL), resuming after partial sends. The
 * iovec array (caller-owned) is modified while sending and must not be reused afterwards.
 * -errno of sendmsg(2) (-EPIPE when the peer is gone). Over TLS, one sender at a time per fd
 * (the caller's send lock or writer thread), concurrent with one receiver. */
int nbd_send_iov(int fd, struct iovec *iov, int n);

/* Send a prefix of the n iovecs (caller-owned, not modified) without blocking: one
 * sendmsg(MSG_DONTWAIT | MSG_NOSIGNAL). *sent = bytes the transport accepted (0..total). 0 when
 * everything went out; -EAGAIN when the rest would block (continue from *sent later with
 * nbd_send_some or nbd_send_iov); else -errno of sendmsg(2). The caller never mixes this with
 * another sender on the same connection at the same time.
 * Over TLS it is all or nothing: iovecs of more than 4 KiB in all are not taken (-EAGAIN,
 * *sent 0: send them with nbd_send_iov); else all are encrypted (*sent = total) and their
 * records sent as far as the socket takes them: 0 when all are out, -EINPROGRESS when records
 * wait in the connection's transport, to be put out by nbd_wire_flush (which may block) before
 * the connection is left idle (a later nbd_send_iov sends them first). */
int nbd_send_some(int fd, const struct iovec *iov, int n, size_t *sent);

/* Put the TLS records waiting in fd's transport (see nbd_send_some) on the socket, blocking
 * while the peer does not read. 0 (also for a plain fd), or -errno of send(2). Same one-sender
 * rule as nbd_send_iov. */
int nbd_wire_flush(int fd);

/* Receive and throw away len bytes (a payload we refuse but must consume to stay in sync).
 * Errors as nbd_recv_all. */
int nbd_drain(int fd, uint64_t len);

/* Put the TLS session (a gnutls_session_t, owned by wire.c from now on) under fd's transport:
 * every later call on fd goes through it (records are gathered into 128 KiB sends; the transport
 * takes over the session's push/pull functions). -EMFILE when fd >= the table's 65536 entries,
 * -ENOMEM. */
int nbd_wire_set_tls(int fd, void *session);

/* True when fd runs TLS. */
bool nbd_wire_is_tls(int fd);

/* Bytes already received and decrypted but not yet read by nbd_recv_all: a reader that polls
 * fd before reading must read when this is non-zero, poll(2) cannot see them. 0 for plain. */
size_t nbd_wire_pending(int fd);

/* End fd's transport before close(fd): a TLS session gets its close_notify (best effort, without
 * blocking) and is freed. Plain fds: nothing. Must be called once the connection's readers and
 * senders are done, before the fd number can be reused. */
void nbd_wire_close(int fd);

#endif
