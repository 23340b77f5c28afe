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

struct rk_nbd_opts {
    const char *listen;      /* "unix:PATH" (default kind) or "tcp:HOST:PORT" / "tcp:PORT"
                              * (host defaults to 127.0.0.1) */
    const char *export_name; /* name of the export; "" (the default export) also matches */
    const char *description; /* NBD_INFO_DESCRIPTION text, may be NULL */
    bool read_only;          /* advertise READ_ONLY (not TRIM/WRITE_ZEROES) and refuse WRITE,
                              * TRIM and WRITE_ZEROES with EPERM */
    int threads;             /* worker threads serving requests; 0 = default (32) */
    uint32_t max_request;    /* largest READ/WRITE payload in bytes; 0 = 32 MiB */
    /* Limits (docs/CLI.md "serve"). 0 selects the default in brackets. */
    int max_connections;      /* connections at once; more are accepted and closed [256] */
    uint64_t max_memory;      /* request-buffer bytes summed over every connection; at least
                               * 2 x max_request [1 GiB] */
    uint32_t handshake_ms;    /* a connection must finish the handshake in this time [10000] */
    uint32_t idle_timeout_ms; /* close a connection with nothing received, sent or running for
                               * this long [0 = never] */
};

struct rk_nbd_server;

/* Create a server for dev (not owned) and bind/listen on opts->listen. A stale unix socket
 * file is replaced. Returns 0 and *out, or -errno with a message in err. */
int rk_nbd_server_create(struct rk_dev *dev, const struct rk_nbd_opts *opts,
                         struct rk_nbd_server **out, char *err, size_t errlen);

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
