/* The fault member's power domains and power cuts (docs/TORTURE.md "Power cut model"): which
 * members lose power together, when (cut-after), and what of each member's unflushed writes
 * survives (keep=none|all|random per 4 KiB block). The I/O path is in fault.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "member/fault_int.h"

void fault_free_undo(struct fault_undo *u)
{
    while (u) {
        struct fault_undo *next = u->next;
        free(u->old);
        free(u);
        u = next;
    }
}

static struct fault_power fault_shared = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* After the cut of a domain with on-cut=hang, a member request never returns: a machine without
 * power sends no reply, so nothing above can acknowledge anything after the cut instant. The
 * process is meant to be killed (SIGKILL) once "power cut complete" is logged. */
void fault_dead(struct fault_power *pw)
{
    while (pw->hang)
        sleep(3600);
}

/* Leave the power domain (the shared one resets when its last member leaves). */
void fault_power_leave(struct fault_priv *f)
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
        atomic_store(&pw->cut, false);
        pw->hang = false;
        pw->countdown_on = false;
    }
    pthread_mutex_unlock(&pw->lock);
}

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
uint64_t fault_seed_state(const struct fault_priv *f, uint64_t seed)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = f->child->name; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    return seed ^ h;
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

int rk_fault_set_hang(struct rk_dev *dev, bool hang)
{
    struct fault_priv *f = fault_priv_of(dev);
    if (!f)
        return -EINVAL;
    pthread_mutex_lock(&f->power->lock);
    f->power->hang = hang;
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
int fault_power_cut_domain(struct fault_power *pw)
{
    int r = 0;
    pthread_mutex_lock(&pw->lock);
    atomic_store(&pw->cut, true);
    for (unsigned i = 0; i < pw->nmembers; i++) {
        pthread_mutex_lock(&pw->members[i]->lock);
        pw->members[i]->powered_off = true; /* from now on nothing new reaches the child */
        pthread_mutex_unlock(&pw->members[i]->lock);
    }
    for (unsigned i = 0; i < pw->nmembers; i++) {
        struct fault_priv *m = pw->members[i];
        pthread_mutex_lock(&m->lock);
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

bool rk_fault_was_cut(struct rk_dev *dev)
{
    struct fault_priv *f = fault_priv_of(dev);
    return f && atomic_load(&f->power->cut);
}
