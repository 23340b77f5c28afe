/* The raidkit query keys of an NBD URI member (docs/CLI.md "Member URIs"), parsed and removed
 * before the URI goes to libnbd, and the bounded connect of a libnbd handle. */
#ifndef RK_MEMBER_NBD_URI_H
#define RK_MEMBER_NBD_URI_H

#include <stddef.h>
#include <stdint.h>

/* What the raidkit query keys of a member URI ask for. */
struct rk_nbd_uri_opts {
    unsigned connections; /* connections=N: 1..RK_NBD_MAX_CONNECTIONS; default
                             RK_NBD_DEFAULT_CONNECTIONS (used only when the server offers
                             multi-conn; otherwise one) */
    uint64_t timeout_ms;  /* timeout-ms=N: per-request timeout in ms (> 0); 0 = not given
                             (RAIDKIT_NBD_MEMBER_TIMEOUT_MS or the default applies) */
};

/*
 * Parse the query of uri ("...?key=value&key=value"): the keys connections and timeout-ms
 * fill *o and are removed; every other key is kept, in order, for libnbd (socket=, tls-...).
 * The URI without raidkit's keys is written to luri (luri_len bytes, NUL-terminated).
 * Returns 0, or -EINVAL with a one-line message in err naming the key and value (a value that
 * is not a decimal number in range, a key given twice), or -ENAMETOOLONG when luri is too
 * small. Pure string work: no I/O, no allocation.
 */
int rk_nbd_uri_parse(const char *uri, struct rk_nbd_uri_opts *o, char *luri, size_t luri_len,
                     char *err, size_t errlen);

/* A connect and handshake take at most this long (or the request timeout when shorter). */
#define NBD_CONNECT_MAX_MS 10000u

#ifdef RAIDKIT_HAVE_LIBNBD
struct nbd_handle;
/*
 * Connect h (a fresh libnbd handle) to uri and finish the handshake within
 * min(timeout_ns, NBD_CONNECT_MAX_MS): a server that accepts but never answers (stopped,
 * shutting down) must not hold the caller (the reconnect watcher, whom close joins).
 * Returns 0 (h ready), -ETIMEDOUT, or libnbd's -errno; the message is written to err.
 */
int rk_nbd_connect_deadline(struct nbd_handle *h, const char *uri, uint64_t timeout_ns, char *err,
                            size_t errlen);
#endif

#endif
