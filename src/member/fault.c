/* The fault member: wraps any device with identical geometry and injects failures on demand
 * (EIO ranges, fail-all, fail after N writes, latency, and a power cut with an undo log that
 * keeps none, all or a random subset of the unflushed writes; docs/TORTURE.md). Tests only.
 * Power domains and cuts are in fault_power.c, the textual spec (--debug-fault) in
 * fault_spec.c. */
#include "raidkit/member.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "member/fault_int.h"

static bool fault_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return a < b + blen && b < a + alen;
}

/* Detach and return (for freeing outside the lock) the undo entries beyond the newest
 * max_bytes. Caller holds f->lock. */
static struct fault_undo *fault_cut_older(struct fault_priv *f, uint64_t max_bytes)
{
    uint64_t bytes = 0;
    for (struct fault_undo **pp = &f->undo; *pp; pp = &(*pp)->next) {
        if (bytes + (*pp)->len > max_bytes) {
            struct fault_undo *rest = *pp;
            *pp = NULL;
            f->undo_bytes = bytes;
            return rest;
        }
        bytes += (*pp)->len;
    }
    return NULL;
}

static bool fault_modifies(enum rk_op op)
{
    return op == RK_OP_WRITE || op == RK_OP_WRITE_ZEROES || op == RK_OP_DISCARD;
}

/* The member-local checks (fail-all, ranges, fail-after-writes). Caller holds f->lock. */
static int fault_check_locked(struct fault_priv *f, enum rk_op op, uint64_t len, uint64_t off)
{
    if (f->fail_all || f->tripped || f->powered_off)
        return -EIO;
    uint32_t kind = fault_modifies(op) ? RK_FAULT_WRITE : RK_FAULT_READ;
    if (op != RK_OP_FLUSH) {
        for (unsigned i = 0; i < f->nranges; i++)
            if ((f->ranges[i].which & kind) &&
                fault_overlap(off, len, f->ranges[i].off, f->ranges[i].len))
                return -EIO;
    }
    if (f->countdown_on && (op == RK_OP_WRITE || op == RK_OP_WRITE_ZEROES)) {
        if (f->countdown == 0) {
            f->tripped = true;
            return -EIO;
        }
        f->countdown--;
    }
    return 0;
}

/*
 * Decide whether a request fails, consuming one fail-after-writes credit and one cut-after
 * credit of the power domain for a modifying request. A modifying request or flush that
 * passes is busy until fault_done(): a cut waits for it. The request that finds the domain's
 * credit at 0 cuts the power (synchronously, in this thread) and fails.
 */
static int fault_check(struct fault_priv *f, enum rk_op op, uint64_t len, uint64_t off)
{
    struct fault_power *pw = f->power;
    bool modifies = fault_modifies(op), trigger = false;
    if (f->latency_us)
        usleep((useconds_t)f->latency_us);
    pthread_mutex_lock(&pw->lock);
    pthread_mutex_lock(&f->lock);
    int r = atomic_load(&pw->cut) ? -EIO : fault_check_locked(f, op, len, off);
    if (r == 0 && modifies && pw->countdown_on) {
        if (pw->countdown == 0) {
            atomic_store(&pw->cut, true);
            trigger = true;
            r = -EIO;
        } else {
            pw->countdown--;
        }
    }
    if (r == 0 && (modifies || op == RK_OP_FLUSH))
        f->busy++;
    pthread_mutex_unlock(&f->lock);
    pthread_mutex_unlock(&pw->lock);
    if (trigger)
        fault_power_cut_domain(pw);
    if (r && atomic_load(&pw->cut))
        fault_dead(pw);
    return r;
}

/* A busy request finished: mark its undo entry (seq, 0 = none) completed, drop busy. Returns
 * -EIO when the power was cut meanwhile (its data may or may not persist), else 0. */
static int fault_done(struct fault_priv *f, uint64_t seq)
{
    bool cut = atomic_load(&f->power->cut);
    pthread_mutex_lock(&f->lock);
    for (struct fault_undo *u = f->undo; seq && u; u = u->next) {
        if (u->seq == seq) {
            u->done = true;
            break;
        }
    }
    if (--f->busy == 0)
        pthread_cond_broadcast(&f->idle);
    pthread_mutex_unlock(&f->lock);
    if (cut)
        fault_dead(f->power);
    return cut ? -EIO : 0;
}

/*
 * Before a modifying request reaches the child: remember the child's old content, so a power
 * cut can undo it; *seq gets the entry's number (0 for none). A FUA write is durable once
 * complete, so it is not logged; instead the logged old content it overlaps becomes its new
 * data, so undoing older writes cannot erase it.
 */
