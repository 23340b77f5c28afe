/* Internal state of the NBD server shared by its files. Calls go one way:
 *   server.c (listen, accept, lifecycle) -> handshake.c, transmit.c, pool.c, reply.c
 *   handshake.c (option haggling)        -> wire.c
 *   transmit.c (requests, inline/pool)   -> reply.c, pool.c, wire.c
 *   reply.c (replies, writer, buffers)   -> wire.c, pool.c (nbd_now_ns)
 *   pool.c (worker pool, service clock)  -> nothing: it runs requests through srv->pool_run
 *   wire.c (socket helpers, wire.h)      -> nothing */
#ifndef RK_NBD_INT_H
#define RK_NBD_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "raidkit/device.h"
#include "raidkit/nbd.h"

/* Largest option payload we read during the handshake; bigger ones are drained and refused
 * with NBD_REP_ERR_TOO_BIG, and beyond NBD_OPT_DRAIN_MAX the connection is dropped. */
#define NBD_OPT_MAX       (64u * 1024)
#define NBD_OPT_DRAIN_MAX (16u * 1024 * 1024)
/* A WRITE whose payload exceeds max_request is drained and failed with EINVAL up to this size;
 * larger ones are treated as a denial of service and the connection is dropped. */
#define NBD_WRITE_DRAIN_MAX (64u * 1024 * 1024)
/* Per-connection bound on request structs (back-pressure for the reader). */
#define NBD_CONN_MAX_REQS 128
/* Request buffers start at this capacity so small I/O sizes never reallocate; buffers that grew
 * beyond NBD_BUF_KEEP are given back when their request completes, and once a connection has
 * had nothing outstanding for NBD_IDLE_TRIM_NS its free list keeps at most NBD_IDLE_KEEP bytes
 * of buffers (the accept loop's watchdog trims it, then the heap). */
#define NBD_BUF_MIN      (128u * 1024)
#define NBD_BUF_KEEP     (8u * 1024 * 1024)
#define NBD_IDLE_KEEP    (4u * 1024 * 1024)
#define NBD_IDLE_TRIM_NS (1000000000ull)
/* Default request-buffer memory: summed over every connection (rk_nbd_opts.max_memory), and the
 * most one connection may hold (at least twice the largest request). */
#define NBD_DEFAULT_MAX_MEMORY (1024ull * 1024 * 1024)
#define NBD_CONN_MEMORY        (64ull * 1024 * 1024)

struct nbd_conn;

/* One request in flight; reused through the connection's free list (no malloc per request).
 * After it ran it carries its reply (hdr + iov) until the reply is sent. */
struct nbd_req {
    struct nbd_conn *conn;
    struct nbd_req *next; /* free list, pool queue or reply queue link */
    uint64_t handle;      /* opaque cookie echoed in the reply */
    uint64_t off;
    uint32_t len;
    uint16_t type; /* NBD_CMD_* */
    uint16_t flags;
    void *buf; /* rk_buf_alloc'ed (4096-aligned for O_DIRECT members), cap bytes */
    size_t cap;
    /* The reply: header bytes, the iovecs (header, data), bytes already sent. */
    uint8_t hdr[32];
    struct iovec iov[2];
    size_t sent;
    /* A reply built whole by the command (BLOCK_STATUS, malloc'ed, extra_len bytes): sent instead
     * of hdr when the command succeeded; freed when the request returns to the free list. */
    void *extra;
    size_t extra_len;
};

