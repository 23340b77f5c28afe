/* The rbd member: a Ceph RBD image reached through librbd (`rbd:POOL/IMAGE[@CONF]`, see
 * docs/CLI.md "Member URIs" and include/raidkit/member_rbd.h).
 *
 *   submitter (rk_io_submit)             librbd's completion thread
 *   rbd_start: dead? -EIO; else          rbd_done: result < 0 -> member dead, -EIO;
 *   rbd_aio_* with a completion    ->    a FUA write not yet flushed -> rbd_aio_flush, again;
 *                                        else rk_io_complete
 *
 * Synchronous calls (rk_dev_read ...) use librbd's synchronous calls in the caller's thread.
 * One RADOS connection (rados_t) and one open image per member; librbd runs its own threads.
 */
#include "raidkit/member_rbd.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"

/* Why the calling thread's last rk_rbd_open failed (rk_rbd_last_error). */
static _Thread_local char last_err[300];

bool rk_member_is_rbd(const char *path)
{
    return path && !strncmp(path, "rbd:", 4);
}

const char *rk_rbd_last_error(void)
{
    return last_err;
}

#ifdef RAIDKIT_HAVE_RBD
#include <rados/librados.h>
#include <rbd/librbd.h>

#include "raidkit/member.h"

/* Connection timeout default, seconds (RAIDKIT_RBD_CONNECT_TIMEOUT_S overrides). */
#define RBD_CONNECT_TIMEOUT_S_DEFAULT 20u
/* OSD / monitor request timeout, seconds, unless the conf file sets one. */
#define RBD_OP_TIMEOUT_S_DEFAULT "30"

struct rbd_priv {
    rados_t cluster;
    rados_ioctx_t ioctx;
    rbd_image_t image;
    _Atomic bool dead;
    _Atomic int dead_err;          /* the -errno that made it dead (status) */
    _Atomic uint64_t done, lat_ns; /* successful requests and their summed latency */
    char spec[256];
};

/* One asynchronous request: its rk_io and whether a flush must still follow (FUA). */
struct rbd_req {
    struct rbd_priv *p;
    struct rk_io *io;
    bool flush_after;
    uint64_t t0; /* CLOCK_MONOTONIC ns at submission */
};

static uint64_t rbd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void mark_dead(struct rbd_priv *p, int r)
{
    bool was = false;
    if (atomic_compare_exchange_strong(&p->dead, &was, true)) {
        atomic_store(&p->dead_err, r);
        rk_err("rbd member %s: request failed: %s; the member fails", p->spec, strerror(-r));
    }
}

/* Map a librbd result (>= 0 bytes or -errno) to the device's 0 / -EIO (member dead). */
static int rbd_result(struct rbd_priv *p, ssize_t r)
{
    if (r >= 0)
        return 0;
    mark_dead(p, (int)r);
    return -EIO;
}

/* rbd_result of a request submitted at t0 (ns); a success counts in the mean latency. */
static int rbd_timed(struct rbd_priv *p, uint64_t t0, ssize_t r)
{
    int res = rbd_result(p, r);
    if (!res) {
        atomic_fetch_add(&p->lat_ns, rbd_now_ns() - t0);
        atomic_fetch_add(&p->done, 1);
    }
    return res;
}

static void rbd_done(rbd_completion_t c, void *arg);

/* Issue the aio call of q (or its trailing flush). 0, or the librbd -errno of the issue. */
static int rbd_issue(struct rbd_req *q, bool flush)
{
    struct rbd_priv *p = q->p;
    struct rk_io *io = q->io;
    rbd_completion_t c;
    int r = rbd_aio_create_completion(q, rbd_done, &c);
    if (r < 0)
        return r;
    if (flush) {
        r = rbd_aio_flush(p->image, c);
    } else {
        switch (io->op) {
        case RK_OP_READ:
            r = rbd_aio_read(p->image, io->off, (size_t)io->len, io->buf, c);
            break;
        case RK_OP_WRITE:
            r = rbd_aio_write(p->image, io->off, (size_t)io->len, io->buf, c);
            break;
        case RK_OP_FLUSH:
            r = rbd_aio_flush(p->image, c);
            break;
        case RK_OP_DISCARD:
            r = rbd_aio_discard(p->image, io->off, io->len, c);
            break;
        default: {
            int zf = (io->flags & RK_ZERO_NO_HOLE) ? RBD_WRITE_ZEROES_FLAG_THICK_PROVISION : 0;
            r = rbd_aio_write_zeroes(p->image, io->off, (size_t)io->len, c, zf, 0);
            break;
        }
        }
    }
    if (r < 0)
        rbd_aio_release(c);
    return r;
}

