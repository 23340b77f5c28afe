/* The fault member: wraps any device with identical geometry and injects failures on demand
 * (EIO ranges, fail-all, fail after N writes, power cut with an undo log). Tests only. */
#include "raidkit/member.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define FAULT_MAX_RANGES 16
/* Undo log bound: beyond it the oldest entries are dropped, as if a disk cache had written
 * them back on its own (allowed: unflushed writes *may* survive a power cut). Keeps a fault
 * member under a long unflushed workload (fio without fsync) from eating all memory. */
#define FAULT_UNDO_MAX (64ull << 20)
/* Items one spec may hold (ranges are further limited by FAULT_MAX_RANGES). */
#define FAULT_MAX_ITEMS 32

struct fault_range {
    uint32_t which; /* RK_FAULT_READ | RK_FAULT_WRITE */
    uint64_t off, len;
};

/* The old content of one write not yet covered by a flush: what a power cut puts back. */
struct fault_undo {
    struct fault_undo *next; /* older entry */
    uint64_t seq;            /* order of logging; a flush drops every entry up to its start */
    uint64_t off, len;
    void *old; /* len bytes, 4096-aligned (child may be O_DIRECT) */
};

struct fault_priv {
    struct rk_dev *child;
    bool own_child;
    /* The child's submit uses its dev argument, never io->dev, so an rk_io addressed to us can
     * be handed down as is (file and fault members; others run synchronously). */
    bool forward_async;
    /* lock protects everything below; leaf lock, never held across child I/O. */
    pthread_mutex_t lock;
    struct fault_range ranges[FAULT_MAX_RANGES];
    unsigned nranges;
    bool fail_all;
    bool countdown_on;       /* fail-after-writes armed */
    uint64_t countdown;      /* writes still allowed to succeed */
    bool tripped;            /* fail-after-writes fired: everything fails until cleared */
    bool powered_off;        /* power cut happened: everything fails for good */
    struct fault_undo *undo; /* newest first */
    uint64_t undo_bytes;     /* sum of len over undo */
    uint64_t seq;
};

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

/* Detach and return (for freeing outside the lock) the oldest undo entries: those logged at
 * or before max_seq, and those beyond the newest max_bytes. Caller holds f->lock. */
