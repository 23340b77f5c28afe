/* The fault member: wraps any device with identical geometry and injects failures on demand
 * (EIO ranges, fail-all, fail after N writes, latency, and a power cut with an undo log that
 * keeps none, all or a random subset of the unflushed writes; docs/TORTURE.md). Tests only.
 * The textual spec (--debug-fault) is parsed in fault_spec.c. */
#include "raidkit/member.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

#define FAULT_MAX_RANGES 16
/* Undo log bound: beyond it the oldest entries are dropped, as if a disk cache had written
 * them back on its own (allowed: unflushed writes *may* survive a power cut). Keeps a fault
 * member under a long unflushed workload (fio without fsync) from eating all memory. */
#define FAULT_UNDO_MAX (64ull << 20)
/* Members one power domain holds (the shared domain: every member of a serve). */
#define FAULT_POWER_MAX 64

struct fault_range {
    uint32_t which; /* RK_FAULT_READ | RK_FAULT_WRITE */
    uint64_t off, len;
};

/* The old content of one write not yet covered by a flush: what a power cut puts back. */
struct fault_undo {
    struct fault_undo *next; /* older entry */
    uint64_t seq;            /* order of logging */
    bool done;               /* the write completed (only completed writes are flushed) */
    uint64_t covered;        /* id of the first flush started after completion; 0 = none */
    uint64_t off, len;
    void *old; /* len bytes, 4096-aligned (child may be O_DIRECT) */
};

struct fault_priv;

/*
 * A power domain: the members that lose power together. Every fault member starts in its own
 * (own_power); "power=shared" moves it into the process-wide one, so cut-after counts the
 * writes of all of them and the cut hits them all at the same instant. lock is taken before
 * any member's lock and held through a cut (members' undo included).
 */
struct fault_power {
    pthread_mutex_t lock;
    bool countdown_on;  /* cut-after armed */
    uint64_t countdown; /* member writes still allowed before the cut */
    bool cut;           /* the cut happened: every member fails everything */
    unsigned nmembers;
    struct fault_priv *members[FAULT_POWER_MAX];
};

struct fault_priv {
    struct rk_dev *child;
    bool own_child;
    /* The child's submit uses its dev argument, never io->dev, so a read addressed to us can
     * be handed down as is (file and fault members; others run synchronously). Writes always
     * run synchronously here, so their completion is known (flush and cut semantics). */
    bool forward_async;
    struct fault_power *power; /* &own_power or the shared domain; set before any I/O */
    struct fault_power own_power;
    uint64_t latency_us; /* delay before every request */
    /* lock protects everything below; taken after power->lock, never across child I/O. */
    pthread_mutex_t lock;
    pthread_cond_t idle; /* busy dropped to 0 */
    struct fault_range ranges[FAULT_MAX_RANGES];
    unsigned nranges;
    bool fail_all;
    bool countdown_on;       /* fail-after-writes armed */
    uint64_t countdown;      /* writes still allowed to succeed */
    bool tripped;            /* fail-after-writes fired: everything fails until cleared */
    bool powered_off;        /* power cut happened: everything fails for good */
    unsigned busy;           /* modifying requests and flushes between check and completion */
    struct fault_undo *undo; /* newest first */
    uint64_t undo_bytes;     /* sum of len over undo */
    uint64_t seq;
    uint64_t flush_id; /* last flush started */
    enum rk_fault_keep keep;
    uint64_t rng; /* keep=random state (splitmix64) */
    struct rk_fault_cut_stats last_cut;
};

static struct fault_power fault_shared = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool fault_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return a < b + blen && b < a + alen;
}

