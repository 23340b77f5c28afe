/* NBD server lifecycle: listen on a unix or TCP socket, one reader thread per connection
 * (handshake.c, then transmit.c), the worker pool of pool.c running transmit.c's requests, and
 * a clean stop that answers everything already read. */
#include <errno.h>
#include <inttypes.h>
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
#define NBD_DEFAULT_MAX_CONNS   256
#define NBD_DEFAULT_HANDSHAKE   10000 /* ms */
/* At stop, connections get this long to send their last replies before they are cut. */
#define NBD_STOP_GRACE_NS (5ull * 1000000000)

/* ---- refusals: counted per cause, logged when an episode starts and when it ends ---- */

enum {
    NBD_REFUSE_LIMIT,
    NBD_REFUSE_FDS,
    NBD_REFUSE_THREAD,
    NBD_REFUSE_HANDSHAKE,
    NBD_REFUSE_IDLE,
    NBD_REFUSE_N
};
static const char *const nbd_refuse_what[NBD_REFUSE_N] = {
    "connections refused: connection limit (--max-connections) reached",
    "connections refused: out of file descriptors or memory",
    "connections refused: cannot start a thread",
    "connections closed: handshake not finished in time (--handshake-timeout)",
    "connections closed: idle (--idle-timeout)",
};

/* Count one refusal of cause; the first of an episode is logged. */
static void nbd_refuse(struct rk_nbd_server *srv, int cause)
{
    if (srv->refused[cause]++ == 0)
        rk_warn("nbd: %s (further ones are counted, not logged)", nbd_refuse_what[cause]);
}

/* End the episodes of causes that saw nothing new since the last call (one log line each). */
static void nbd_refuse_tick(struct rk_nbd_server *srv, uint64_t *last)
{
    for (int i = 0; i < NBD_REFUSE_N; i++) {
        if (srv->refused[i] && srv->refused[i] == last[i]) {
            if (srv->refused[i] > 1)
                rk_info("nbd: %" PRIu64 " %s", srv->refused[i], nbd_refuse_what[i]);
            srv->refused[i] = 0;
        }
        last[i] = srv->refused[i];
    }
}

/* ---- connections ---- */

static void *nbd_conn_thread(void *arg)
{
    struct nbd_conn *c = arg;
    if (nbd_handshake(c) == 0)
        nbd_conn_serve(c);
    atomic_store(&c->phase, NBD_PHASE_DONE);
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
    nbd_conn_free_reqs(c);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    nbd_wire_close(c->fd); /* ends a TLS session (wire.h) before the fd number is reused */
    pthread_cond_destroy(&c->wcond);
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
        srv->nconns--;
        pthread_mutex_unlock(&srv->conn_lock);
        pthread_join(c->thread, NULL);
        nbd_conn_free(c);
        pthread_mutex_lock(&srv->conn_lock);
        pp = &srv->conns;
    }
    pthread_mutex_unlock(&srv->conn_lock);
}

static void nbd_conn_start(struct rk_nbd_server *srv, int fd);

static void nbd_accept_one(struct rk_nbd_server *srv)
{
    int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
            nbd_refuse(srv, NBD_REFUSE_FDS);
            usleep(10000); /* back off instead of spinning on a full fd table */
        }
        return;
    }
    pthread_mutex_lock(&srv->conn_lock);
    bool full = srv->nconns >= srv->max_conns;
    pthread_mutex_unlock(&srv->conn_lock);
    if (full) {
        /* Accept and close at once: the client sees EOF instead of hanging in the backlog. */
        nbd_refuse(srv, NBD_REFUSE_LIMIT);
        close(fd);
        return;
    }
    nbd_conn_start(srv, fd);
}

/* Send buffer asked for on every connection, in bytes (the kernel doubles it and caps it at
 * net.core.wmem_max), from RAIDKIT_NBD_SNDBUF=N (at most 64 MiB): so that a 1 MiB read reply
 * can go on the socket whole instead of draining through the 208 KiB default. Unset or 0: the
 * kernel's default (bench/RESULTS.md "NBD under contention": not measured faster yet). */
static int nbd_sndbuf_bytes(void)
{
    const char *e = getenv("RAIDKIT_NBD_SNDBUF");
    if (!e || !*e)
        return 0;
    long v = strtol(e, NULL, 10);
    return v < 0 ? 0 : v > (64L << 20) ? 64 << 20 : (int)v;
}

