/* TLS for the NBD server (tls.c, GnuTLS): the server-wide credentials (X.509 in nbdkit's
 * directory layout, or a psktool PSK file) and the upgrade of one connection after
 * NBD_OPT_STARTTLS (NBD protocol, "TLS support"). docs/SECURITY.md "TLS". */
#ifndef RK_NBD_TLS_H
#define RK_NBD_TLS_H

#include <stddef.h>

#include "raidkit/nbd.h"

struct nbd_tls;

/* Load the credentials opts names (rk_nbd_tls_check's rules). *out = NULL with --tls off.
 * 0, or -errno with one line in err naming the file. */
int nbd_tls_create(const struct rk_nbd_opts *opts, struct nbd_tls **out, char *err, size_t errlen);

/* Free the credentials (NULL accepted); every session using them must be closed. */
void nbd_tls_free(struct nbd_tls *t);

/* Run the server side of the TLS handshake on fd (just after the STARTTLS ACK), at most
 * timeout_ms; on success the session is installed as fd's transport (nbd_wire_set_tls) and
 * 0 returned. -EPROTO (handshake failed: wrong key, unknown identity, not TLS), -ETIMEDOUT,
 * -ENOMEM. The caller then drops the connection: after the ACK there is no plaintext. */
int nbd_tls_start(struct nbd_tls *t, int fd, unsigned timeout_ms);

#endif
