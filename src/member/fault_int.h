/* Internals shared by the fault member's I/O path (fault.c) and its power domains and cuts
 * (fault_power.c). Not a public interface: include/raidkit/member.h is. */
#ifndef RK_MEMBER_FAULT_INT_H
#define RK_MEMBER_FAULT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raidkit/member.h"

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
    /* The cut happened: every member fails everything, and requests still running when it
     * came complete with -EIO (nothing can acknowledge after a power cut). Read without lock
     * by completing requests (the cutter holds lock while it waits for them). */
    _Atomic bool cut;
    bool hang; /* on-cut=hang: after the cut, member requests never complete (whole machine) */
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

/* The fault device's operations (fault.c). */
extern const struct rk_dev_ops fault_ops;

/* The fault device's state, or NULL when dev is not a fault device. */
static inline struct fault_priv *fault_priv_of(struct rk_dev *dev)
{
    return dev && dev->ops == &fault_ops ? dev->priv : NULL;
}

/* Free an undo list (entries and their old content). NULL is accepted. */
void fault_free_undo(struct fault_undo *u);

/* The generator state of f for seed: seed mixed with the child's name (FNV-1a). */
uint64_t fault_seed_state(const struct fault_priv *f, uint64_t seed);

/* Cut the power of every member of pw (see rk_fault_power_cut). Takes pw->lock, then each
 * member's lock; waits for the members' busy requests. Returns 0 or the first -errno. */
int fault_power_cut_domain(struct fault_power *pw);

/* Never returns when pw was cut with on-cut=hang (rk_fault_set_hang); else returns at once. */
void fault_dead(struct fault_power *pw);

/* Leave f's power domain (on close); the shared domain resets when its last member leaves. */
void fault_power_leave(struct fault_priv *f);

#endif