static int fault_log(struct fault_priv *f, enum rk_op op, const void *buf, uint64_t len,
                     uint64_t off, uint32_t flags, uint64_t *seq)
{
    *seq = 0;
    if ((op == RK_OP_WRITE_ZEROES || op == RK_OP_WRITE) && (flags & RK_WRITE_FUA)) {
        pthread_mutex_lock(&f->lock);
        for (struct fault_undo *u = f->undo; u; u = u->next) {
            if (!fault_overlap(off, len, u->off, u->len))
                continue;
            uint64_t s = off > u->off ? off : u->off;
            uint64_t e = off + len < u->off + u->len ? off + len : u->off + u->len;
            if (op == RK_OP_WRITE)
                memcpy((char *)u->old + (s - u->off), (const char *)buf + (s - off), e - s);
            else
                memset((char *)u->old + (s - u->off), 0, e - s);
        }
        pthread_mutex_unlock(&f->lock);
        return 0;
    }
    struct fault_undo *u = calloc(1, sizeof(*u));
    void *old = rk_buf_alloc(len);
    int r = -ENOMEM;
    if (!u || !old)
        goto fail;
    r = rk_dev_read(f->child, old, len, off);
    if (r)
        goto fail;
    u->off = off;
    u->len = len;
    u->old = old;
    struct fault_undo *drop = NULL;
    pthread_mutex_lock(&f->lock);
    *seq = u->seq = ++f->seq;
    u->next = f->undo;
    f->undo = u;
    f->undo_bytes += len;
    if (f->undo_bytes > FAULT_UNDO_MAX)
        drop = fault_cut_older(f, FAULT_UNDO_MAX / 2);
    pthread_mutex_unlock(&f->lock);
    fault_free_undo(drop);
    return 0;
fail:
    free(old);
    free(u);
    return r;
}

/* Everything checked before the child sees a request: injected failures, then the undo log.
 * On success a modifying request is busy (end it with fault_done(f, *seq)). */
static int fault_before(struct fault_priv *f, enum rk_op op, const void *buf, uint64_t len,
                        uint64_t off, uint32_t flags, uint64_t *seq)
{
    *seq = 0;
    int r = fault_check(f, op, len, off);
    if (r == 0 && fault_modifies(op)) {
        r = fault_log(f, op, buf, len, off, flags, seq);
        if (r)
            fault_done(f, 0);
    }
    return r;
}

static int fault_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct fault_priv *f = dev->priv;
    uint64_t seq;
    int r = fault_before(f, RK_OP_READ, NULL, len, off, 0, &seq);
    return r ? r : rk_dev_read(f->child, buf, len, off);
}

static int fault_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                       uint32_t flags)
{
    struct fault_priv *f = dev->priv;
    uint64_t seq;
    int r = fault_before(f, RK_OP_WRITE, buf, len, off, flags, &seq);
    if (r)
        return r;
    r = rk_dev_write(f->child, buf, len, off, flags);
    int d = fault_done(f, seq);
    return r ? r : d;
}

/* Flush the child, then drop the undo entries of the writes that had completed when the flush
 * started: those are durable now. Later entries (and writes still running) stay, and so does
 * everything when the power was cut while the flush ran (it then fails). */
static int fault_flush(struct rk_dev *dev)
{
    struct fault_priv *f = dev->priv;
    int r = fault_check(f, RK_OP_FLUSH, 0, 0);
    if (r)
        return r;
    pthread_mutex_lock(&f->lock);
    uint64_t id = ++f->flush_id;
    for (struct fault_undo *u = f->undo; u; u = u->next)
        if (u->done && !u->covered)
            u->covered = id;
    pthread_mutex_unlock(&f->lock);
    r = rk_dev_flush(f->child);
    struct fault_undo *drop = NULL;
    pthread_mutex_lock(&f->lock);
    if (r == 0 && atomic_load(&f->power->cut))
        r = -EIO;
    for (struct fault_undo **pp = &f->undo; r == 0 && *pp;) {
        struct fault_undo *u = *pp;
        if (u->covered && u->covered <= id) {
            *pp = u->next;
            f->undo_bytes -= u->len;
            u->next = drop;
            drop = u;
        } else {
            pp = &u->next;
        }
    }
    pthread_mutex_unlock(&f->lock);
    fault_free_undo(drop);
    int d = fault_done(f, 0);
    return r ? r : d;
}

static int fault_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct fault_priv *f = dev->priv;
    uint64_t seq;
    int r = fault_before(f, RK_OP_DISCARD, NULL, len, off, 0, &seq);
    if (r)
        return r;
    r = rk_dev_discard(f->child, len, off);
    int d = fault_done(f, seq);
    return r ? r : d;
}