/* Start the reader thread of the connected socket fd (owned from here on). */
static void nbd_conn_start(struct rk_nbd_server *srv, int fd)
{
    if (!srv->unix_path) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    int sndbuf = nbd_sndbuf_bytes();
    if (sndbuf > 0) /* best effort: the default buffer still works */
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    struct nbd_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        nbd_refuse(srv, NBD_REFUSE_FDS);
        close(fd);
        return;
    }
    c->srv = srv;
    c->fd = fd;
    c->accepted_ns = nbd_now_ns();
    atomic_store(&c->active_ns, c->accepted_ns);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    pthread_cond_init(&c->wcond, NULL);
    /* Listed before the thread starts: the count and the watchdog see it at once. */
    pthread_mutex_lock(&srv->conn_lock);
    if (pthread_create(&c->thread, NULL, nbd_conn_thread, c)) {
        pthread_mutex_unlock(&srv->conn_lock);
        nbd_refuse(srv, NBD_REFUSE_THREAD);
        nbd_conn_free(c);
        return;
    }
    c->next = srv->conns;
    srv->conns = c;
    srv->nconns++;
    pthread_mutex_unlock(&srv->conn_lock);
}

/* Is c idle past the idle timeout: nothing received or sent and nothing running? */
static bool nbd_conn_idle(struct nbd_conn *c, uint64_t now)
{
    struct rk_nbd_server *srv = c->srv;
    if (!srv->idle_timeout_ns || now - atomic_load(&c->active_ns) < srv->idle_timeout_ns)
        return false;
    pthread_mutex_lock(&c->lock);
    bool idle = c->executing == 0;
    pthread_mutex_unlock(&c->lock);
    return idle;
}

/* The accept loop's watchdog: cut connections past the handshake or idle timeout (shutdown;
 * their threads then end and are reaped), and trim the heap after freed bursts. */
static void nbd_watchdog(struct rk_nbd_server *srv)
{
    uint64_t now = nbd_now_ns();
    pthread_mutex_lock(&srv->conn_lock);
    for (struct nbd_conn *c = srv->conns; c; c = c->next) {
        if (c->killed)
            continue;
        nbd_conn_trim_idle(c, now);
        int phase = atomic_load(&c->phase);
        int cause = -1;
        if (phase == NBD_PHASE_HANDSHAKE && srv->hs_timeout_ns &&
            now - c->accepted_ns >= srv->hs_timeout_ns)
            cause = NBD_REFUSE_HANDSHAKE;
        else if (phase == NBD_PHASE_TRANSMIT && nbd_conn_idle(c, now))
            cause = NBD_REFUSE_IDLE;
        if (cause >= 0) {
            nbd_conn_cut(c);
            c->killed = true;
            nbd_refuse(srv, cause);
        }
    }
    pthread_mutex_unlock(&srv->conn_lock);
    if (atomic_exchange_explicit(&srv->trim_wanted, false, memory_order_relaxed))
        nbd_mem_trim();
}

