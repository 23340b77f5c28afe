/* SSD cache tier: admission, sequential bypass and eviction (docs/ARCHITECTURE.md "Cache").
 *
 * Pure logic over block numbers: no I/O, no clock, no locking. Not thread-safe: the caller
 * serialises every call (the cache holds its index lock around them). Backing-block numbers
 * (bblock) are backing offsets divided by the cache block size; cache-block numbers (cblock) are
 * slots of the cache device's data area, in [0, cache_blocks).
 */
#ifndef RK_CACHE_POLICY_H
#define RK_CACHE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why a request was (not) cached; counted per reason in `status` ("why isn't my data cached?"). */
enum rk_cache_reason {
    RK_CACHE_ADMIT = 0,         /* cached */
    RK_CACHE_BYPASS_SEQUENTIAL, /* continues a sequential stream longer than seq_cutoff */
    RK_CACHE_BYPASS_COLD,       /* read miss of a block not seen often enough yet (admission) */
    RK_CACHE_BYPASS_MODE,       /* the mode does not cache it (writearound write, mode none) */
    RK_CACHE_BYPASS_FULL,       /* no free block and no clean block to evict (all dirty/busy) */
    RK_CACHE_BYPASS_FAILED,     /* the cache device failed; passthrough */
    RK_CACHE_BYPASS_DETACHING,  /* detach in progress */
    RK_CACHE_BYPASS_UNALIGNED,  /* partial cache block that is not cached (read-modify not worth it)
                                 */
    RK_CACHE_REASONS
};

/* Short lowercase name of a reason ("admit", "sequential", "cold", "mode", "full", "failed",
 * "detaching", "unaligned"), used as the JSON key in `status --json`; "?" for out of range. */
const char *rk_cache_reason_name(enum rk_cache_reason r);

struct rk_cache_policy_params {
    uint64_t cache_blocks; /* cache blocks in the data area, >= 1 */
    uint32_t block_size;   /* bytes, power of two >= 4096 */
    uint64_t seq_cutoff;   /* bytes: a stream longer than this bypasses; 0 = never bypass */
    uint32_t admit_hits;   /* read misses of one block before it is admitted; 1 = at once */
    uint32_t streams;      /* sequential streams tracked at once, >= 1 */
};

/* Fills *p with the defaults for a cache of cache_blocks blocks of block_size bytes (documented
 * in docs/CLI.md "cache": seq_cutoff 4 MiB, admit_hits 2, streams 64). */
void rk_cache_policy_defaults(struct rk_cache_policy_params *p, uint64_t cache_blocks,
                              uint32_t block_size);

/* Allocates a policy for p (copied). Returns NULL with errno EINVAL (bad parameters) or ENOMEM.
 * The caller frees it with rk_cache_policy_free (NULL is accepted). */
struct rk_cache_policy *rk_cache_policy_new(const struct rk_cache_policy_params *p);
void rk_cache_policy_free(struct rk_cache_policy *pol);

/* Called for every request (read or write) of length bytes at backing offset bytes. Returns true
 * when it continues a sequential stream whose length now exceeds seq_cutoff (bypass it). */
bool rk_cache_policy_sequential(struct rk_cache_policy *pol, uint64_t offset, uint64_t length);

/* Read miss of backing block bblock: true = admit (cache it now); false = not yet (remembered;
 * count it as RK_CACHE_BYPASS_COLD). A scan of blocks seen once never evicts the hot set. */
bool rk_cache_policy_admit_read(struct rk_cache_policy *pol, uint64_t bblock);

/* cblock now holds data (after a fill or a cached write). */
void rk_cache_policy_insert(struct rk_cache_policy *pol, uint64_t cblock);
/* cblock was hit (read or overwritten). */
void rk_cache_policy_touch(struct rk_cache_policy *pol, uint64_t cblock);
/* cblock no longer holds data (invalidated or freed by the caller). No-op if not held. */
void rk_cache_policy_remove(struct rk_cache_policy *pol, uint64_t cblock);

/* Picks a victim among the held blocks for which can_evict(ctx, cblock) is true (clean, no I/O
 * in flight) and removes it from the policy. Returns 0 with *cblock set, or -ENOSPC when no held
 * block is evictable. */
int rk_cache_policy_evict(struct rk_cache_policy *pol,
                          bool (*can_evict)(void *ctx, uint64_t cblock), void *ctx,
                          uint64_t *cblock);

/* Bytes of memory the policy holds (for the per-TiB figure in docs/). */
size_t rk_cache_policy_memory(const struct rk_cache_policy *pol);

#endif
