/* Internal state of the NBD server shared by its files. Calls go one way:
 *   server.c (listen, accept, lifecycle) -> handshake.c, transmit.c, pool.c
 *   handshake.c (option haggling)        -> wire.c
 *   transmit.c (requests and replies)    -> wire.c, pool.c
 *   pool.c (worker pool, service clock)  -> nothing: it runs requests through srv->pool_run
 *   wire.c (socket helpers, wire.h)      -> nothing */
#ifndef RK_NBD_INT_H
#define RK_NBD_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidkit/device.h"
#include "raidkit/nbd.h"

/* Largest option payload we read during the handshake; bigger ones are drained and refused
 * with NBD_REP_ERR_TOO_BIG, and beyond NBD_OPT_DRAIN_MAX the connection is dropped. */
#define NBD_OPT_MAX       (64u * 1024)
#define NBD_OPT_DRAIN_MAX (16u * 1024 * 1024)
/* A WRITE whose payload exceeds max_request is drained and failed with EINVAL up to this size;
 * larger ones are treated as a denial of service and the connection is dropped. */
#define NBD_WRITE_DRAIN_MAX (64u * 1024 * 1024)
/* Per-connection bounds on requests in flight (back-pressure for the reader). */
#define NBD_CONN_MAX_REQS  128
#define NBD_CONN_MAX_BYTES (256ull * 1024 * 1024)
/* Request buffers start at this capacity so small I/O sizes never reallocate; buffers that grew
 * beyond NBD_BUF_KEEP are given back when their request completes. */
#define NBD_BUF_MIN  (128u * 1024)
#define NBD_BUF_KEEP (8u * 1024 * 1024)

struct nbd_conn;

/* One request in flight; reused through the connection's free list (no malloc per request). */
struct nbd_req {
    struct nbd_conn *conn;
    struct nbd_req *next; /* free list or pool queue link */
    uint64_t handle;      /* opaque cookie echoed in the reply */
    uint64_t off;
    uint32_t len;
    uint16_t type; /* NBD_CMD_* */
    uint16_t flags;
    void *buf; /* rk_buf_alloc'ed (4096-aligned for O_DIRECT members), cap bytes */
    size_t cap;
};

/* One client connection, owned by its reader thread; freed by the accept loop after join. */
struct nbd_conn {
    struct rk_nbd_server *srv;
    int fd;
    pthread_t thread;
    struct nbd_conn *next; /* srv->conns list, under srv->conn_lock */
    bool finished;         /* reader thread is done; under srv->conn_lock */
    bool structured;       /* NBD_OPT_STRUCTURED_REPLY negotiated */
    bool no_zeroes;        /* client set NBD_FLAG_C_NO_ZEROES */
    bool meta_alloc;       /* base:allocation selected (meta_context.c), id NBD_META_ID_ALLOC */

    /* Serialises whole replies on the socket; replies of different requests never interleave. */
    pthread_mutex_t send_lock;
    atomic_bool send_failed; /* a send failed: the peer is gone, later replies are dropped */

    /* lock protects the fields below it; cond signals a freed request (reader back-pressure and
     * the drain at DISC/close). */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct nbd_req *free_reqs;
    int nreqs;          /* allocated nbd_req structs */
    int outstanding;    /* requests handed to workers and not yet released */
    uint64_t bytes_out; /* buffer bytes of outstanding requests */
};

struct rk_nbd_server {
    struct rk_dev *dev;
    char *export_name; /* never NULL */
    char *description; /* may be NULL */
    bool read_only;
    int nthreads;
    uint32_t max_request;
    uint32_t pref_block; /* NBD_INFO_BLOCK_SIZE preferred */
    uint16_t tflags;     /* transmission flags sent to every client */

    int listen_fd;
    int stop_fd;     /* eventfd written by rk_nbd_server_stop */
    char *unix_path; /* socket file to unlink at destroy, NULL for TCP */

