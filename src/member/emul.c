/* The emul member: wraps a child device and completes each request at the time an SSD or HDD
 * model says (emul_model.c), using a timer thread per device. Profiles: emul_profile.c. */
#include "raidkit/emul.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "core/util.h"
#include "member/emul_model.h"

#define EMUL_HEAP 4096 /* SSD completions waiting for their time */

/* A synchronous caller waiting for its request (lives on the caller's stack). */
struct emul_wait {
    pthread_cond_t cond;
    bool done;
    int result;
    uint64_t sleep_until; /* SSD: done, but the caller sleeps until then itself */
};

/* Whom to tell when a request is complete: an async io or a synchronous waiter. */
struct emul_ev {
    uint64_t t;
    struct rk_io *io;
    struct emul_wait *w;
    int result;
};

struct emul_priv {
    struct rk_dev *child;
    bool own_child;
    struct emul_model m;
    pthread_mutex_t lock;
    pthread_cond_t wake;  /* timer thread: new earliest deadline or stop */
    pthread_cond_t space; /* submitters: the HDD queue has room */
    pthread_t thread;
    bool stop;
    /* SSD: min-heap of completions by time */
    struct emul_ev heap[EMUL_HEAP];
    int nheap;
    /* HDD: commands waiting for the head */
    struct emul_hq hq;
};

static uint64_t emul_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec emul_ts(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    return ts;
}

/* Timed sleeps of the emulation end when the model says, not up to 50 us later: the kernel's
 * default timer slack of a thread (50 us) let a sleep or a timed wait end anywhere in
 * [deadline, deadline + slack], and on this VM they ended ~60 us late on average, against 8-10
 * us with 1 us of slack (a 2 us SSD-latency error became a 60-90 % one at queue depth 1). Each
 * thread that sleeps for the emulation sets its own slack once (the slack is per thread; threads
 * it creates afterwards inherit it, which costs them nothing). */
#define EMUL_SLACK_NS 1000ul
static __thread bool emul_slack_set;

static void emul_precise_sleeps(void)
{
    if (!emul_slack_set) {
        prctl(PR_SET_TIMERSLACK, EMUL_SLACK_NS, 0, 0, 0);
        emul_slack_set = true;
    }
}

/* Sleep until ns on the monotonic clock (now or in the past: return at once). */
static void emul_sleep_until(uint64_t ns)
{
    emul_precise_sleeps();
    struct timespec ts = emul_ts(ns);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Report ev complete. Called with the lock held (the waiter shares it). */
static void emul_finish(struct emul_ev *ev, int result)
{
    if (ev->io) {
        rk_io_complete(ev->io, result);
    } else if (ev->w) {
        ev->w->result = result;
        ev->w->done = true;
        pthread_cond_signal(&ev->w->cond);
    }
}

static void emul_heap_push(struct emul_priv *e, struct emul_ev ev)
{
    int i = e->nheap++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (e->heap[parent].t <= ev.t)
            break;
        e->heap[i] = e->heap[parent];
        i = parent;
    }
    e->heap[i] = ev;
}

static struct emul_ev emul_heap_pop(struct emul_priv *e)
{
    struct emul_ev top = e->heap[0];
    struct emul_ev last = e->heap[--e->nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= e->nheap)
            break;
        if (c + 1 < e->nheap && e->heap[c + 1].t < e->heap[c].t)
            c++;
        if (e->heap[c].t >= last.t)
            break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (e->nheap)
        e->heap[i] = last;
    return top;
}

/* HDD queue contexts: an async io, or a synchronous waiter tagged with the low bit. */
static void *emul_ctx(const struct emul_ev *ev)
{
    return ev->io ? (void *)ev->io : (void *)((uintptr_t)ev->w | 1u);
}

static void emul_hq_done(void *arg, void *ctx)
{
    (void)arg;
    struct emul_ev ev = {0};
    if ((uintptr_t)ctx & 1u)
        ev.w = (struct emul_wait *)((uintptr_t)ctx & ~(uintptr_t)1u);
    else
        ev.io = ctx;
    emul_finish(&ev, 0);
}

