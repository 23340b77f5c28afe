/* Stripe locks and stripe work buffers of the parity levels (raid5/raid6): requests to the same
 * stripe are ordered, requests to different stripes run in parallel, buffers are preallocated. */
#ifndef RK_RAID_STRIPE_H
#define RK_RAID_STRIPE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Hashed stripe locks: stripe s is guarded by bucket s % STRIPE_BUCKETS. Two stripes that share
 * a bucket are serialised needlessly, which is only a (rare) loss of parallelism. A caller that
 * needs several stripes at once takes them with stripe_lock_range, which locks their buckets in
 * ascending bucket order, each once: every locker uses that order, so no deadlock.
 */
#define STRIPE_BUCKETS 256

struct stripe_locks {
    pthread_mutex_t bucket[STRIPE_BUCKETS];
};

void stripe_locks_init(struct stripe_locks *sl);
void stripe_locks_destroy(struct stripe_locks *sl);
/* Lock / unlock stripes [first, first+count) (count >= 1). */
void stripe_lock_range(struct stripe_locks *sl, uint64_t first, uint64_t count);
void stripe_unlock_range(struct stripe_locks *sl, uint64_t first, uint64_t count);

/*
 * A bounded pool of equally sized work buffers (4096-aligned), all allocated at init. get()
 * waits while the pool is empty; a thread holds at most one buffer at a time, so waiting cannot
 * deadlock.
 */
/* At least the default worker threads (32) plus the jobs: on slow members (SSD, HDD) a queue of
 * small writes is then bounded by the members, not by buffers (16 capped raid5 4K random writes
 * at qd 32 on emulated SSDs at 16 in flight). The 64 MiB budget (R5_POOL_BYTES) bounds the
 * memory. */
#define STRIPE_POOL_MAX 64

struct stripe_pool {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int nbuf;
    int nfree;
    size_t size;
    char *free[STRIPE_POOL_MAX];
    char *all[STRIPE_POOL_MAX];
};

/* nbuf buffers (1..STRIPE_POOL_MAX) of size bytes each. Returns 0 or -ENOMEM. */
int stripe_pool_init(struct stripe_pool *p, int nbuf, size_t size);
void stripe_pool_destroy(struct stripe_pool *p);
char *stripe_pool_get(struct stripe_pool *p);
void stripe_pool_put(struct stripe_pool *p, char *buf);

#endif