/* Where a connection is in its life (nbd_conn.phase). */
enum { NBD_PHASE_HANDSHAKE, NBD_PHASE_TRANSMIT, NBD_PHASE_DONE };

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

    /* Watchdog (server.c, accept loop): phase, accept time and last request/reply time, all in
     * monotonic nanoseconds; killed once the watchdog shut the socket down. */
    atomic_int phase;
    uint64_t accepted_ns;
    _Atomic uint64_t active_ns;
    bool killed; /* accept loop only */

    /* lock protects the fields below it; cond signals a freed request (reader back-pressure and
     * the drain at DISC/close) and wcond wakes the writer. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_cond_t wcond;
    struct nbd_req *free_reqs;
    int nreqs;       /* allocated nbd_req structs */
    int outstanding; /* requests taken by the reader and not yet released (reply sent) */
    int executing;   /* requests taken and not yet run (the connection-end drain waits) */
    uint64_t mem;    /* buffer capacity held by this connection (free list and in flight) */
    /* Reply queue: replies that could not go out at once, sent in order by the writer thread.
     * sending: one thread owns the socket's send side. tls_pending: TLS records of replies sent
     * inline wait in the transport for the writer's nbd_wire_flush (the peer's window was full). */
    struct nbd_req *rq_head, *rq_tail;
    bool sending;
    bool tls_pending;
    bool writer_stop;
    bool send_failed; /* a send failed: the peer is gone, later replies are dropped */
    bool writer_started;
    pthread_t writer;

    /* Inline or pool (transmit.c): sampled moving means of this connection's execution CPU time
     * (ns) and, per direction ([0] READ, [1] WRITE), of the share of requests that blocked (per
     * mille); relaxed, racy on purpose. */
    atomic_uint nexec;
    _Atomic int64_t cpu_ewma_ns;
    atomic_int block_ewma[2];
    /* Connection end (see docs/ARCHITECTURE.md "Connection end"): under srv->drain_lock. */
    int end_state; /* 0 serving, 1 ending (counted in srv->ndraining), 2 drained */

    /* The reader's own state (transmit.c; no lock): its receive buffer (NBD_RBUF_SIZE bytes,
     * bytes rpos..rend not yet parsed) and the replies of the requests it ran inline, built and
     * deferred until nbd_reply_flush sends them together (bq_n of them, still counted as
     * executing). */
    uint8_t *rbuf;
    size_t rpos, rend;
    bool rfull;  /* the last receive filled the buffer: more may wait in the socket */
    bool rlarge; /* the last request was a large WRITE: receive the next header alone */
    struct nbd_req *bq_head, *bq_tail;
    int bq_n;
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

    /* Limits (rk_nbd_opts): connections, request-buffer memory (all connections, one
     * connection), handshake and idle timeouts (ns, 0 = none). */
    int max_conns;
    uint64_t max_memory;
    uint64_t conn_memory;
    _Atomic uint64_t mem_used; /* sum of every connection's mem */
    uint64_t hs_timeout_ns;
    uint64_t idle_timeout_ns;
    atomic_bool trim_wanted; /* buffers were freed: the accept loop trims the heap */
    /* Refusals and timeouts by cause (server.c): counted, logged once per episode. */
    uint64_t refused[8];

    int listen_fd;
    int stop_fd;     /* eventfd written by rk_nbd_server_stop */
    char *unix_path; /* socket file to unlink at destroy, NULL for TCP */
    int single_fd;   /* RK_NBD_SOURCE_CONN_FD: the one connection until run() starts it, or -1 */

    /* Worker pool (pool.c): queue of requests ready to execute, run by pool_run (set by
     * nbd_pool_start). q_lock protects q_* and pool_stop. */
    void (*pool_run)(struct nbd_req *r);
    pthread_mutex_t q_lock;
    pthread_cond_t q_cond;
    struct nbd_req *q_head, *q_tail;
    int q_idle;     /* workers waiting on q_cond */
    int q_waking;   /* signalled workers that have not yet woken (see nbd_pool_wake) */
    int fast_cap;   /* running workers allowed while requests are fast: CPUs + 1 */
    bool inline_ok; /* reader may run cheap requests itself; env RAIDKIT_NBD_INLINE=0 turns
                     * this off so tests can force every request through the pool */
    /* Moving mean of request run time (execute + non-blocking reply), updated by the workers;
     * relaxed and racy on purpose: it only steers nbd_pool_wake. */
    _Atomic int64_t svc_ewma_ns;
    bool pool_stop;
    pthread_t *workers;
    int nworkers;

    /* Connections. conn_lock protects conns, nconns and each conn's finished flag. */
    pthread_mutex_t conn_lock;
    struct nbd_conn *conns;
    int nconns;
    atomic_bool stopping; /* stop requested: handshakes refuse, readers stop reading */

    /* TLS (tls.c): RK_NBD_TLS_* and the credentials (NULL when off). A connection's transport
     * is plain or TLS by its fd (wire.h); nbd_wire_close(fd) must precede close(fd). */
    int tls_mode;
    struct nbd_tls *tls;
    /* Connection end: connections ending with requests not yet run; requests read afterwards
     * on other connections wait on drain_cond until it is 0. */
    pthread_mutex_t drain_lock;
    pthread_cond_t drain_cond;
    atomic_int ndraining;
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
/* transmit.c: run one request read by nbd_conn_serve and hand its reply to the connection's
 * send path (non-blocking; the writer thread sends what would block); r goes back to the free
 * list once its reply is out (r must not be used afterwards). The pool's run callback. */