static void fault_free_undo(struct fault_undo *u)
{
    while (u) {
        struct fault_undo *next = u->next;
        free(u->old);
        free(u);
        u = next;
    }
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

static int fault_power_cut_domain(struct fault_power *pw);

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
    int r = pw->cut ? -EIO : fault_check_locked(f, op, len, off);
    if (r == 0 && modifies && pw->countdown_on) {
        if (pw->countdown == 0) {
            pw->cut = trigger = true;
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
    return r;
}

/* A busy request finished: mark its undo entry (seq, 0 = none) completed, drop busy. */
static void fault_done(struct fault_priv *f, uint64_t seq)
{
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
    fault_done(f, seq);
    return r;
}

/* Flush the child, then drop the undo entries of the writes that had completed when the flush
 * started: those are durable now. Later entries (and writes still running) stay. */
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
    fault_done(f, 0);
    return r;
}

static int fault_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct fault_priv *f = dev->priv;
    uint64_t seq;
    int r = fault_before(f, RK_OP_DISCARD, NULL, len, off, 0, &seq);
    if (r)
        return r;
    r = rk_dev_discard(f->child, len, off);
    fault_done(f, seq);
    return r;
}

static int fault_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    struct fault_priv *f = dev->priv;
    uint64_t seq;
    int r = fault_before(f, RK_OP_WRITE_ZEROES, NULL, len, off, flags, &seq);
    if (r)
        return r;
    r = rk_dev_write_zeroes(f->child, len, off, flags);
    fault_done(f, seq);
    return r;
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

/* Leave the power domain (the shared one resets when its last member leaves). */
static void fault_power_leave(struct fault_priv *f)
{
    struct fault_power *pw = f->power;
    pthread_mutex_lock(&pw->lock);
    for (unsigned i = 0; i < pw->nmembers; i++) {
        if (pw->members[i] == f) {
            pw->members[i] = pw->members[--pw->nmembers];
            break;
        }
    }
    if (pw == &fault_shared && pw->nmembers == 0) {
        pw->cut = false;
        pw->countdown_on = false;
    }
    pthread_mutex_unlock(&pw->lock);
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

static const struct rk_dev_ops fault_ops = {
    .kind = "fault",
    .read = fault_read,
    .write = fault_write,
    .flush = fault_flush,
    .discard = fault_discard,
    .write_zeroes = fault_write_zeroes,
    .submit = fault_submit,
    .close = fault_close,
};

/* splitmix64: a small, well-mixed generator for keep=random. */
static uint64_t fault_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The member's own generator state for seed: the seed mixed with its name (FNV-1a), so members
 * of one serve sharing a seed still choose independently. */
static uint64_t fault_seed_state(const struct fault_priv *f, uint64_t seed)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = f->child->name; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    return seed ^ h;
}

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

static struct fault_priv *fault_priv_of(struct rk_dev *dev)
{
    return dev && dev->ops == &fault_ops ? dev->priv : NULL;
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

int rk_fault_set_keep(struct rk_dev *dev, enum rk_fault_keep keep, uint64_t seed)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f ||
        (keep != RK_FAULT_KEEP_NONE && keep != RK_FAULT_KEEP_ALL && keep != RK_FAULT_KEEP_RANDOM))
        return -EINVAL;
    pthread_mutex_lock(&f->lock);
    f->keep = keep;
    f->rng = fault_seed_state(f, seed);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

int rk_fault_set_latency(struct rk_dev *dev, uint64_t usec)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f || usec > 10 * 1000 * 1000)
        return -EINVAL;
    f->latency_us = usec;
    return 0;
}

int rk_fault_cut_after(struct rk_dev *dev, uint64_t n)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f)
        return -EINVAL;
    pthread_mutex_lock(&f->power->lock);
    f->power->countdown_on = true;
    f->power->countdown = n;
    pthread_mutex_unlock(&f->power->lock);
    return 0;
}

int rk_fault_join_shared(struct rk_dev *dev)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f)
        return -EINVAL;
    if (f->power == &fault_shared)
        return 0;
    int r = 0;
    pthread_mutex_lock(&fault_shared.lock);
    if (fault_shared.nmembers == FAULT_POWER_MAX) {
        r = -ENOSPC;
    } else {
        fault_shared.members[fault_shared.nmembers++] = f;
        f->own_power.nmembers = 0;
        f->power = &fault_shared;
    }
    pthread_mutex_unlock(&fault_shared.lock);
    return r;
}

