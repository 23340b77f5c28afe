/* raidkit Ceph RBD members: a member given as `rbd:POOL/IMAGE[@CONF]` (docs/CLI.md "Member
 * URIs"), an RBD image reached through librbd, usable anywhere a member path is (an array member,
 * so also the backing of a cache: `cache create CACHEDEV rbd:POOL/IMAGE`). */
#ifndef RAIDKIT_MEMBER_RBD_H
#define RAIDKIT_MEMBER_RBD_H

#include <stdbool.h>
#include <stdint.h>

#include "raidkit/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True when path names an RBD member: it starts with "rbd:". NULL gives false. */
bool rk_member_is_rbd(const char *path);

/*
 * Open the RBD image named by spec, "rbd:POOL/IMAGE" or "rbd:POOL/IMAGE@CONF" (CONF: the path of
 * a ceph.conf; without it librbd's default search: $CEPH_CONF, /etc/ceph/ceph.conf, ...; the
 * client is client.admin unless $CEPH_CLIENT_ID names another), and return it as a device:
 * size = the image size rounded down to 512, block_size 512, direct = false (buffers need no
 * alignment). One RADOS connection per member. Requests are librbd aio calls (rbd_aio_read,
 * rbd_aio_write, rbd_aio_flush, rbd_aio_discard, rbd_aio_write_zeroes), many in flight; a FUA
 * write is a write followed by a flush (librbd has no FUA), completed after the flush. Flush is
 * rbd_aio_flush (it writes librbd's own cache back; after it returns the data is on the OSDs).
 * Timeouts: the connection gives up after RAIDKIT_RBD_CONNECT_TIMEOUT_S seconds (default 20),
 * an OSD request after rados_osd_op_timeout (set to 30 s unless the conf file sets it).
 * The first I/O error makes the member dead: that request and every later one fail with -EIO,
 * so the array fails the member like a local one. No lock is taken (as for NBD members).
 * Errors: -EINVAL a malformed spec, -ENOENT no such pool or image, -ETIMEDOUT / -ENOTCONN the
 * cluster cannot be reached, -EPROTONOSUPPORT raidkit built without librbd; the one-line reason
 * is kept for rk_rbd_last_error(). Nothing is logged.
 */
int rk_rbd_open(const char *spec, uint32_t flags, struct rk_dev **out);

/* One-line reason of the calling thread's last failed rk_rbd_open, e.g. "rbd:rk/img: no such
 * image in pool rk"; "" before any failure. */
const char *rk_rbd_last_error(void);

/* The state of an rbd member for status: "connected" while it serves requests (librbd keeps
 * and re-establishes its monitor and OSD sessions by itself, docs/SCALE.md "RBD"), "timed-out"
 * once a request failed with -ETIMEDOUT (rados_osd_op_timeout), "failed" after any other
 * error (the member is dead then). NULL when dev is not an rbd member (or no librbd). */
const char *rk_rbd_state(const struct rk_dev *dev);

/* Mean latency, microseconds, of dev's successful requests from submission to completion (a
 * FUA write includes its flush); 0 before any, or when dev is not an rbd member. */
double rk_rbd_mean_latency_us(const struct rk_dev *dev);

#ifdef __cplusplus
}
#endif
#endif