static void *emul_timer(void *arg)
{
    struct emul_priv *e = arg;
    emul_precise_sleeps();
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        uint64_t now = emul_now();
        while (e->nheap && e->heap[0].t <= now) {
            struct emul_ev ev = emul_heap_pop(e);
            emul_finish(&ev, ev.result);
        }
        if (e->hq.busy && e->hq.busy_until <= now) {
            emul_hq_advance(&e->m, &e->hq, now, emul_hq_done, e);
            pthread_cond_broadcast(&e->space);
        }
        uint64_t next = UINT64_MAX;
        if (e->nheap)
            next = e->heap[0].t;
        if (e->hq.busy && e->hq.busy_until < next)
            next = e->hq.busy_until;
        if (next == UINT64_MAX) {
            pthread_cond_wait(&e->wake, &e->lock);
        } else {
            struct timespec ts = emul_ts(next);
            pthread_cond_timedwait(&e->wake, &e->lock, &ts);
        }
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* The data part of a request: the child I/O, now. 0 or -errno. */
static int emul_child_io(struct emul_priv *e, enum rk_op op, void *buf, uint64_t len, uint64_t off,
                         uint32_t flags)
{
    int r = 0;
    switch (op) {
    case RK_OP_READ:
        r = rk_dev_read(e->child, buf, len, off);
        break;
    case RK_OP_WRITE:
        r = rk_dev_write(e->child, buf, len, off, flags);
        break;
    case RK_OP_FLUSH:
        r = rk_dev_flush(e->child);
        break;
    case RK_OP_DISCARD:
        r = rk_dev_discard(e->child, len, off);
        break;
    case RK_OP_WRITE_ZEROES:
        r = rk_dev_write_zeroes(e->child, len, off, flags);
        break;
    }
    return r;
}

/* When an SSD model completes op (len bytes) arriving at now: a flush at once (no write cache
 * to drain), a discard as a request without transfer. Caller holds e->lock. */
static uint64_t emul_ssd_done_at(struct emul_priv *e, enum rk_op op, uint64_t len, uint64_t now)
{
    if (op == RK_OP_FLUSH)
        return now;
    int dir = op == RK_OP_READ ? EMUL_DIR_READ : EMUL_DIR_WRITE;
    return emul_ssd_submit(&e->m, dir, op == RK_OP_DISCARD ? 0 : len, now);
}

/* Do the child I/O now, then hand the completion to the model. */
static void emul_start(struct rk_dev *dev, enum rk_op op, void *buf, uint64_t len, uint64_t off,
                       uint32_t flags, struct emul_ev ev)
{
    struct emul_priv *e = dev->priv;
    int r = emul_child_io(e, op, buf, len, off, flags);
    pthread_mutex_lock(&e->lock);
    if (r) {
        emul_finish(&ev, r); /* failures are reported at once: the model times media work */
        goto out;
    }
    ev.result = 0;
    int dir = (op == RK_OP_READ) ? EMUL_DIR_READ : EMUL_DIR_WRITE;
    uint64_t now = emul_now();
    if (e->m.p.kind == RK_EMUL_SSD) {
        if (op == RK_OP_FLUSH) {
            emul_finish(&ev, 0);
            goto out;
        }
        ev.t = emul_ssd_done_at(e, op, len, now);
        if (ev.w) {
            /* A synchronous caller sleeps to the known time itself: one wake-up, not two. */
            ev.w->sleep_until = ev.t;
            emul_finish(&ev, 0);
            goto out;
        }
        if (e->nheap == EMUL_HEAP) {
            /* More in flight than the heap holds: wait here instead of allocating. */
            pthread_mutex_unlock(&e->lock);
            emul_sleep_until(ev.t);
            pthread_mutex_lock(&e->lock);
            emul_finish(&ev, 0);
            goto out;
        }
        bool earliest = e->nheap == 0 || ev.t < e->heap[0].t;
        emul_heap_push(e, ev);
        if (earliest)
            pthread_cond_signal(&e->wake);
        goto out;
    }
    if (op == RK_OP_DISCARD) { /* no media work on a disk without thin provisioning */
        emul_finish(&ev, 0);
        goto out;
    }
    struct emul_hreq hr = {.off = off,
                           .len = len,
                           .dir = (uint8_t)dir,
                           .kind = op == RK_OP_FLUSH ? EMUL_H_BARRIER : EMUL_H_IO};
    while (emul_hq_add(&e->m, &e->hq, &hr, flags & RK_WRITE_FUA, emul_ctx(&ev), now, emul_hq_done,
                       e) == -EAGAIN)
        pthread_cond_wait(&e->space, &e->lock); /* full: wait for the head */
    pthread_cond_signal(&e->wake);
out:
    pthread_mutex_unlock(&e->lock);
}

static void emul_submit(struct rk_dev *dev, struct rk_io *io)
{
    struct emul_ev ev = {.io = io};
    emul_start(dev, io->op, io->buf, io->len, io->off, io->flags, ev);
}

/* Synchronous operations: submit, then wait on a condition of our own (not a broadcast). */
static int emul_sync(struct rk_dev *dev, enum rk_op op, void *buf, uint64_t len, uint64_t off,
                     uint32_t flags)
{
    struct emul_priv *e = dev->priv;
    struct emul_wait w = {.done = false};
    pthread_cond_init(&w.cond, NULL);
    struct emul_ev ev = {.w = &w};
    emul_start(dev, op, buf, len, off, flags, ev);
    pthread_mutex_lock(&e->lock);
    while (!w.done)
        pthread_cond_wait(&w.cond, &e->lock);
    pthread_mutex_unlock(&e->lock);
    pthread_cond_destroy(&w.cond);
    if (w.sleep_until)
        emul_sleep_until(w.sleep_until);
    return w.result;
}

/* rk_io_run's rounds (rk_dev_ops.start_local / wait_local): an SSD model knows a request's
 * completion time when it is submitted, so the round's own thread does the child I/O now, keeps
 * the time in io->member_done, and sleeps once to the latest time of its round (as a
 * synchronous caller does, emul_sync): no wake-up of the timer thread and no hand-off back per
 * request. The model sees the same submissions at the same times. An HDD's completion time
 * depends on what arrives later (the head picks from its queue): those go to the timer thread. */
static bool emul_start_local(struct rk_dev *dev, struct rk_io *io)
{
    struct emul_priv *e = dev->priv;
    if (e->m.p.kind != RK_EMUL_SSD)
        return false;
    int r = emul_child_io(e, io->op, io->buf, io->len, io->off, io->flags);
    uint64_t t = emul_now();
    if (!r) { /* failures complete at once, as in emul_start */
        pthread_mutex_lock(&e->lock);
        t = emul_ssd_done_at(e, io->op, io->len, t);
        pthread_mutex_unlock(&e->lock);
    }
    io->result = r;
    io->member_done = t;
    return true;
}

static void emul_wait_local(struct rk_io *const *ios, int n)
{
    uint64_t until = 0;
    for (int i = 0; i < n; i++)
        if (ios[i]->member_done > until)
            until = ios[i]->member_done;
    if (until)
        emul_sleep_until(until);
}

static int emul_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    return emul_sync(dev, RK_OP_READ, buf, len, off, 0);
}