/* librbd's completion callback (its own thread). */
static void rbd_done(rbd_completion_t c, void *arg)
{
    struct rbd_req *q = arg;
    ssize_t r = rbd_aio_get_return_value(c);
    rbd_aio_release(c);
    int res = atomic_load(&q->p->dead) ? -EIO : rbd_result(q->p, r);
    if (res == 0 && !q->flush_after) {
        atomic_fetch_add(&q->p->lat_ns, rbd_now_ns() - q->t0);
        atomic_fetch_add(&q->p->done, 1);
    }
    if (res == 0 && q->flush_after) {
        q->flush_after = false;
        int ir = rbd_issue(q, true);
        if (ir == 0)
            return;
        res = rbd_result(q->p, ir);
    }
    struct rk_io *io = q->io;
    free(q);
    rk_io_complete(io, res);
}

static void rbd_submit_op(struct rk_dev *dev, struct rk_io *io)
{
    struct rbd_priv *p = dev->priv;
    if (atomic_load(&p->dead)) {
        rk_io_complete(io, -EIO);
        return;
    }
    struct rbd_req *q = malloc(sizeof(*q));
    if (!q) {
        rk_io_complete(io, -ENOMEM);
        return;
    }
    *q = (struct rbd_req){.p = p, .io = io, .t0 = rbd_now_ns()};
    q->flush_after = io->flags & RK_WRITE_FUA;
    int r = rbd_issue(q, false);
    if (r < 0) {
        free(q);
        rk_io_complete(io, rbd_result(p, r));
    }
}

static int rbd_flush_op(struct rk_dev *dev)
{
    struct rbd_priv *p = dev->priv;
    uint64_t t0 = rbd_now_ns();
    return atomic_load(&p->dead) ? -EIO : rbd_timed(p, t0, rbd_flush(p->image));
}

static int rbd_read_op(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct rbd_priv *p = dev->priv;
    uint64_t t0 = rbd_now_ns();
    return atomic_load(&p->dead) ? -EIO
                                 : rbd_timed(p, t0, rbd_read(p->image, off, (size_t)len, buf));
}

static int rbd_write_op(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                        uint32_t flags)
{
    struct rbd_priv *p = dev->priv;
    if (atomic_load(&p->dead))
        return -EIO;
    uint64_t t0 = rbd_now_ns();
    int r = rbd_timed(p, t0, rbd_write(p->image, off, (size_t)len, buf));
    return r == 0 && (flags & RK_WRITE_FUA) ? rbd_flush_op(dev) : r;
}

static int rbd_discard_op(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct rbd_priv *p = dev->priv;
    return atomic_load(&p->dead) ? -EIO : rbd_result(p, rbd_discard(p->image, off, len));
}

static int rbd_zero_op(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    struct rbd_priv *p = dev->priv;
    if (atomic_load(&p->dead))
        return -EIO;
    int zf = (flags & RK_ZERO_NO_HOLE) ? RBD_WRITE_ZEROES_FLAG_THICK_PROVISION : 0;
    int r = rbd_result(p, rbd_write_zeroes(p->image, off, (size_t)len, zf, 0));
    return r == 0 && (flags & RK_WRITE_FUA) ? rbd_flush_op(dev) : r;
}

static void rbd_release(struct rbd_priv *p)
{
    if (p->image)
        rbd_close(p->image);
    if (p->ioctx)
        rados_ioctx_destroy(p->ioctx);
    if (p->cluster)
        rados_shutdown(p->cluster);
    free(p);
}

/* How long the close of a dead member (its cluster unreachable) may take, ms
 * (RAIDKIT_RBD_CLOSE_TIMEOUT_MS overrides): librbd's close waits for requests in flight and
 * rados_shutdown for the monitors, which can block for minutes with the cluster gone, while a
 * dead member holds nothing the array still needs (its slot is failed). */
#define RBD_CLOSE_TIMEOUT_MS_DEFAULT 3000u

/* A close that runs in its own thread so a dead member's close can be given up on. */
struct rbd_closer {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct rbd_priv *p;
    bool done, abandoned;
};

static void *rbd_closer_run(void *arg)
{
    struct rbd_closer *c = arg;
    rbd_release(c->p);
    pthread_mutex_lock(&c->lock);
    c->done = true;
    bool abandoned = c->abandoned;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
    if (abandoned) /* the closing thread left: the last one out frees */
        free(c);
    return NULL;
}

