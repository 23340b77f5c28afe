/* The raidkit query keys of an NBD URI member (docs/CLI.md "Member URIs"), parsed and removed
 * before the URI goes to libnbd. */
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

#endif
