/* NBD server lifecycle: listen on a unix or TCP socket, one reader thread per connection
 * (handshake.c, then transmit.c), the worker pool of pool.c running transmit.c's requests, and
 * a clean stop that answers everything already read. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/unixsock.h"
#include "core/util.h"
#include "nbd/nbd_int.h"
#include "nbd/proto.h"
#include "nbd/tls.h"
#include "nbd/wire.h"

#define NBD_DEFAULT_THREADS     32
#define NBD_DEFAULT_MAX_REQUEST (32u * 1024 * 1024)
#define NBD_MAX_REQUEST_LIMIT   (1u << 30)

/* ---- connections ---- */

static void *nbd_conn_thread(void *arg)
{
    struct nbd_conn *c = arg;
    if (nbd_handshake(c) == 0)
        nbd_conn_serve(c);
    /* The fd stays open until the accept loop joins us, so a concurrent shutdown() from
     * rk_nbd_server_run never hits a reused descriptor. */
    shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_lock(&c->srv->conn_lock);
    c->finished = true;
    pthread_mutex_unlock(&c->srv->conn_lock);
    return NULL;
}

/* Free a connection whose thread has been joined (no request is outstanding). */
static void nbd_conn_free(struct nbd_conn *c)
{
    while (c->free_reqs) {
        struct nbd_req *r = c->free_reqs;
        c->free_reqs = r->next;
        free(r->buf);
        free(r);
    }
    pthread_mutex_destroy(&c->send_lock);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    nbd_wire_close(c->fd); /* ends a TLS session (wire.h) before the fd number is reused */
    close(c->fd);
    free(c);
}

/* Join and free finished connections; with all=true wait for every connection. */
static void nbd_reap(struct rk_nbd_server *srv, bool all)
{
    pthread_mutex_lock(&srv->conn_lock);
    struct nbd_conn **pp = &srv->conns;
    while (*pp) {
        struct nbd_conn *c = *pp;
        if (!all && !c->finished) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        pthread_mutex_unlock(&srv->conn_lock);
        pthread_join(c->thread, NULL);
        nbd_conn_free(c);
        pthread_mutex_lock(&srv->conn_lock);
        pp = &srv->conns;
    }
    pthread_mutex_unlock(&srv->conn_lock);
}

static void nbd_accept_one(struct rk_nbd_server *srv)
{
    int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
            usleep(10000); /* back off instead of spinning on a full fd table */
        return;
    }
    if (!srv->unix_path) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    struct nbd_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    c->srv = srv;
    c->fd = fd;
    pthread_mutex_init(&c->send_lock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    if (pthread_create(&c->thread, NULL, nbd_conn_thread, c)) {
        rk_warn("nbd: cannot start a connection thread");
        nbd_conn_free(c);
        return;
    }
    pthread_mutex_lock(&srv->conn_lock);
    c->next = srv->conns;
    srv->conns = c;
    pthread_mutex_unlock(&srv->conn_lock);
}

/* ---- listening socket ---- */

static int nbd_listen_unix(struct rk_nbd_server *srv, const struct rk_nbd_opts *o, const char *path,
                           char *err, size_t errlen)
{
    /* Live-socket protection and the mode/owner set atomically: core/unixsock.h. */
    struct rk_unix_perm perm = {.mode = o->socket_mode ? o->socket_mode : 0600,
                                .uid = o->socket_uid_set ? o->socket_uid : (uid_t)-1,
                                .gid = o->socket_gid_set ? o->socket_gid : (gid_t)-1};
    int fd, r = rk_unix_listen(path, &perm, 128, "NBD socket", &fd, err, errlen);
    if (r)
        return r;
    srv->unix_path = strdup(path);
    if (!srv->unix_path) {
        unlink(path);
        close(fd);
        return -ENOMEM;
    }
    srv->listen_fd = fd;
    return 0;
}

static int nbd_listen_tcp(struct rk_nbd_server *srv, const char *spec, char *err, size_t errlen)
{
    char host[256] = "127.0.0.1";
    const char *port = spec;
    const char *colon = strrchr(spec, ':');
    if (colon) {
        const char *h = spec;
        size_t hl = (size_t)(colon - spec);
        if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') { /* [v6addr]:port */
            h++;
            hl -= 2;
        }
        if (hl == 0 || hl >= sizeof(host)) {
            rk_set_err(err, errlen, "bad tcp listen address '%s'", spec);
            return -EINVAL;
        }
        memcpy(host, h, hl);
        host[hl] = '\0';
        port = colon + 1;
    }
    uint64_t pn;
    if (rk_parse_u64(port, &pn) || pn > 65535) {
        rk_set_err(err, errlen, "bad tcp port in '%s'", spec);
        return -EINVAL;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g) {
        rk_set_err(err, errlen, "cannot resolve %s: %s", host, gai_strerror(g));
        return -EINVAL;
    }
    int e = EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) {
            srv->listen_fd = fd;
            freeaddrinfo(res);
            return 0;
        }
        e = errno;
        close(fd);
    }
    freeaddrinfo(res);
    rk_set_err(err, errlen, "cannot listen on tcp:%s: %s", spec, strerror(e));
    return -e;
}

/* ---- public API ---- */