static void rbd_close_op(struct rk_dev *dev)
{
    struct rbd_priv *p = dev->priv;
    if (!atomic_load(&p->dead)) {
        rbd_flush(p->image); /* librbd's cache; a failure was already reported by a request */
        rbd_release(p);
        return;
    }
    const char *e = getenv("RAIDKIT_RBD_CLOSE_TIMEOUT_MS");
    unsigned ms = e && atoi(e) > 0 ? (unsigned)atoi(e) : RBD_CLOSE_TIMEOUT_MS_DEFAULT;
    struct rbd_closer *c = calloc(1, sizeof(*c));
    pthread_t t;
    if (!c) {
        rbd_release(p);
        return;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->p = p;
    char spec[sizeof(p->spec)];
    snprintf(spec, sizeof(spec), "%s", p->spec);
    if (pthread_create(&t, NULL, rbd_closer_run, c)) {
        rbd_release(p);
        free(c);
        return;
    }
    pthread_detach(t);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += (time_t)(ms / 1000);
    dl.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&c->lock);
    while (!c->done && pthread_cond_timedwait(&c->cond, &c->lock, &dl) != ETIMEDOUT)
        ;
    bool done = c->done;
    c->abandoned = !done;
    pthread_mutex_unlock(&c->lock);
    if (done) {
        free(c);
        return;
    }
    rk_warn("rbd member %s: its close did not finish within %u ms (the cluster is "
            "unreachable); left to finish in the background (the member had failed: it holds "
            "nothing the array needs)",
            spec, ms);
}

static const struct rk_dev_ops rbd_ops;

const char *rk_rbd_state(const struct rk_dev *dev)
{
    if (!dev || dev->ops != &rbd_ops)
        return NULL;
    const struct rbd_priv *p = dev->priv;
    if (!atomic_load(&p->dead))
        return "connected";
    return atomic_load(&p->dead_err) == -ETIMEDOUT ? "timed-out" : "failed";
}

double rk_rbd_mean_latency_us(const struct rk_dev *dev)
{
    if (!dev || dev->ops != &rbd_ops)
        return 0;
    struct rbd_priv *p = dev->priv;
    uint64_t n = atomic_load(&p->done), lat = atomic_load(&p->lat_ns);
    return n ? (double)lat / (double)n / 1000.0 : 0.0;
}

static const struct rk_dev_ops rbd_ops = {
    .kind = "rbd",
    .read = rbd_read_op,
    .write = rbd_write_op,
    .flush = rbd_flush_op,
    .discard = rbd_discard_op,
    .write_zeroes = rbd_zero_op,
    .submit = rbd_submit_op,
    .close = rbd_close_op,
};

/* Split "rbd:POOL/IMAGE[@CONF]" into its parts (copies in pool/image/conf; conf "" if none). */
static int rbd_parse(const char *spec, char *pool, char *image, char *conf, size_t n)
{
    const char *s = spec + 4, *slash = strchr(s, '/'), *at = strchr(s, '@');
    if (!slash || slash == s || (at && at < slash) || slash[1] == '\0' || slash[1] == '@' ||
        (at && at[1] == '\0'))
        return -EINVAL;
    size_t pl = (size_t)(slash - s), il = at ? (size_t)(at - slash - 1) : strlen(slash + 1);
    if (pl >= n || il >= n || (at && strlen(at + 1) >= n))
        return -EINVAL;
    memcpy(pool, s, pl);
    pool[pl] = '\0';
    memcpy(image, slash + 1, il);
    image[il] = '\0';
    snprintf(conf, n, "%s", at ? at + 1 : "");
    return 0;
}

