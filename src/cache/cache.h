/* SSD cache tier: the cache as an rk_dev layer over a backing volume (docs/ARCHITECTURE.md
 * "Cache"). Modes writethrough, writeback, writearound and none; a flusher thread that writes
 * dirty blocks back; cache-device failure handling; online mode switch, detach and attach.
 *
 *   [cache layer] -> backing (raid device)
 *        \-> cache device (SSD member: file [-> emul] [-> fault]); metadata: src/cache/meta.h
 *
 * Durability order (every mode): a block's data is durable on the cache device (flush) before
 * the metadata record that maps it is committed (rk_cache_meta_commit), and both before a FLUSH or
 * FUA write is acknowledged; writethrough FUA is durable on the backing too. A block is marked
 * clean only after the backing device flushed its written-back data. After an unclean shutdown
 * every clean mapping is dropped at open (only dirty blocks are trusted), so a backing write that
 * landed before its invalidation was committed is never shadowed by a stale cached copy.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef RK_CACHE_CACHE_H
#define RK_CACHE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* meta.h uses struct rk_cache_meta in parameter lists before declaring it. */
struct rk_cache_meta;
#include "cache/meta.h"
#include "cache/policy.h"
#include "raidkit/device.h"

/* State of the cache layer (status "state"). */
enum rk_cache_state {
    RK_CACHE_STATE_OK = 0,    /* cache device in use */
    RK_CACHE_STATE_FAILED,    /* cache device failed: passthrough; dirty blocks read EIO */
    RK_CACHE_STATE_DETACHING, /* detach running: writes bypass, dirty blocks drain */
    RK_CACHE_STATE_DETACHED,  /* no cache device: passthrough */
};

/* "ok", "failed", "detaching", "detached"; "?" out of range. */
const char *rk_cache_state_name(enum rk_cache_state s);

/* Options of rk_cache_open. */
struct rk_cache_opts {
    uint8_t array_uuid[16]; /* the backing array (the cache must be bound to it) */
    /* The array was not shut down cleanly: drop every clean mapping at open (only dirty blocks
     * are trusted after a crash). */
    bool unclean;
    /* Writeback rate limit of the flusher in bytes/s between the watermarks (0 = unlimited);
     * a drain (mode switch, detach) is never limited. */
    uint64_t writeback_rate;
    /* Dirty watermarks in percent of the cache blocks: the flusher starts above high and stops
     * below low; 0/0 = defaults 50/10. */
    uint32_t high_pct, low_pct;
    /* Stripe width of the backing in bytes (raid5/6: data chunks x chunk), 0 = none: the
     * flusher writes back whole stripes first. */
    uint64_t stripe;
};

struct rk_cache;

/*
 * Open the cache layer over backing with the cache device cdev (named name in messages): loads
 * the metadata (rk_cache_meta_open for o->array_uuid and backing->size: a cache bound to another
 * array, stale or corrupt is refused with err naming it), drops clean mappings when o->unclean,
 * builds the policy and starts the flusher. The layer owns cdev (closed with it), not backing.
 * Returns 0 with *out and *dev (the rk_dev to stack above; close it with rk_dev_close, which
 * stops the flusher, commits the metadata and closes cdev; dirty blocks stay dirty), or -errno
 * with one line in err.
 */
int rk_cache_open(struct rk_dev *backing, struct rk_dev *cdev, const char *name,
                  const struct rk_cache_opts *o, struct rk_cache **out, struct rk_dev **dev,
                  char *err, size_t errlen);

/* The cache of a layer device opened by rk_cache_open (NULL for any other device). */
struct rk_cache *rk_cache_of(struct rk_dev *dev);

/*
 * Switch the mode online. Leaving writeback drains every dirty block first (the new mode takes
 * new requests at once; the new mode is recorded durably once the drain is done). Blocks until
 * done. Returns 0, -ENODEV (no cache device attached: detached or failed), -EIO (drain failed)
 * with one line in err.
 */
int rk_cache_set_mode(struct rk_cache *c, enum rk_cache_mode mode, char *err, size_t errlen);

/*
 * Detach online: writes bypass from now on, every dirty block is written back, the backing is
 * flushed, every mapping is removed and the mode recorded as none (committed), then the metadata
 * is closed and the layer is a passthrough. Blocks until done. Returns 0, -ENODEV (already
 * detached), -EIO (the cache device failed with dirty data: nothing detached) with err.
 */
int rk_cache_detach(struct rk_cache *c, char *err, size_t errlen);

/*
 * Attach online. With a failed cache and path equal to the current device, re-probe it (the
 * cache recovers when it is readable and its metadata commits again). With a detached layer,
 * open path (a cache created for this array), refuse one holding dirty blocks (written back
 * over newer data otherwise), drop every clean mapping (the backing changed meanwhile) and use it
 * in its recorded mode. Returns 0 or -errno with err (-EBUSY: a cache is attached and working).
 */
int rk_cache_attach(struct rk_cache *c, const char *path, uint32_t file_flags, char *err,
                    size_t errlen);

/* Copy the attached cache's UUID (rk_cache_meta_uuid) into out: 0, or -ENODEV when detached
 * (or its metadata is lost). */
int rk_cache_uuid(struct rk_cache *c, uint8_t out[16]);

/* Counters and state for status (cache "object"); all sizes bytes. */
struct rk_cache_status {
    enum rk_cache_state state;
    enum rk_cache_mode mode;
    char path[256];
    uint32_t block_size;
    uint64_t blocks, mapped, dirty;    /* cache blocks */
    uint64_t read_hits, read_misses;   /* requests' cache blocks */
    uint64_t write_hits, write_misses; /* cache blocks */
    uint64_t bypass[RK_CACHE_REASONS]; /* requests per reason (ADMIT counts admitted fills) */
    uint64_t written_back;             /* bytes written back since open */
    double writeback_rate;             /* bytes/s over the last seconds */
    double eta;                        /* seconds to drain at that rate, -1 unknown */
    uint64_t io_errors;                /* cache-device errors seen */
    struct rk_cache_meta_stats meta;   /* zero when detached */
};

/* Fill *st with c's state. */
void rk_cache_status(struct rk_cache *c, struct rk_cache_status *st);

/* Debug hook (tests: `cache fault` through the control socket): apply a fault spec to the cache
 * device when it is a fault member (rk_fault_apply_spec), "clear" clears every fault. 0, -ENODEV
 * no fault member, -EINVAL bad spec with err. */
int rk_cache_debug_fault(struct rk_cache *c, const char *spec, char *err, size_t errlen);

/* Set the fault member the debug hook drives (the fault wrapper in the cache device's stack,
 * not owned). */
void rk_cache_set_fault_dev(struct rk_cache *c, struct rk_dev *fault);

#endif
