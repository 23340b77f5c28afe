/* NBD worker pool and service clock: a queue of ready requests, threads that run them through
 * the server's run callback, and the moving mean of service time that decides how many workers
 * run. It knows requests only as queue links. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "nbd/nbd_int.h"

/* Mean service time below which requests count as CPU-bound (see nbd_pool_wake). */
#define NBD_FAST_NS 30000

__thread bool nbd_in_worker;

uint64_t nbd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Feed one service time (nanoseconds) into the moving mean srv->svc_ewma_ns. */
static void nbd_svc_sample(struct rk_nbd_server *srv, int64_t dt_ns)
{
    int64_t m = atomic_load_explicit(&srv->svc_ewma_ns, memory_order_relaxed);
    atomic_store_explicit(&srv->svc_ewma_ns, m + (dt_ns - m) / 8, memory_order_relaxed);
}

/* Run r in this worker through srv->pool_run, timing it into srv->svc_ewma_ns. Replies never
 * block here (transmit.c's send path hands what would block to the connection's writer), so
 * the time is execution plus a non-blocking send. */
static void nbd_pool_run(struct rk_nbd_server *srv, struct nbd_req *r)
{
    uint64_t t0 = nbd_now_ns();
    srv->pool_run(r);
    nbd_svc_sample(srv, (int64_t)(nbd_now_ns() - t0));
}

/* Wake one sleeping worker unless one is already on its way (caller holds q_lock). Waking a
 * thread per request costs a context switch each on small machines; instead a woken worker that
 * finds more queued work wakes the next one, so the number of running workers follows the
 * queue: a few for fast in-memory requests, many when requests block on slow members. */
static void nbd_pool_wake(struct rk_nbd_server *srv)
{
    /* Requests that finish quickly are CPU-bound (memory, page cache): more running workers
     * than CPUs only add context switches. Slow ones block on members: use every worker. */
    int awake = srv->nworkers - srv->q_idle + srv->q_waking;
    int64_t svc = atomic_load_explicit(&srv->svc_ewma_ns, memory_order_relaxed);
    int cap = svc < NBD_FAST_NS ? srv->fast_cap : srv->nworkers;
    if (srv->q_head && awake < cap && srv->q_idle > srv->q_waking && srv->q_waking == 0) {
        srv->q_waking++;
        pthread_cond_signal(&srv->q_cond);
    }
}

void nbd_pool_push(struct rk_nbd_server *srv, struct nbd_req *r)
{
    r->next = NULL;
    pthread_mutex_lock(&srv->q_lock);
    if (srv->q_tail)
        srv->q_tail->next = r;
    else
        srv->q_head = r;
    srv->q_tail = r;
    nbd_pool_wake(srv);
    pthread_mutex_unlock(&srv->q_lock);
}

static void *nbd_worker(void *arg)
{
    struct rk_nbd_server *srv = arg;
    nbd_in_worker = true;
    pthread_mutex_lock(&srv->q_lock);
    for (;;) {
        while (!srv->q_head && !srv->pool_stop) {
            srv->q_idle++;
            pthread_cond_wait(&srv->q_cond, &srv->q_lock);
            srv->q_idle--;
            if (srv->q_waking > 0)
                srv->q_waking--; /* our wake-up has arrived (or a spurious one took its place) */
        }
        struct nbd_req *r = srv->q_head;
        if (!r)
            break;
        srv->q_head = r->next;
        if (!srv->q_head)
            srv->q_tail = NULL;
        nbd_pool_wake(srv); /* more work queued: bring in another worker */
        pthread_mutex_unlock(&srv->q_lock);
        nbd_pool_run(srv, r);
        pthread_mutex_lock(&srv->q_lock);
    }
    pthread_mutex_unlock(&srv->q_lock);
    return NULL;
}

int nbd_pool_start(struct rk_nbd_server *srv, void (*run)(struct nbd_req *r))
{
    srv->workers = calloc((size_t)srv->nthreads, sizeof(*srv->workers));
    if (!srv->workers)
        return -ENOMEM;
    srv->pool_run = run;
    srv->pool_stop = false;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    srv->fast_cap = ncpu > 0 && ncpu < 1024 ? (int)ncpu + 1 : 4;
    atomic_store(&srv->svc_ewma_ns, 0);
    for (; srv->nworkers < srv->nthreads; srv->nworkers++)
        if (pthread_create(&srv->workers[srv->nworkers], NULL, nbd_worker, srv))
            break;
    return srv->nworkers ? 0 : -EAGAIN;
}

void nbd_pool_stop(struct rk_nbd_server *srv)
{
    pthread_mutex_lock(&srv->q_lock);
    srv->pool_stop = true;
    pthread_cond_broadcast(&srv->q_cond);
    pthread_mutex_unlock(&srv->q_lock);
    for (int i = 0; i < srv->nworkers; i++)
        pthread_join(srv->workers[i], NULL);
    srv->nworkers = 0;
    free(srv->workers);
    srv->workers = NULL;
}