/* Create, configure and connect p->cluster. 0 or -errno with the reason in last_err. */
static int rbd_connect(struct rbd_priv *p, const char *spec, const char *conf)
{
    int r = rados_create(&p->cluster, getenv("CEPH_CLIENT_ID"));
    if (r < 0) {
        p->cluster = NULL;
        snprintf(last_err, sizeof(last_err), "%s: cannot create a RADOS handle: %s", spec,
                 strerror(-r));
        return r;
    }
    r = rados_conf_read_file(p->cluster, conf[0] ? conf : NULL);
    if (r < 0) {
        snprintf(last_err, sizeof(last_err), "%s: cannot read the Ceph configuration %s: %s", spec,
                 conf[0] ? conf : "(default search)", strerror(-r));
        return r;
    }
    rados_conf_parse_env(p->cluster, NULL);
    char v[32];
    const char *e = getenv("RAIDKIT_RBD_CONNECT_TIMEOUT_S");
    snprintf(v, sizeof(v), "%u",
             e && atoi(e) > 0 ? (unsigned)atoi(e) : RBD_CONNECT_TIMEOUT_S_DEFAULT);
    rados_conf_set(p->cluster, "client_mount_timeout", v);
    static const char *const op_timeouts[] = {"rados_osd_op_timeout", "rados_mon_op_timeout"};
    for (int i = 0; i < 2; i++)
        if (rados_conf_get(p->cluster, op_timeouts[i], v, sizeof(v)) == 0 && atof(v) == 0)
            rados_conf_set(p->cluster, op_timeouts[i], RBD_OP_TIMEOUT_S_DEFAULT);
    r = rados_connect(p->cluster);
    if (r < 0) {
        snprintf(last_err, sizeof(last_err), "%s: cannot connect to the Ceph cluster: %s", spec,
                 strerror(-r));
        return r;
    }
    return 0;
}

/* Open pool and image on a connected p. 0 or -errno with the reason in last_err. */
static int rbd_open_image(struct rbd_priv *p, const char *spec, const char *pool, const char *image,
                          uint32_t flags, uint64_t *size)
{
    int r = rados_ioctx_create(p->cluster, pool, &p->ioctx);
    if (r < 0) {
        p->ioctx = NULL;
        snprintf(last_err, sizeof(last_err), "%s: %s pool %s", spec,
                 r == -ENOENT ? "no such" : strerror(-r), pool);
        return r;
    }
    if (flags & RK_FILE_READ_ONLY)
        r = rbd_open_read_only(p->ioctx, image, &p->image, NULL);
    else
        r = rbd_open(p->ioctx, image, &p->image, NULL);
    if (r < 0) {
        p->image = NULL;
        if (r == -ENOENT)
            snprintf(last_err, sizeof(last_err), "%s: no such image %s in pool %s", spec, image,
                     pool);
        else
            snprintf(last_err, sizeof(last_err), "%s: cannot open image %s: %s", spec, image,
                     strerror(-r));
        return r;
    }
    r = rbd_get_size(p->image, size);
    if (r < 0)
        snprintf(last_err, sizeof(last_err), "%s: cannot read the image size: %s", spec,
                 strerror(-r));
    return r;
}

int rk_rbd_open(const char *spec, uint32_t flags, struct rk_dev **out)
{
    char pool[128], image[128], conf[256];
    if (!rk_member_is_rbd(spec) || rbd_parse(spec, pool, image, conf, sizeof(pool)) < 0) {
        snprintf(last_err, sizeof(last_err),
                 "%s: not an RBD member (expected rbd:POOL/IMAGE or rbd:POOL/IMAGE@CONF)",
                 spec ? spec : "(null)");
        return -EINVAL;
    }
    struct rbd_priv *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(last_err, sizeof(last_err), "%s: out of memory", spec);
        return -ENOMEM;
    }
    snprintf(p->spec, sizeof(p->spec), "%s", spec);
    uint64_t size = 0;
    int r = rbd_connect(p, spec, conf);
    if (!r)
        r = rbd_open_image(p, spec, pool, image, flags, &size);
    struct rk_dev *dev = NULL;
    if (!r && !(dev = rk_dev_alloc(&rbd_ops, p, spec))) {
        snprintf(last_err, sizeof(last_err), "%s: out of memory", spec);
        r = -ENOMEM;
    }
    if (r) {
        rbd_release(p);
        return r;
    }
    dev->block_size = 512;
    dev->opt_io_size = 4096;
    dev->size = size / 512 * 512;
    dev->direct = false;
    *out = dev;
    return 0;
}

#else /* !RAIDKIT_HAVE_RBD */

const char *rk_rbd_state(const struct rk_dev *dev)
{
    (void)dev;
    return NULL;
}

double rk_rbd_mean_latency_us(const struct rk_dev *dev)
{
    (void)dev;
    return 0;
}

int rk_rbd_open(const char *spec, uint32_t flags, struct rk_dev **out)
{
    (void)flags;
    (void)out;
    snprintf(last_err, sizeof(last_err),
             "%s: raidkit was built without librbd (install librbd-dev and rebuild)",
             spec ? spec : "(null)");
    return -EPROTONOSUPPORT;
}
#endif