static struct fault_undo *fault_cut_older(struct fault_priv *f, uint64_t max_seq,
                                          uint64_t max_bytes)
{
    uint64_t bytes = 0;
    for (struct fault_undo **pp = &f->undo; *pp; pp = &(*pp)->next) {
        if ((*pp)->seq <= max_seq || bytes + (*pp)->len > max_bytes) {
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

/* Decide whether a request fails, consuming one fail-after-writes credit for a write. */
static int fault_check(struct fault_priv *f, enum rk_op op, uint64_t len, uint64_t off)
{
    int r = 0;
    pthread_mutex_lock(&f->lock);
    if (f->fail_all || f->tripped || f->powered_off) {
        r = -EIO;
        goto out;
    }
    uint32_t kind = fault_modifies(op) ? RK_FAULT_WRITE : RK_FAULT_READ;
    if (op != RK_OP_FLUSH) {
        for (unsigned i = 0; i < f->nranges; i++) {
            if ((f->ranges[i].which & kind) &&
                fault_overlap(off, len, f->ranges[i].off, f->ranges[i].len)) {
                r = -EIO;
                goto out;
            }
        }
    }
    if (f->countdown_on && (op == RK_OP_WRITE || op == RK_OP_WRITE_ZEROES)) {
        if (f->countdown == 0) {
            f->tripped = true;
            r = -EIO;
            goto out;
        }
        f->countdown--;
    }
out:
    pthread_mutex_unlock(&f->lock);
    return r;
}

/*
 * Before a modifying request reaches the child: remember the child's old content, so a power
 * cut can undo it. A FUA write is durable at once, so it is not logged; instead the logged old
 * content it overlaps becomes its new data, so undoing older writes cannot erase it.
 */
static int fault_log(struct fault_priv *f, enum rk_op op, const void *buf, uint64_t len,
                     uint64_t off, uint32_t flags)
{
    if (op == RK_OP_WRITE_ZEROES || op == RK_OP_WRITE) {
        if (flags & RK_WRITE_FUA) {
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
    u->seq = ++f->seq;
    u->next = f->undo;
    f->undo = u;
    f->undo_bytes += len;
    if (f->undo_bytes > FAULT_UNDO_MAX)
        drop = fault_cut_older(f, 0, FAULT_UNDO_MAX / 2);
    pthread_mutex_unlock(&f->lock);
    fault_free_undo(drop);
    return 0;
fail:
    free(old);
    free(u);
    return r;
}

/* Everything checked before the child sees a request: injected failures, then the undo log. */
static int fault_before(struct fault_priv *f, enum rk_op op, const void *buf, uint64_t len,
                        uint64_t off, uint32_t flags)
{
    int r = fault_check(f, op, len, off);
    if (r == 0 && fault_modifies(op))
        r = fault_log(f, op, buf, len, off, flags);
    return r;
}

static int fault_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct fault_priv *f = dev->priv;
    int r = fault_before(f, RK_OP_READ, NULL, len, off, 0);
    return r ? r : rk_dev_read(f->child, buf, len, off);
}

static int fault_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                       uint32_t flags)
{
    struct fault_priv *f = dev->priv;
    int r = fault_before(f, RK_OP_WRITE, buf, len, off, flags);
    return r ? r : rk_dev_write(f->child, buf, len, off, flags);
}

/* Flush the child, then drop the undo entries logged before the flush started: those writes
 * had completed, so they are durable now. Later entries stay. */
static int fault_flush(struct rk_dev *dev)
{
    struct fault_priv *f = dev->priv;
    int r = fault_check(f, RK_OP_FLUSH, 0, 0);
    if (r)
        return r;
    pthread_mutex_lock(&f->lock);
    uint64_t upto = f->seq;
    pthread_mutex_unlock(&f->lock);
    r = rk_dev_flush(f->child);
    if (r)
        return r;
    pthread_mutex_lock(&f->lock);
    struct fault_undo *drop = fault_cut_older(f, upto, UINT64_MAX); /* newest first */
    pthread_mutex_unlock(&f->lock);
    fault_free_undo(drop);
    return 0;
}

static int fault_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct fault_priv *f = dev->priv;
    int r = fault_before(f, RK_OP_DISCARD, NULL, len, off, 0);
    return r ? r : rk_dev_discard(f->child, len, off);
}

static int fault_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    struct fault_priv *f = dev->priv;
    int r = fault_before(f, RK_OP_WRITE_ZEROES, NULL, len, off, flags);
    return r ? r : rk_dev_write_zeroes(f->child, len, off, flags);
}

/* Reads and writes go down asynchronously when the child allows it; the rest synchronously. */
static void fault_submit(struct rk_dev *dev, struct rk_io *io)
{
    struct fault_priv *f = dev->priv;
    int r;
    switch (io->op) {
    case RK_OP_READ:
    case RK_OP_WRITE:
        if (!f->forward_async)
            break;
        r = fault_before(f, io->op, io->buf, io->len, io->off, io->flags);
        if (r)
            rk_io_complete(io, r);
        else
            f->child->ops->submit(f->child, io);
        return;
    default:
        break;
    }
    switch (io->op) {
    case RK_OP_READ:
        r = fault_read(dev, io->buf, io->len, io->off);
        break;
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
    fault_free_undo(f->undo);
    if (f->own_child)
        rk_dev_close(f->child);
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
    struct rk_dev *dev = rk_dev_alloc(&fault_ops, f, child->name);
    if (!dev) {
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

int rk_fault_power_cut(struct rk_dev *dev)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f)
        return -EINVAL;
    pthread_mutex_lock(&f->lock);
    f->powered_off = true; /* from now on nothing new reaches the child */
    struct fault_undo *log = f->undo;
    f->undo = NULL;
    f->undo_bytes = 0;
    pthread_mutex_unlock(&f->lock);

    int r = 0;
    for (struct fault_undo *u = log; u; u = u->next) { /* newest first */
        int e = rk_dev_write(f->child, u->old, u->len, u->off, 0);
        if (e && !r)
            r = e;
    }
    fault_free_undo(log);
    int e = rk_dev_flush(f->child);
    return r ? r : e;
}

/* One parsed spec item, applied only when the whole spec is valid. */
struct fault_item {
    enum { FAULT_ITEM_FAIL_ALL, FAULT_ITEM_RANGE, FAULT_ITEM_AFTER } kind;
    uint32_t which;
    uint64_t a, b;
};

static int fault_parse_item(const char *item, struct fault_item *it, char *err, size_t errlen)
{
    static const struct {
        const char *prefix;
        uint32_t which;
    } range_items[] = {
        {"read-eio=", RK_FAULT_READ},
        {"write-eio=", RK_FAULT_WRITE},
        {"eio=", RK_FAULT_READ | RK_FAULT_WRITE},
    };
    if (!strcmp(item, "fail-all")) {
        it->kind = FAULT_ITEM_FAIL_ALL;
        return 0;
    }
    if (!strncmp(item, "fail-after-writes=", 18)) {
        it->kind = FAULT_ITEM_AFTER;
        if (rk_parse_u64(item + 18, &it->a)) {
            rk_set_err(err, errlen, "fault spec: '%s': N must be a decimal count", item);
            return -EINVAL;
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof(range_items) / sizeof(range_items[0]); i++) {
        size_t n = strlen(range_items[i].prefix);
        if (strncmp(item, range_items[i].prefix, n))
            continue;
        char val[64];
        const char *plus = strchr(item + n, '+');
        size_t offlen = plus ? (size_t)(plus - (item + n)) : 0;
        it->kind = FAULT_ITEM_RANGE;
        it->which = range_items[i].which;
        if (!plus || offlen >= sizeof(val)) {
            rk_set_err(err, errlen, "fault spec: '%s': expected OFF+LEN (e.g. 1M+4K)", item);
            return -EINVAL;
        }
        memcpy(val, item + n, offlen);
        val[offlen] = '\0';
        if (rk_parse_size(val, &it->a) || rk_parse_size(plus + 1, &it->b)) {
            rk_set_err(err, errlen, "fault spec: '%s': bad size in OFF+LEN (e.g. 1M+4K)", item);
            return -EINVAL;
        }
        if (it->b == 0 || it->a + it->b < it->a) {
            rk_set_err(err, errlen, "fault spec: '%s': LEN must be > 0 and OFF+LEN must fit", item);
            return -EINVAL;
        }
        return 0;
    }
    rk_set_err(err, errlen,
               "fault spec: unknown item '%s' (expected fail-all, read-eio=OFF+LEN, "
               "write-eio=OFF+LEN, eio=OFF+LEN or fail-after-writes=N)",
               item);
    return -EINVAL;
}

int rk_fault_apply_spec(struct rk_dev *dev, const char *spec, char *err, size_t errlen)
{
    struct fault_priv *f = fault_priv_of(dev);
    struct fault_item items[FAULT_MAX_ITEMS];
    unsigned nitems = 0, nranges = 0;
    char *copy = NULL;
    int r = -EINVAL;

    if (!f) {
        rk_set_err(err, errlen, "fault spec: not a fault device");
        return -EINVAL;
    }
    if (!spec || !*spec)
        return 0; /* nothing to inject: the device just passes through (power cut still works) */
    copy = strdup(spec);
    if (!copy) {
        r = -ENOMEM;
        goto out;
    }
    for (char *item = copy; item;) {
        char *comma = strchr(item, ',');
        if (comma)
            *comma = '\0';
        if (!*item) {
            rk_set_err(err, errlen, "fault spec: empty item in '%s'", spec);
            goto out;
        }
        if (nitems == FAULT_MAX_ITEMS) {
            rk_set_err(err, errlen, "fault spec: more than %d items", FAULT_MAX_ITEMS);
            goto out;
        }
        if (fault_parse_item(item, &items[nitems], err, errlen))
            goto out;
        if (items[nitems++].kind == FAULT_ITEM_RANGE)
            nranges++;
        item = comma ? comma + 1 : NULL;
    }
    pthread_mutex_lock(&f->lock);
    bool room = f->nranges + nranges <= FAULT_MAX_RANGES;
    pthread_mutex_unlock(&f->lock);
    if (!room) {
        rk_set_err(err, errlen, "fault spec: more than %d EIO ranges", FAULT_MAX_RANGES);
        goto out;
    }
    for (unsigned i = 0; i < nitems; i++) {
        switch (items[i].kind) {
        case FAULT_ITEM_FAIL_ALL:
            rk_fault_fail_all(dev, true);
            break;
        case FAULT_ITEM_AFTER:
            rk_fault_fail_after_writes(dev, items[i].a);
            break;
        case FAULT_ITEM_RANGE:
            if (rk_fault_add_range(dev, items[i].which, items[i].a, items[i].b)) {
                rk_set_err(err, errlen, "fault spec: more than %d EIO ranges", FAULT_MAX_RANGES);
                goto out;
            }
            break;
        }
    }
    r = 0;
out:
    free(copy);
    return r;
}
