/* The NBD path of the fast torture driver (see workload.h, wl_run_nbd): the real server
 * (src/nbd, the code `raidkit serve` runs) on one end of a socketpair, in this process, and a
 * minimal fixed-newstyle client on the other (NBD protocol: "Fixed newstyle negotiation",
 * NBD_OPT_EXPORT_NAME, simple replies), several requests in flight. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/util.h"
#include "nbd/proto.h"
#include "raidkit/nbd.h"
#include "workload.h"

#define WLN_QD_MAX 32

static int wln_send(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -EPIPE;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

static int wln_recv(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n) {
        ssize_t k = recv(fd, b, n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -EPIPE;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

static void be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void be32(uint8_t *p, uint32_t v)
{
    be16(p, (uint16_t)(v >> 16));
    be16(p + 2, (uint16_t)v);
}

static void be64(uint8_t *p, uint64_t v)
{
    be32(p, (uint32_t)(v >> 32));
    be32(p + 4, (uint32_t)v);
}

static uint64_t rd_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Fixed newstyle handshake with NBD_OPT_EXPORT_NAME "" (no zeroes). Returns 0 or -EPROTO. */
static int wln_handshake(int fd, uint64_t want_size, char *err, size_t errlen)
{
    uint8_t h[18], opt[16], rep[10];
    if (wln_recv(fd, h, 18) || rd_be(h, 8) != NBD_MAGIC || rd_be(h + 8, 8) != NBD_IHAVEOPT) {
        rk_set_err(err, errlen, "nbd: bad server greeting");
        return -EPROTO;
    }
    be32(opt, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
    be64(opt + 4, NBD_IHAVEOPT);
    be32(opt + 12, NBD_OPT_EXPORT_NAME);
    uint8_t len[4] = {0};
    if (wln_send(fd, opt, 16) || wln_send(fd, len, 4) || wln_recv(fd, rep, 10)) {
        rk_set_err(err, errlen, "nbd: handshake failed");
        return -EPROTO;
    }
    uint64_t size = rd_be(rep, 8);
    uint16_t tflags = (uint16_t)rd_be(rep + 8, 2);
    if (size != want_size || !(tflags & NBD_FLAG_SEND_FLUSH) || !(tflags & NBD_FLAG_SEND_FUA)) {
        rk_set_err(err, errlen, "nbd: export size %llu flags 0x%x, want %llu with FLUSH and FUA",
                   (unsigned long long)size, tflags, (unsigned long long)want_size);
        return -EPROTO;
    }
    return 0;
}

/* Send op as request with cookie slot (a write's data from buf). */
static int wln_request(int fd, struct wl *w, const struct wl_op *op, uint32_t slot, uint8_t *buf)
{
    uint8_t *hdr = buf; /* 28 header bytes right before the data */
    be32(hdr, NBD_REQUEST_MAGIC);
    be16(hdr + 4, op->fua ? NBD_CMD_FLAG_FUA : 0);
    be16(hdr + 6, op->flush ? NBD_CMD_FLUSH : NBD_CMD_WRITE);
    be64(hdr + 8, slot);
    be64(hdr + 16, op->flush ? 0 : op->start * STAMP_BLOCK);
    be32(hdr + 24, op->flush ? 0 : op->n * STAMP_BLOCK);
    if (op->flush)
        return wln_send(fd, hdr, 28);
    if (wl_stamp(w, op, buf + 28))
        return -ENOMEM;
    return wln_send(fd, hdr, 28 + (size_t)op->n * STAMP_BLOCK);
}

/* The client loop: keep up to qd requests in flight until wl_pick stops, then reap the rest. */
static int wln_client(struct wl *w, int fd, int qd, uint64_t seed, char *err, size_t errlen)
{
    struct wl_op ops[WLN_QD_MAX];
    bool used[WLN_QD_MAX] = {false};
    size_t bsz = 28 + (size_t)WL_MAX_BLOCKS * STAMP_BLOCK;
    uint8_t *buf = malloc(bsz);
    if (!buf)
        return -ENOMEM;
    uint64_t rng = seed * 64 + 33;
    int inflight = 0, r = 0;
    bool more = true;
    while (r == 0) {
        while (more && inflight < qd) {
            uint32_t slot = 0;
            while (used[slot])
                slot++;
            if (!(more = wl_pick(w, &rng, &ops[slot])))
                break;
            if ((r = wln_request(fd, w, &ops[slot], slot, buf)) != 0)
                break;
            used[slot] = true;
            inflight++;
        }
        if (r || inflight == 0)
            break;
        uint8_t rep[16];
        if ((r = wln_recv(fd, rep, 16)) != 0)
            break;
        uint64_t slot = rd_be(rep + 8, 8);
        if (rd_be(rep, 4) != NBD_SIMPLE_MAGIC || slot >= (uint64_t)qd || !used[slot]) {
            r = -EPROTO;
            break;
        }
        uint32_t e = (uint32_t)rd_be(rep + 4, 4);
        wl_done(w, &ops[slot], e ? -(int)e : 0); /* NBD error numbers are errno values */
        used[slot] = false;
        inflight--;
    }
    if (r)
        rk_set_err(err, errlen, "nbd: connection failed with %d requests in flight", inflight);
    free(buf);
    return r;
}

static void *wln_server_thread(void *arg)
{
    rk_nbd_server_run(arg);
    return NULL;
}

int wl_run_nbd(struct wl *w, struct rk_dev *dev, int qd, uint64_t seed, char *err, size_t errlen)
{
    if (qd < 1 || qd > WLN_QD_MAX)
        return -EINVAL;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
        rk_set_err(err, errlen, "socketpair: %s", strerror(errno));
        return -errno;
    }
    struct rk_nbd_opts o = {
        .source = RK_NBD_SOURCE_CONN_FD,
        .fd = sv[1],
        .export_name = "",
        .threads = 4,
        /* the accept loop polls every quarter of this: the end of the one connection is seen
         * within 50 ms instead of 1 s (the handshake is in-process, instant) */
        .handshake_ms = 200};
    struct rk_nbd_server *srv;
    int r = rk_nbd_server_create(dev, &o, &srv, err, errlen);
    if (r) {
        close(sv[0]);
        return r;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, wln_server_thread, srv)) {
        rk_nbd_server_destroy(srv);
        close(sv[0]);
        rk_set_err(err, errlen, "cannot start the server thread");
        return -EAGAIN;
    }
    r = wln_handshake(sv[0], dev->size, err, errlen);
    if (r == 0)
        r = wln_client(w, sv[0], qd, seed, err, errlen);
    if (r)
        atomic_store(&w->stop, true);
    uint8_t disc[28] = {0};
    be32(disc, NBD_REQUEST_MAGIC);
    be16(disc + 6, NBD_CMD_DISC);
    wln_send(sv[0], disc, sizeof(disc));
    shutdown(sv[0], SHUT_WR);
    uint8_t sink[256];
    while (recv(sv[0], sink, sizeof(sink), 0) > 0) /* until the server closed its end */
        ;
    close(sv[0]);
    pthread_join(t, NULL);
    rk_nbd_server_destroy(srv);
    return r;
}