static int fault_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    struct fault_priv *f = dev->priv;
    uint64_t seq;
    int r = fault_before(f, RK_OP_WRITE_ZEROES, NULL, len, off, flags, &seq);
    if (r)
        return r;
    r = rk_dev_write_zeroes(f->child, len, off, flags);
    int d = fault_done(f, seq);
    return r ? r : d;
}

/* Reads go down asynchronously when the child allows it; the rest synchronously. */
static void fault_submit(struct rk_dev *dev, struct rk_io *io)
{
    struct fault_priv *f = dev->priv;
    int r;
    uint64_t seq;
    switch (io->op) {
    case RK_OP_READ:
        if (!f->forward_async) {
            r = fault_read(dev, io->buf, io->len, io->off);
            break;
        }
        r = fault_before(f, io->op, io->buf, io->len, io->off, io->flags, &seq);
        if (r)
            rk_io_complete(io, r);
        else
            f->child->ops->submit(f->child, io);
        return;
    case RK_OP_WRITE:
        r = fault_write(dev, io->buf, io->len, io->off, io->flags);
        break;
    case RK_OP_FLUSH:
        r = fault_flush(dev);
        break;
    case RK_OP_DISCARD:
        r = fault_discard(dev, io->len, io->off);
        break;
    case RK_OP_WRITE_ZEROES:
        r = fault_write_zeroes(dev, io->len, io->off, io->flags);
        break;
    default:
        r = -EINVAL;
        break;
    }
    rk_io_complete(io, r);
}

static void fault_close(struct rk_dev *dev)
{
    struct fault_priv *f = dev->priv;
    if (!f)
        return;
    fault_power_leave(f);
    fault_free_undo(f->undo);
    if (f->own_child)
        rk_dev_close(f->child);
    pthread_mutex_destroy(&f->own_power.lock);
    pthread_cond_destroy(&f->idle);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

const struct rk_dev_ops fault_ops = {
    .kind = "fault",
    .read = fault_read,
    .write = fault_write,
    .flush = fault_flush,
    .discard = fault_discard,
    .write_zeroes = fault_write_zeroes,
    .submit = fault_submit,
    .close = fault_close,
};

int rk_fault_open(struct rk_dev *child, bool own_child, struct rk_dev **out)
{
    if (!child || !out)
        return -EINVAL;
    struct fault_priv *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->child = child;
    f->own_child = own_child;
    f->forward_async = child->ops->submit &&
                       (!strcmp(child->ops->kind, "file") || !strcmp(child->ops->kind, "fault"));
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->idle, NULL);
    pthread_mutex_init(&f->own_power.lock, NULL);
    f->power = &f->own_power;
    f->own_power.members[f->own_power.nmembers++] = f;
    f->rng = fault_seed_state(f, 1);
    struct rk_dev *dev = rk_dev_alloc(&fault_ops, f, child->name);
    if (!dev) {
        pthread_mutex_destroy(&f->own_power.lock);
        pthread_cond_destroy(&f->idle);
        pthread_mutex_destroy(&f->lock);
        free(f);
        return -ENOMEM;
    }
    dev->size = child->size;
    dev->block_size = child->block_size;
    dev->opt_io_size = child->opt_io_size;
    dev->direct = child->direct;
    *out = dev;
    return 0;
}

int rk_fault_add_range(struct rk_dev *dev, uint32_t which, uint64_t off, uint64_t len)
{
    struct fault_priv *f = fault_priv_of(dev);
    int r = 0;
    if (!f || !which || (which & ~(RK_FAULT_READ | RK_FAULT_WRITE)) || len == 0 || off + len < off)
        return -EINVAL;
    pthread_mutex_lock(&f->lock);
    if (f->nranges == FAULT_MAX_RANGES) {
        r = -ENOSPC;
    } else {
        f->ranges[f->nranges].which = which;
        f->ranges[f->nranges].off = off;
        f->ranges[f->nranges++].len = len;
    }
    pthread_mutex_unlock(&f->lock);
    return r;
}

unsigned rk_fault_ranges_free(struct rk_dev *dev)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f)
        return 0;
    pthread_mutex_lock(&f->lock);
    unsigned n = FAULT_MAX_RANGES - f->nranges;
    pthread_mutex_unlock(&f->lock);
    return n;
}

void rk_fault_clear(struct rk_dev *dev)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->nranges = 0;
    f->fail_all = false;
    f->countdown_on = false;
    f->tripped = false;
    pthread_mutex_unlock(&f->lock);
}

void rk_fault_fail_all(struct rk_dev *dev, bool on)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->fail_all = on;
    pthread_mutex_unlock(&f->lock);
}

void rk_fault_fail_after_writes(struct rk_dev *dev, uint64_t n)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    f->countdown_on = true;
    f->countdown = n;
    pthread_mutex_unlock(&f->lock);
}