static int emul_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                      uint32_t flags)
{
    return emul_sync(dev, RK_OP_WRITE, (void *)buf, len, off, flags);
}

static int emul_flush(struct rk_dev *dev)
{
    return emul_sync(dev, RK_OP_FLUSH, NULL, 0, 0, 0);
}

static int emul_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    return emul_sync(dev, RK_OP_DISCARD, NULL, len, off, 0);
}

static int emul_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    return emul_sync(dev, RK_OP_WRITE_ZEROES, NULL, len, off, flags);
}

static void emul_close(struct rk_dev *dev)
{
    struct emul_priv *e = dev->priv;
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->stop = true;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->lock);
    pthread_join(e->thread, NULL);
    /* Anything still timed is completed now rather than lost. */
    while (e->nheap) {
        struct emul_ev ev = emul_heap_pop(e);
        emul_finish(&ev, ev.result);
    }
    emul_hq_advance(&e->m, &e->hq, UINT64_MAX, emul_hq_done, e);
    pthread_cond_destroy(&e->wake);
    pthread_cond_destroy(&e->space);
    pthread_mutex_destroy(&e->lock);
    if (e->own_child)
        rk_dev_close(e->child);
    free(e);
}

static const struct rk_dev_ops emul_ops = {
    .kind = "emul",
    .read = emul_read,
    .write = emul_write,
    .flush = emul_flush,
    .discard = emul_discard,
    .write_zeroes = emul_write_zeroes,
    .submit = emul_submit,
    .close = emul_close,
    .start_local = emul_start_local,
    .wait_local = emul_wait_local,
};

int rk_emul_open(struct rk_dev *child, bool own_child, const struct rk_emul_params *p,
                 struct rk_dev **out)
{
    if (!child || !p || !out)
        return -EINVAL;
    uint64_t size = child->size;
    if (p->capacity && p->capacity < size)
        size = p->capacity / child->block_size * child->block_size;
    if (size == 0)
        return -EINVAL;
    struct emul_priv *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    int r = emul_model_init(&e->m, p, p->capacity ? p->capacity : child->size);
    if (r) {
        free(e);
        return r;
    }
    e->child = child;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->wake, &ca);
    pthread_cond_init(&e->space, NULL);
    pthread_condattr_destroy(&ca);
    char name[256];
    snprintf(name, sizeof(name), "emul:%.60s(%.180s)", p->name, child->name);
    struct rk_dev *dev = rk_dev_alloc(&emul_ops, e, name);
    if (!dev || pthread_create(&e->thread, NULL, emul_timer, e)) {
        free(dev);
        pthread_cond_destroy(&e->wake);
        pthread_cond_destroy(&e->space);
        pthread_mutex_destroy(&e->lock);
        free(e);
        return -ENOMEM;
    }
    e->own_child = own_child;
    dev->size = size;
    dev->block_size = child->block_size;
    dev->opt_io_size = child->opt_io_size;
    dev->direct = child->direct;
    *out = dev;
    return 0;
}