/* Poll period of the accept loop (ms): a quarter of the shortest timeout, 50..1000. */
static int nbd_tick_ms(const struct rk_nbd_server *srv)
{
    uint64_t t = 1000;
    if (srv->hs_timeout_ns && srv->hs_timeout_ns / 4000000 < t)
        t = srv->hs_timeout_ns / 4000000;
    if (srv->idle_timeout_ns && srv->idle_timeout_ns / 4000000 < t)
        t = srv->idle_timeout_ns / 4000000;
    return t < 50 ? 50 : (int)t;
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

int rk_nbd_listen(const char *listen, const struct rk_nbd_opts *perm, int *fd, char *err,
                  size_t errlen)
{
    struct rk_nbd_server tmp = {.listen_fd = -1};
    const struct rk_nbd_opts none = {0};
    int r;
    if (!listen)
        return -EINVAL;
    if (!strncmp(listen, "tcp:", 4))
        r = nbd_listen_tcp(&tmp, listen + 4, err, errlen);
    else
        r = nbd_listen_unix(&tmp, perm ? perm : &none,
                            strncmp(listen, "unix:", 5) ? listen : listen + 5, err, errlen);
    free(tmp.unix_path); /* the caller names the file again in rk_nbd_opts.listen */
    if (!r)
        *fd = tmp.listen_fd;
    return r;
}

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
    srv->single_fd = -1;
    if (opts && opts->source == RK_NBD_SOURCE_LISTEN_FD)
        srv->listen_fd = opts->fd;
    if (opts && opts->source == RK_NBD_SOURCE_CONN_FD)
        srv->single_fd = opts->fd;
    pthread_mutex_init(&srv->q_lock, NULL);
    pthread_cond_init(&srv->q_cond, NULL);
    pthread_mutex_init(&srv->conn_lock, NULL);
    pthread_mutex_init(&srv->drain_lock, NULL);
    pthread_cond_init(&srv->drain_cond, NULL);
    if (!dev || !opts || (!opts->listen && opts->source == RK_NBD_SOURCE_LISTEN)) {
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
    srv->max_conns = opts->max_connections > 0 ? opts->max_connections : NBD_DEFAULT_MAX_CONNS;
    srv->max_memory = opts->max_memory ? opts->max_memory : NBD_DEFAULT_MAX_MEMORY;
    if (srv->max_memory < 2ull * srv->max_request) {
        rk_set_err(err, errlen, "request memory cap %" PRIu64 " is below twice the max request %u",
                   srv->max_memory, srv->max_request);
        r = -EINVAL;
        goto out;
    }
    /* One connection: 64 MiB, at least two of the largest requests, never above the total. */
    srv->conn_memory =
        NBD_CONN_MEMORY > 2ull * srv->max_request ? NBD_CONN_MEMORY : 2ull * srv->max_request;
    if (srv->conn_memory > srv->max_memory)
        srv->conn_memory = srv->max_memory;
    srv->hs_timeout_ns =
        (uint64_t)(opts->handshake_ms ? opts->handshake_ms : NBD_DEFAULT_HANDSHAKE) * 1000000;
    srv->idle_timeout_ns = (uint64_t)opts->idle_timeout_ms * 1000000;
    /* Preferred block size: a power of two, >= 4096 and the block size, <= the max request. */
    uint32_t want = dev->opt_io_size > 4096 ? dev->opt_io_size : 4096;
    uint32_t pref = dev->block_size;
    while (pref * 2ull <= want && pref * 2ull <= srv->max_request)
        pref *= 2;
    srv->pref_block = pref;
    /* A read-only export advertises no command that changes data (TRIM and WRITE_ZEROES are
     * refused with EPERM all the same, NBD protocol "Request types"). */
    srv->tflags =
        NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA | NBD_FLAG_CAN_MULTI_CONN;
    srv->tflags |= NBD_FLAG_SEND_CACHE; /* transmit.c: advisory, succeeds */
    if (srv->read_only)
        srv->tflags |= NBD_FLAG_READ_ONLY;
    else
        srv->tflags |= NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES | NBD_FLAG_SEND_FAST_ZERO;
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
    if (opts->source != RK_NBD_SOURCE_LISTEN) {
        r = 0;
        if (l && !strncmp(l, "unix:", 5) && !(srv->unix_path = strdup(l + 5)))
            r = -ENOMEM;
    } else if (!strncmp(l, "tcp:", 4))
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

/* Stop: no new connections, no new requests; everything already read is answered, within
 * NBD_STOP_GRACE_NS for peers that do not read their replies (then they are cut). */
static void nbd_stop_all(struct rk_nbd_server *srv)
{
    atomic_store(&srv->stopping, true);
    pthread_mutex_lock(&srv->drain_lock);
    pthread_cond_broadcast(&srv->drain_cond);
    pthread_mutex_unlock(&srv->drain_lock);
    close(srv->listen_fd);
    srv->listen_fd = -1;
    uint64_t deadline = nbd_now_ns() + NBD_STOP_GRACE_NS;
    bool cut = false;
    for (int how = SHUT_RD;; usleep(20000)) {
        pthread_mutex_lock(&srv->conn_lock);
        bool left = srv->conns != NULL;
        for (struct nbd_conn *c = srv->conns; c && how >= 0; c = c->next) {
            if (how == SHUT_RD)
                shutdown(c->fd, SHUT_RD);
            else
                nbd_conn_cut(c);
        }
        pthread_mutex_unlock(&srv->conn_lock);
        how = -1;
        if (!left)
            break;
        nbd_reap(srv, false);
        if (!cut && nbd_now_ns() > deadline) {
            how = SHUT_RDWR;
            cut = true;
        }
    }
}

int rk_nbd_server_run(struct rk_nbd_server *srv)
{
    int r = nbd_pool_start(srv, nbd_req_execute);
    if (r == -ENOMEM)
        return r; /* nothing started; -EAGAIN (no worker) still takes the stop path below */
    bool single = srv->single_fd >= 0;
    if (single && r == 0) {
        nbd_conn_start(srv, srv->single_fd);
        srv->single_fd = -1;
    }

    uint64_t last[NBD_REFUSE_N] = {0};
    uint64_t next_tick = 0;
    int tick = nbd_tick_ms(srv);
    while (r == 0) {
        struct pollfd p[2] = {{.fd = srv->listen_fd, .events = POLLIN},
                              {.fd = srv->stop_fd, .events = POLLIN}};
        int n = poll(p, 2, tick);
        if (n < 0 && errno != EINTR) {
            r = -errno;
            break;
        }
        if (n > 0 && p[1].revents)
            break;
        if (n > 0 && p[0].revents)
            nbd_accept_one(srv);
        nbd_reap(srv, false);
        pthread_mutex_lock(&srv->conn_lock);
        bool done = single && !srv->conns; /* --single: the one connection ended */
        pthread_mutex_unlock(&srv->conn_lock);
        if (done)
            break;
        uint64_t now = nbd_now_ns();
        if (now >= next_tick) {
            nbd_watchdog(srv);
            nbd_refuse_tick(srv, last);
            next_tick = now + (uint64_t)tick * 1000000;
        }
    }
    nbd_stop_all(srv);
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
    if (srv->single_fd >= 0)
        close(srv->single_fd);
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
    pthread_mutex_destroy(&srv->drain_lock);
    pthread_cond_destroy(&srv->drain_cond);
    free(srv);
}