void nbd_req_execute(struct nbd_req *r);
/* reply.c: start c's writer thread (before transmission). 0 or -errno of pthread_create. */
int nbd_writer_start(struct nbd_conn *c);
/* reply.c: let the writer send what is queued, then join it (no-op if never started). */
void nbd_writer_stop(struct nbd_conn *c);
/* reply.c: take a free request (a new one while fewer than NBD_CONN_MAX_REQS exist) with a
 * buffer of at least len bytes (len 0: no buffer needed), counted as outstanding and executing.
 * Waits while the connection is at a bound: NBD_CONN_MAX_REQS, srv->conn_memory of buffers or
 * srv->max_memory over all connections (after sending the reader's batched replies, which free
 * requests: only c's reader calls this). The buffer is rk_buf_alloc'ed (4096-aligned, at least
 * NBD_BUF_MIN); r->buf is NULL when that allocation failed (answer ENOMEM). NULL when the
 * server stops or the peer is gone while waiting, or out of memory for the struct. */
struct nbd_req *nbd_req_get(struct nbd_conn *c, uint32_t len);
/* reply.c: reply to r (err: NBD error value; READ data from r->buf when err == 0), ending its
 * execution (executing--). Sends at once without blocking when the socket is free, else queues
 * for the writer; r returns to the free list once the reply is out or dropped. */
void nbd_reply_send(struct nbd_req *r, uint32_t err);
/* reply.c: like nbd_reply_send, but only for c's reader: the reply is built and kept in the
 * reader's batch (c->bq_*) until nbd_reply_flush. The reader must flush before anything that may
 * block (a receive, a wait for a free request, the connection end). */
void nbd_reply_defer(struct nbd_req *r, uint32_t err);
/* reply.c: end r (from nbd_req_get) with no reply at all, for c's reader only: a WRITE whose
 * payload never arrived in full was not received, so it gets no reply (NBD proto "Terminating
 * the transmission phase": at a server shutdown the reader's receive ends mid-payload while
 * the client, still sending, cannot match a reply to that handle yet; libnbd calls such a
 * reply a server bug and drops the connection). */
void nbd_req_drop(struct nbd_req *r);
/* reply.c: send the reader's batch of deferred replies (a no-op when empty) with as few
 * non-blocking sendmsg calls as it takes (NBD_SEND_BATCH replies each); what would block goes
 * to the writer thread, in front of its queue. Reader only. */
void nbd_reply_flush(struct nbd_conn *c);
/* Most replies gathered into one sendmsg (two iovecs each: header, data). */
#define NBD_SEND_BATCH 32
/* reply.c: cut c off (timeouts, stop): shut its socket down, drop queued replies, and make a
 * reader waiting in nbd_req_get give up. */
void nbd_conn_cut(struct nbd_conn *c);
/* reply.c: free every request and buffer of a finished connection (nothing outstanding). */
void nbd_conn_free_reqs(struct nbd_conn *c);
/* reply.c: after a burst (nothing outstanding and no activity for NBD_IDLE_TRIM_NS at now, in
 * monotonic ns), free c's buffers beyond NBD_IDLE_KEEP and ask for a heap trim. */
void nbd_conn_trim_idle(struct nbd_conn *c, uint64_t now);
/* reply.c: give free heap memory back to the system (malloc_trim). */
void nbd_mem_trim(void);
/* transmit.c: mark c as ending when its peer has closed (POLLRDHUP) while it is still in
 * transmission; called under srv->conn_lock for each other connection when a new connection
 * enters transmission (see docs/ARCHITECTURE.md "Connection end"). */
void nbd_conn_check_end(struct nbd_conn *c);

/* pool.c: start srv->nthreads workers that run queued requests with run(r). 0 when at least
 * one worker started; -ENOMEM (nothing started, nothing to stop); -EAGAIN when no thread
 * could be created (call nbd_pool_stop all the same). */
int nbd_pool_start(struct rk_nbd_server *srv, void (*run)(struct nbd_req *r));
/* pool.c: let the workers finish the queue, then join and free them. */
void nbd_pool_stop(struct rk_nbd_server *srv);
/* pool.c: queue r (owned by the pool until run) and wake a worker if one is needed. */
void nbd_pool_push(struct rk_nbd_server *srv, struct nbd_req *r);
/* pool.c: monotonic clock in nanoseconds. */
uint64_t nbd_now_ns(void);
/* pool.c: true in worker pool threads. */
extern __thread bool nbd_in_worker;

#endif