int rk_nbd_server_create(struct rk_dev *dev, const struct rk_nbd_opts *opts,
                         struct rk_nbd_server **out, char *err, size_t errlen)
{
    int r = -ENOMEM;
    struct rk_nbd_server *srv = calloc(1, sizeof(*srv));
    if (!srv) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    srv->listen_fd = -1;
    srv->stop_fd = -1;
    pthread_mutex_init(&srv->q_lock, NULL);
    pthread_cond_init(&srv->q_cond, NULL);
    pthread_mutex_init(&srv->conn_lock, NULL);
    if (!dev || !opts || !opts->listen) {
        rk_set_err(err, errlen, "no device or listen address");
        r = -EINVAL;
        goto out;
    }
    srv->dev = dev;
    srv->read_only = opts->read_only;
    srv->nthreads = opts->threads > 0 ? opts->threads : NBD_DEFAULT_THREADS;
    srv->max_request = opts->max_request ? opts->max_request : NBD_DEFAULT_MAX_REQUEST;
    /* Keeps 8 + length of a structured OFFSET_DATA chunk within its 32-bit length field. */
    if (srv->max_request > NBD_MAX_REQUEST_LIMIT)
        srv->max_request = NBD_MAX_REQUEST_LIMIT;
    if (srv->max_request < dev->block_size) {
        rk_set_err(err, errlen, "max request %u is below the block size %u", srv->max_request,
                   dev->block_size);
        r = -EINVAL;
        goto out;
    }
    /* Preferred block size: a power of two, >= 4096 and the block size, <= the max request. */
    uint32_t want = dev->opt_io_size > 4096 ? dev->opt_io_size : 4096;
    uint32_t pref = dev->block_size;
    while (pref * 2ull <= want && pref * 2ull <= srv->max_request)
        pref *= 2;
    srv->pref_block = pref;
    srv->tflags = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA |
                  NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES | NBD_FLAG_CAN_MULTI_CONN;
    srv->tflags |= NBD_FLAG_SEND_CACHE | NBD_FLAG_SEND_FAST_ZERO; /* block_status.c, transmit.c */
    if (srv->read_only)
        srv->tflags |= NBD_FLAG_READ_ONLY;
    const char *inl = getenv("RAIDKIT_NBD_INLINE");
    srv->inline_ok = !(inl && !strcmp(inl, "0"));
    srv->export_name = strdup(opts->export_name ? opts->export_name : "");
    srv->description = opts->description ? strdup(opts->description) : NULL;
    if (!srv->export_name || (opts->description && !srv->description)) {
        rk_set_err(err, errlen, "out of memory");
        goto out;
    }
    srv->tls_mode = opts->tls;
    if ((r = nbd_tls_create(opts, &srv->tls, err, errlen)))
        goto out;
    srv->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (srv->stop_fd < 0) {
        r = -errno;
        rk_set_err(err, errlen, "eventfd: %s", strerror(-r));
        goto out;
    }
    const char *l = opts->listen;
    if (!strncmp(l, "tcp:", 4))
        r = nbd_listen_tcp(srv, l + 4, err, errlen);
    else
        r = nbd_listen_unix(srv, opts, strncmp(l, "unix:", 5) ? l : l + 5, err, errlen);
out:
    if (r) {
        rk_nbd_server_destroy(srv);
        return r;
    }
    *out = srv;
    return 0;
}

int rk_nbd_server_run(struct rk_nbd_server *srv)
{
    int r = nbd_pool_start(srv, nbd_req_execute);
    if (r == -ENOMEM)
        return r; /* nothing started; -EAGAIN (no worker) still takes the stop path below */

    while (r == 0) {
        struct pollfd p[2] = {{.fd = srv->listen_fd, .events = POLLIN},
                              {.fd = srv->stop_fd, .events = POLLIN}};
        int n = poll(p, 2, 1000);
        if (n < 0 && errno != EINTR) {
            r = -errno;
            break;
        }
        if (n > 0 && p[1].revents)
            break;
        if (n > 0 && p[0].revents)
            nbd_accept_one(srv);
        nbd_reap(srv, false);
    }

    /* Stop: no new connections, no new requests; everything already read is answered. */
    atomic_store(&srv->stopping, true);
    close(srv->listen_fd);
    srv->listen_fd = -1;
    pthread_mutex_lock(&srv->conn_lock);
    for (struct nbd_conn *c = srv->conns; c; c = c->next)
        shutdown(c->fd, SHUT_RD);
    pthread_mutex_unlock(&srv->conn_lock);
    nbd_reap(srv, true);

    nbd_pool_stop(srv);
    return r;
}

void rk_nbd_server_stop(struct rk_nbd_server *srv)
{
    uint64_t one = 1;
    ssize_t w = write(srv->stop_fd, &one, sizeof(one)); /* async-signal-safe */
    (void)w;
}

void rk_nbd_server_destroy(struct rk_nbd_server *srv)
{
    if (!srv)
        return;
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    if (srv->stop_fd >= 0)
        close(srv->stop_fd);
    if (srv->unix_path) {
        unlink(srv->unix_path);
        free(srv->unix_path);
    }
    free(srv->export_name);
    free(srv->description);
    nbd_tls_free(srv->tls);
    pthread_mutex_destroy(&srv->q_lock);
    pthread_cond_destroy(&srv->q_cond);
    pthread_mutex_destroy(&srv->conn_lock);
    free(srv);
}