    /* Worker pool (pool.c): queue of requests ready to execute, run by pool_run (set by
     * nbd_pool_start). q_lock protects q_* and pool_stop. */
    void (*pool_run)(struct nbd_req *r);
    pthread_mutex_t q_lock;
    pthread_cond_t q_cond;
    struct nbd_req *q_head, *q_tail;
    int q_idle;   /* workers waiting on q_cond */
    int q_waking; /* signalled workers that have not yet woken (see nbd_pool_wake) */
    int fast_cap; /* running workers allowed while requests are fast: CPUs + 1 */
    /* Workers inside a reply send (possibly blocked by a client that does not read): they are
     * not running, so nbd_pool_wake does not count them against fast_cap. */
    atomic_int workers_sending;
    bool inline_ok; /* reader may run fast requests itself; env RAIDKIT_NBD_INLINE=0 turns
                     * this off so tests can force every request through the pool */
    /* Moving mean of request service time (execute + reply), updated by whoever runs a request;
     * relaxed and racy on purpose: it only steers nbd_pool_wake and inline execution. */
    _Atomic int64_t svc_ewma_ns;
    bool pool_stop;
    pthread_t *workers;
    int nworkers;

    /* Connections. conn_lock protects conns, and each conn's finished flag. */
    pthread_mutex_t conn_lock;
    struct nbd_conn *conns;
    atomic_bool stopping; /* stop requested: handshakes refuse, readers stop reading */

    /* TLS (tls.c): RK_NBD_TLS_* and the credentials (NULL when off). A connection's transport
     * is plain or TLS by its fd (wire.h); nbd_wire_close(fd) must precede close(fd). */
    int tls_mode;
    struct nbd_tls *tls;
};

/* handshake.c: negotiate with a new client on c->fd (sets c->structured, c->no_zeroes).
 * 0 = enter transmission; <0 = close the connection (-errno of the socket, -EPROTO for a
 * protocol violation, -ECONNABORTED for NBD_OPT_ABORT, -ENOENT/-ESHUTDOWN/-E2BIG). */
int nbd_handshake(struct nbd_conn *c);

/* meta_context.c: answer NBD_OPT_LIST_META_CONTEXT / NBD_OPT_SET_META_CONTEXT (opt) with the
 * option payload data of len bytes ("Metadata querying"); sets c->meta_alloc for SET. 0 to go
 * on haggling, <0 on a socket error. */
int nbd_meta_option(struct nbd_conn *c, uint32_t opt, const uint8_t *data, uint32_t len);
/* The context id of base:allocation (the only context we offer). */
#define NBD_META_ID_ALLOC 1u

/* block_status.c: build the whole structured reply (header and one NBD_REPLY_TYPE_BLOCK_STATUS
 * chunk) to NBD_CMD_BLOCK_STATUS r (already validated: in range, len > 0, context selected)
 * into a malloc'ed *msg of *msg_len bytes (caller frees). At most NBD_BS_MAX_EXTENTS
 * descriptors, one with NBD_CMD_FLAG_REQ_ONE, never beyond r->len. 0 or -ENOMEM. */
int nbd_block_status_build(struct nbd_conn *c, const struct nbd_req *r, void **msg,
                           size_t *msg_len);
#define NBD_BS_MAX_EXTENTS 4096u

/* transmit.c: the reader loop of one connection in transmission phase; returns when the client
 * disconnects (every outstanding request has then finished and been answered). */
void nbd_conn_serve(struct nbd_conn *c);
/* transmit.c: run one request read by nbd_conn_serve, send its reply and give r back to its
 * connection's free list (r must not be used afterwards). The pool's run callback. */
void nbd_req_execute(struct nbd_req *r);

/* pool.c: start srv->nthreads workers that run queued requests with run(r). 0 when at least
 * one worker started; -ENOMEM (nothing started, nothing to stop); -EAGAIN when no thread
 * could be created (call nbd_pool_stop all the same). */
int nbd_pool_start(struct rk_nbd_server *srv, void (*run)(struct nbd_req *r));
/* pool.c: let the workers finish the queue, then join and free them. */
void nbd_pool_stop(struct rk_nbd_server *srv);
/* pool.c: queue r (owned by the pool until run) and wake a worker if one is needed. */
void nbd_pool_push(struct rk_nbd_server *srv, struct nbd_req *r);
/* pool.c: run r now in the calling thread through srv->pool_run, timing it (monotonic clock)
 * into srv->svc_ewma_ns like a worker does. */
void nbd_pool_run(struct rk_nbd_server *srv, struct nbd_req *r);
/* pool.c: true in worker pool threads. */
extern __thread bool nbd_in_worker;

#endif
