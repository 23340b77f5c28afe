/* raidkit remote members: a member given as an NBD URI (docs/CLI.md "Member URIs"), reached
 * through libnbd, and the one member-open entry point that dispatches on the path's form. */
#ifndef RAIDKIT_MEMBER_NBD_H
#define RAIDKIT_MEMBER_NBD_H

#include <stdbool.h>
#include <stdint.h>

#include "raidkit/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Connections per nbd member: at most, and by default when the server offers multi-conn (the
 * URI query key connections=N chooses; a server without multi-conn always gets one). */
#define RK_NBD_MAX_CONNECTIONS     16
#define RK_NBD_DEFAULT_CONNECTIONS 4

/* True when path is an NBD URI member: it starts with "nbd:", "nbd+unix:", "nbds:" or
 * "nbds+unix:" (libnbd's URI schemes, NBD URI spec), or an RBD member ("rbd:", member_rbd.h):
 * any member that is not a local path. NULL gives false. */
bool rk_member_is_uri(const char *path);

/*
 * Open any member: an NBD URI (rk_nbd_open), an RBD image "rbd:POOL/IMAGE[@CONF]" (rk_rbd_open;
 * its failure reason is then also what rk_nbd_last_error returns) or a local file / block
 * device (rk_file_open).
 * flags are the RK_FILE_* flags (RK_FILE_READ_ONLY applies to both; the others to files only).
 * Returns 0 and *out (owned by the caller, close with rk_dev_close), or -errno.
 */
int rk_member_open(const char *path, uint32_t flags, struct rk_dev **out);

/*
 * Connect to the NBD export named by uri (nbd://host[:port]/export, nbd+unix:///export?socket=P,
 * nbds://... with TLS) and return it as a device: size = the export size rounded down to the
 * block size (512, or 4096 when the server's minimum block size is larger than 512), direct =
 * false (buffers need no alignment). One libnbd handle and one completion thread per
 * connection; one connection, or, when the server offers multi-conn, connections=N of them
 * (query key, default RK_NBD_DEFAULT_CONNECTIONS) with requests spread round robin; requests
 * are issued with libnbd's aio calls, many in flight. FUA and FLUSH are passed through
 * (FUA emulated by write+flush when the server has flush but no FUA), discard and write-zeroes
 * go to the server when it offers them (else discard is a no-op and write-zeroes writes zeros).
 * A request not answered within the URI's timeout-ms=N, else RAIDKIT_NBD_MEMBER_TIMEOUT_MS,
 * else 30000 ms fails with -ETIMEDOUT; after a timeout, a transport error or an error reply the
 * member is dead and every later request fails with -EIO (the array then fails the member). No lock
 * is taken: nothing but the superblock's event counter protects a remote member from a second user
 * (docs/CLI.md). The query keys connections and timeout-ms are raidkit's (removed before libnbd
 * sees the URI; docs/CLI.md "Member URIs"). Errors: -EINVAL malformed URI or a bad raidkit query
 * value, -ECONNREFUSED / -ENOENT unreachable server or socket, -EROFS a writable open of a
 * read-only export, -EPROTONOSUPPORT raidkit built without libnbd; the reason (libnbd's message) is
 * kept for rk_nbd_last_error(). Nothing is logged.
 */
int rk_nbd_open(const char *uri, uint32_t flags, struct rk_dev **out);

/* One-line reason of the calling thread's last failed rk_nbd_open (libnbd's message, e.g.
 * "nbd_connect_uri: connect: No such file or directory"); "" before any failure. */
const char *rk_nbd_last_error(void);

/* Connection state of an nbd member: "connected", "disconnected", "timed-out" or "closing";
 * NULL when dev is not an nbd member. */
const char *rk_nbd_state(const struct rk_dev *dev);

/* Mean latency of the nbd member's successful requests, microseconds (0 before any, or when
 * dev is not an nbd member). */
double rk_nbd_mean_latency_us(const struct rk_dev *dev);

/* What an open nbd member negotiated: connections in use, the server's multi-conn, FUA,
 * flush, trim and write-zeroes flags, and the per-request timeout (ms). */
struct rk_nbd_member_info {
    unsigned connections;
    bool multi_conn, fua, flush, trim, zero;
    uint64_t timeout_ms;
};

/* Fill *out for an nbd member. 0, or -EINVAL when dev is not one (or without libnbd). */
int rk_nbd_info(const struct rk_dev *dev, struct rk_nbd_member_info *out);

#ifdef __cplusplus
}
#endif
#endif
