/* The cache layer's shared state (cache.c: open/close/locks/failure, cache_io.c: the data path,
 * cache_flush.c: flusher, drain, mode switch, detach, attach). docs/ARCHITECTURE.md "Cache".
 *
 * Locks, in order: c->rw (read: every request and the flusher; write: detach/attach switching
 * c->meta) -> block stripes (ascending index; a request holds the stripes of every cache block it
 * covers for its whole duration, the flusher one stripe per block) -> c->lock (index, policy,
 * per-block mirror, counters; never held across I/O). c->lock may trylock a stripe (eviction:
 * a block whose stripe is held is busy).
 */
#ifndef RK_CACHE_CACHE_INT_H
#define RK_CACHE_CACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "cache/cache.h"

/* Block stripes: cache block b (backing block number) is guarded by stripe b % CACHE_STRIPES. */
#define CACHE_STRIPES 4096u

/* Per cache block mirror of the index (cblock -> bblock), for eviction and the flusher. */
struct cache_slot {
    uint64_t bblock;
    uint32_t gen; /* raised by every data write to the block (flusher: unchanged since read?) */
    uint8_t mapped, dirty;
};

struct rk_cache {
    struct rk_dev *dev;     /* the layer */
    struct rk_dev *backing; /* not owned */
    struct rk_dev *cdev;    /* cache device stack top, owned (NULL when detached) */
    struct rk_dev *fault;   /* fault member in cdev's stack (debug hook), or NULL */
    char path[256];
    uint8_t uuid[16];
    uint64_t stripe;            /* backing stripe width hint, bytes */
    struct rk_cache_meta *meta; /* NULL when detached */
    /* A recovery could not load the metadata again: dirty blocks unknown, every request fails
     * with EIO (until attach succeeds). */
    bool lost;
    struct rk_cache_policy *pol;
    struct cache_slot *slots; /* [blocks] */
    uint32_t bs;
    uint64_t blocks, data_off;

    pthread_rwlock_t rw;
    /* Write: cache_sync's flush + commit; read: queueing a new mapping (cache_map of a filled
     * block), so none is committed before its data is flushed. Before c->lock. */
    pthread_rwlock_t synclock;
    pthread_mutex_t stripes[CACHE_STRIPES];
    pthread_mutex_t lock;
    pthread_cond_t cond; /* flusher wake-up and drain progress */

    _Atomic int mode;           /* enum rk_cache_mode, for new requests */
    _Atomic int state;          /* enum rk_cache_state */
    _Atomic int64_t last_probe; /* ms: last recovery attempt of a failed cache */
    /* Flusher (under c->lock). */
    pthread_t thread;
    bool thread_started, stop;
    int drain;                /* > 0: write back every dirty block, no rate limit */
    int drain_err;            /* last batch's error (0 ok) */
    bool active;              /* between the watermarks: draining down to low */
    pthread_mutex_t ctl;      /* serialises mode switch, detach, attach */
    uint64_t cursor;          /* next bblock to scan from */
    uint64_t rate, high, low; /* bytes/s; watermarks in blocks */
    uint32_t high_pct, low_pct;
    /* Counters (atomic). */
    _Atomic uint64_t rhit, rmiss, whit, wmiss, wb_bytes, io_errors;
    _Atomic uint64_t bypass[RK_CACHE_REASONS];
    double wb_rate; /* bytes/s, smoothed (c->lock) */
};

/* ---- cache.c ---- */
/* Milliseconds of a monotonic clock. */
int64_t cache_now_ms(void);
/* Lock / unlock the stripes of the cache blocks covering [off, off+len). */
void cache_lock_range(struct rk_cache *c, uint64_t off, uint64_t len);
void cache_unlock_range(struct rk_cache *c, uint64_t off, uint64_t len);
/* A cache-device I/O failed with r: count it, enter FAILED (logged once). */
void cache_failed(struct rk_cache *c, int r);
/* In FAILED state: try the cache device again (read, flush), and when it answers load its
 * metadata again (only dirty blocks trusted): OK. Caller holds no cache lock. 0 or -errno. */
int cache_recover(struct rk_cache *c);
/* Load cdev's metadata into c (open, attach, recovery: replacing a failed instance only once
 * the new one loaded): the index mirror, the policy, the mode; clean mappings dropped when
 * drop_clean. cdev stays the caller's on failure. 0 or -errno with err. */
int cache_load(struct rk_cache *c, struct rk_dev *cdev, const char *name, bool drop_clean,
               char *err, size_t errlen);
/* Flush the cache device, then commit the metadata (data durable -> metadata durable). 0, or
 * -errno after cache_failed. */
int cache_sync(struct rk_cache *c);
/* Cache device byte offset of cblock's data (+ in-block offset). */
static inline uint64_t cache_coff(const struct rk_cache *c, uint64_t cblock, uint64_t in)
{
    return c->data_off + cblock * c->bs + in;
}
/* Index updates with the mirror kept in step; caller holds c->lock. */
void cache_map(struct rk_cache *c, uint64_t cblock, uint64_t bblock, bool dirty);
void cache_unmap(struct rk_cache *c, uint64_t cblock);
void cache_set_dirty(struct rk_cache *c, uint64_t cblock, bool dirty);
/* Take a free cache block for bblock (evicting clean idle blocks and committing their unmaps
 * when none is free). Caller holds bblock's stripe, not c->lock. 0 with *cblock or -ENOSPC. */
int cache_alloc(struct rk_cache *c, uint64_t *cblock);
/* Load the mirror from the index (every bblock looked up), dropping clean mappings when
 * drop_clean; inserts held blocks into the policy. Returns dirty blocks found. */
uint64_t cache_load_index(struct rk_cache *c, bool drop_clean);

/* ---- cache_io.c ---- */
extern const struct rk_dev_ops cache_dev_ops;

/* Free the metadata, policy and mirror (detach, close) and close the cache device: DETACHED. */
void cache_unload(struct rk_cache *c);

/* ---- cache_flush.c ---- */
/* Start / stop the flusher thread. */
int cache_flusher_start(struct rk_cache *c);
void cache_flusher_stop(struct rk_cache *c);
/* Write back every dirty block (drain); 0 or -EIO (cache or backing failed, blocks left). */
int cache_drain(struct rk_cache *c);

#endif