int rk_fault_last_cut(struct rk_dev *dev, struct rk_fault_cut_stats *out)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f || !out)
        return -EINVAL;
    pthread_mutex_lock(&f->lock);
    *out = f->last_cut;
    pthread_mutex_unlock(&f->lock);
    return 0;
}

/* Write len bytes of old content back at off (through an aligned bounce buffer). */
static int fault_restore(struct fault_priv *f, const char *old, uint64_t len, uint64_t off)
{
    void *b = rk_buf_alloc(len);
    if (!b)
        return -ENOMEM;
    memcpy(b, old, len);
    int r = rk_dev_write(f->child, b, len, off, 0);
    free(b);
    return r;
}

/*
 * Apply the cut to one member's detached undo log (newest first): every RK_FAULT_ATOM-aligned
 * block of every unflushed write is kept or put back independently (keep mode); runs of put
 * back blocks are written in one piece. Then the child is flushed. Caller holds the domain
 * lock (no I/O of this member runs). Returns 0 or the first -errno.
 */
static int fault_undo_apply(struct fault_priv *f, struct fault_undo *log)
{
    struct rk_fault_cut_stats st = {0};
    int r = 0;
    for (struct fault_undo *u = log; u; u = u->next) {
        st.writes++;
        uint64_t end = u->off + u->len, run = u->off, s = u->off;
        while (s < end) {
            uint64_t e = (s / RK_FAULT_ATOM + 1) * RK_FAULT_ATOM;
            e = e < end ? e : end;
            bool keep = f->keep == RK_FAULT_KEEP_ALL ||
                        (f->keep == RK_FAULT_KEEP_RANDOM && (fault_rand(&f->rng) & 1));
            if (keep) {
                st.kept++;
                if (run < s) {
                    int e2 = fault_restore(f, (char *)u->old + (run - u->off), s - run, run);
                    r = r ? r : e2;
                }
                run = e;
            } else {
                st.undone++;
            }
            s = e;
        }
        if (run < end) {
            int e2 = fault_restore(f, (char *)u->old + (run - u->off), end - run, run);
            r = r ? r : e2;
        }
    }
    int e = rk_dev_flush(f->child);
    pthread_mutex_lock(&f->lock);
    f->last_cut = st;
    pthread_mutex_unlock(&f->lock);
    static const char *const names[] = {"none", "all", "random"};
    rk_warn("power cut: %s: %" PRIu64 " unflushed writes, %" PRIu64 " blocks kept, %" PRIu64
            " put back (keep=%s)",
            f->child->name, st.writes, st.kept, st.undone, names[f->keep]);
    return r ? r : e;
}

/*
 * Cut the power of every member of pw: each member stops taking requests, waits for the ones
 * it is running, and its unflushed writes are kept or undone (fault_undo_apply). Returns 0 or
 * the first -errno of the undo.
 */
static int fault_power_cut_domain(struct fault_power *pw)
{
    int r = 0;
    pthread_mutex_lock(&pw->lock);
    pw->cut = true;
    for (unsigned i = 0; i < pw->nmembers; i++) {
        struct fault_priv *m = pw->members[i];
        pthread_mutex_lock(&m->lock);
        m->powered_off = true; /* from now on nothing new reaches the child */
        while (m->busy)
            pthread_cond_wait(&m->idle, &m->lock);
        struct fault_undo *log = m->undo;
        m->undo = NULL;
        m->undo_bytes = 0;
        pthread_mutex_unlock(&m->lock);
        int e = fault_undo_apply(m, log);
        fault_free_undo(log);
        r = r ? r : e;
    }
    rk_warn("power cut complete: %u member%s off; every later member request fails", pw->nmembers,
            pw->nmembers == 1 ? "" : "s");
    pthread_mutex_unlock(&pw->lock);
    return r;
}

int rk_fault_power_cut(struct rk_dev *dev)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f)
        return -EINVAL;
    return fault_power_cut_domain(f->power);
}
