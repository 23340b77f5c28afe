/* raidkit NBD server: exports one rk_dev over the NBD protocol (the public spec, NBD protocol
 * "Fixed newstyle negotiation" and "Transmission"; docs/CLI.md "NBD"): fixed newstyle
 * handshake, structured replies, many connections, out-of-order replies. */
#ifndef RAIDKIT_NBD_H
#define RAIDKIT_NBD_H

#include <stdbool.h>
#include <stdint.h>

#include "raidkit/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rk_nbd_opts.tls */
#define RK_NBD_TLS_OFF     0 /* STARTTLS refused (NBD_REP_ERR_UNSUP) */
#define RK_NBD_TLS_ON      1 /* STARTTLS offered; plaintext clients still served */
#define RK_NBD_TLS_REQUIRE 2 /* every option before STARTTLS gets NBD_REP_ERR_TLS_REQD */

/* Where a server's connections come from (rk_nbd_opts.source). */
enum rk_nbd_source {
    RK_NBD_SOURCE_LISTEN = 0, /* bind and listen on opts->listen */
    /* opts->fd is a bound, listening stream socket (systemd socket activation, or one made by
     * rk_nbd_listen before anything else was touched); the server owns it from create on.
     * opts->listen, when "unix:PATH", names its socket file (removed at destroy), else NULL. */
    RK_NBD_SOURCE_LISTEN_FD,
    /* opts->fd is one connected stream socket (serve --single: stdin); the server owns it,
     * serves that one connection, and rk_nbd_server_run returns when it ends. */
    RK_NBD_SOURCE_CONN_FD,
};

struct rk_nbd_opts {
    const char *listen;        /* "unix:PATH" (default kind) or "tcp:HOST:PORT" / "tcp:PORT"
                                * (host defaults to 127.0.0.1) */
    enum rk_nbd_source source; /* default RK_NBD_SOURCE_LISTEN */
    int fd;                    /* the socket of RK_NBD_SOURCE_LISTEN_FD / _CONN_FD */
    const char *export_name;   /* name of the export; "" (the default export) also matches */
    const char *description;   /* NBD_INFO_DESCRIPTION text, may be NULL */
    bool read_only;            /* advertise READ_ONLY (not TRIM/WRITE_ZEROES) and refuse WRITE,
                                * TRIM and WRITE_ZEROES with EPERM */
    int threads;               /* worker threads serving requests; 0 = default (32) */
    uint32_t max_request;      /* largest READ/WRITE payload in bytes; 0 = 32 MiB */
    /* Unix socket file permissions, in place from the moment the socket appears
     * (docs/SECURITY.md): mode bits (0 = 0600), and owner/group when the *_set flags say so. */
    uint32_t socket_mode;
    bool socket_uid_set, socket_gid_set;
    uint32_t socket_uid, socket_gid;
    /* TLS (docs/SECURITY.md "TLS"): RK_NBD_TLS_OFF/ON/REQUIRE; with ON or REQUIRE exactly one
     * of tls_certificates (a directory holding ca-cert.pem, server-cert.pem, server-key.pem)
     * and tls_psk (a psktool key file, "identity:hexkey" lines). */
    int tls;
    const char *tls_certificates;
    const char *tls_psk;
    /* Limits (docs/CLI.md "serve"). 0 selects the default in brackets. */
    int max_connections;      /* connections at once; more are accepted and closed [256] */
    uint64_t max_memory;      /* request-buffer bytes summed over every connection; at least
                               * 2 x max_request [1 GiB] */
    uint32_t handshake_ms;    /* a connection must finish the handshake in this time [10000] */
    uint32_t idle_timeout_ms; /* close a connection with nothing received, sent or running for
                               * this long [0 = never] */
};

struct rk_nbd_server;

/* Bind and listen on listen ("unix:PATH" or "tcp:[HOST:]PORT", as rk_nbd_opts.listen): a stale
 * unix socket file is replaced, a live one (a server accepts on it) refused. Returns 0 and the
 * socket in *fd (close-on-exec, caller owns it; pass it as RK_NBD_SOURCE_LISTEN_FD), or -errno
 * with a message in err. A unix socket gets perm's socket_mode/owner/group (perm NULL: 0600, the
 * server's user) before it appears at its path. Lets a caller bind before it touches anything
 * else. */
int rk_nbd_listen(const char *listen, const struct rk_nbd_opts *perm, int *fd, char *err,
                  size_t errlen);

/* Create a server for dev (not owned) and bind/listen on opts->listen (or take opts->fd, as
 * opts->source says). A stale unix socket file is replaced. Returns 0 and *out, or -errno
 * with a message in err (an fd given is closed then too). */
int rk_nbd_server_create(struct rk_dev *dev, const struct rk_nbd_opts *opts,
                         struct rk_nbd_server **out, char *err, size_t errlen);

/* Check the TLS settings of opts: --tls on/require needs exactly one of tls_certificates and
 * tls_psk, and their files must load (they are loaded and freed again); certificates or a key
 * without --tls on/require are refused too. 0, or -EINVAL/-ENOENT/-ENOTSUP (a build without
 * GnuTLS) with one line naming the option and file in err. */
int rk_nbd_tls_check(const struct rk_nbd_opts *opts, char *err, size_t errlen);

/* Warn (once, on stderr via the log) when opts listens on TCP on an address that is not loopback
 * and TLS is not required (off, or on with plaintext still let in): anyone who can reach it can
 * read and write the export. */
void rk_nbd_warn_exposed(const struct rk_nbd_opts *opts);

/* Serve connections until rk_nbd_server_stop(); then stop accepting, let every in-flight
 * request finish and its reply be sent, close connections, and return 0. */
int rk_nbd_server_run(struct rk_nbd_server *srv);

/* Ask a running server to stop. Async-signal-safe (writes to an eventfd/pipe). */
void rk_nbd_server_stop(struct rk_nbd_server *srv);

/* Free the server (after run returned), removing its unix socket file. NULL is accepted. */
void rk_nbd_server_destroy(struct rk_nbd_server *srv);

#ifdef __cplusplus
}
#endif
#endif
