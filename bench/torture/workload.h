/* The fast torture driver's workload (docs/TORTURE.md "The fast driver"): random stamped writes,
 * FUA writes and FLUSHes over the volume's top device, either called directly from several
 * threads (rk_dev path) or sent over a socketpair to the real NBD server in-process (NBD path),
 * with the bookkeeping of what each acknowledgement made durable. */
#ifndef RK_TORTURE_WORKLOAD_H
#define RK_TORTURE_WORKLOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raidkit/device.h"
#include "stamp.h"

#define WL_RAND_BLOCKS   8u  /* blocks per random write, 1..8 */
#define WL_STREAM_BLOCKS 12u /* blocks per write of the sequential stream (a 48 KiB stripe) */
#define WL_MAX_BLOCKS    12u /* blocks per write at most */
#define WL_CHUNK_BLOCKS  4u  /* blocks per chunk of the driver's arrays (16 KiB) */

enum wl_src { WL_SRC_NONE = 0, WL_SRC_FLUSH, WL_SRC_FUA };

/* The state of one cycle's workload. Gens are global per cycle (one per write), so the
 * generations written to one block increase in time (no two writes in flight overlap). */
struct wl {
    pthread_mutex_t mu;
    uint8_t key[STAMP_KEY];
    uint64_t nblocks;  /* array blocks of STAMP_BLOCK bytes */
    uint8_t *busy;     /* block has a write in flight */
    uint32_t *acked;   /* newest acknowledged generation per block */
    uint32_t *durable; /* durable generation per block (0: the zero block) */
    uint8_t *src;      /* enum wl_src of durable */
    uint32_t *snap;    /* acked[] when the FLUSH in flight was sent */
    uint32_t *issued;  /* newest generation sent to each block (acknowledged or not), 0 = none */
    bool flushing;     /* one FLUSH in flight at most */
    uint32_t gen;      /* last generation handed out */
    uint64_t next;     /* where the sequential stream's next write starts (block index) */
    bool stream;       /* this cycle has the stream (3 seeds of 4: the others keep more of the
                        * dirty + degraded starts provable, a whole-stripe entry never is) */
    /* raid5/raid6 (n 0: other levels): members, parity blocks per stripe and the slot the
     * check will remove or fail (wl_ahead leaves its chunk out) */
    struct {
        uint32_t n, np, slot;
    } lay;
    _Atomic bool stop; /* a request failed (the cut): issue nothing more */
    uint64_t max_ops;  /* safety bound on requests per cycle */
    /* Overrides of the mix (0: the defaults above): FLUSH percent, and FUA percent of the
     * writes (drawn apart from the stream's own FUA choice). rk_torture --flush-pct/--fua-pct. */
    unsigned flush_pct, fua_pct;
    /* The MAC of every stamp written, by (block, generation): open addressing, under mu; lets
     * the verify compare a block exactly without hashing 4 KiB again (stamp_match). */
    struct wl_mac *macs;
    uint64_t nmacs, capmacs; /* capmacs a power of two */
    /* counters (under mu) */
    uint64_t ops, writes, fuas, flushes, failed;
    int first_err; /* -errno of the first failed request */
};

struct wl_mac {
    uint64_t key; /* (block << 32 | generation) + 1; 0 = free */
    uint8_t mac[32];
};

/* One request. */
struct wl_op {
    bool flush;
    bool fua;
    uint64_t start; /* first block */
    uint32_t n;     /* blocks */
    uint32_t g;     /* generation */
};

/* Set up w for an array of nblocks blocks with a key derived from seed. Returns 0 / -ENOMEM. */
int wl_init(struct wl *w, uint64_t nblocks, uint64_t seed, uint64_t max_ops);

/* Free w's arrays. */
void wl_free(struct wl *w);

/* Choose the next request with generator state *rng: a FLUSH (about 8%, only when none is in
 * flight; acked[] is snapshotted now, as the request is about to be sent) or a write of 1..8
 * blocks (FUA about 14%) whose blocks are then marked busy and given a new generation.
 * Returns true with *op, false when w->stop is set or max_ops reached. */
bool wl_pick(struct wl *w, uint64_t *rng, struct wl_op *op);

/* Fill buf (op->n * STAMP_BLOCK bytes) with the stamps of op's blocks and remember their MACs.
 * Returns 0 or -ENOMEM. */
int wl_stamp(struct wl *w, const struct wl_op *op, uint8_t *buf);

/* Record op's completion: r == 0 acknowledged (a write: acked; FUA: durable; a FLUSH: every
 * snapshotted acknowledgement durable), else failed (sets stop). */
void wl_done(struct wl *w, const struct wl_op *op, int r);

/* Run the workload on dev from nthreads threads (rk_dev_write / rk_dev_flush) until stop.
 * Returns 0 or -errno (thread creation). */
int wl_run_dev(struct wl *w, struct rk_dev *dev, int nthreads, uint64_t seed);

/* Run the workload through the real NBD server in-process: dev served over one end of a
 * socketpair (RK_NBD_SOURCE_CONN_FD, workers worker threads), a client on the other end with up
 * to qd requests in flight, until stop; then the connection is closed and the server ends.
 * Returns 0 or -errno (setup, handshake or protocol error, with a message in err). */
int wl_run_nbd(struct wl *w, struct rk_dev *dev, int qd, uint64_t seed, char *err, size_t errlen);

/* Per-block classification of one verify pass (counts in blocks). */
struct wl_verify {
    uint64_t old, neu, lost_flush, lost_fua, garbage, read_errors;
    uint64_t unproven;   /* blocks not judged: the log replay left their stripe as it was */
    uint64_t first_bad;  /* block index of the first bad block, UINT64_MAX when none */
    int64_t first_bad_g; /* what it held: generation, or -1 garbage, -2 read error */
};

/* Blocks a verify does not judge (wl_verify): true for block b when its content is not promised
 * (a forced start left its stripe's parity as it was and b is rebuilt from it). */
typedef bool (*wl_skip_fn)(void *ctx, uint64_t b);

/* Read every block of dev and classify it against w: old (the durable generation), new (a later
 * one), lost_flush / lost_fua (older than durable: a flushed or FUA write lost), garbage (no
 * valid stamp for this block), read_errors; blocks for which skip (NULL: none) is true only
 * count as unproven. */
void wl_verify(const struct wl *w, struct rk_dev *dev, struct wl_verify *v, wl_skip_fn skip,
               void *ctx);

/* True when v holds no lost, garbage or unreadable block. */
bool wl_verify_ok(const struct wl_verify *v);

/* splitmix64 step: the driver's generator. */
uint64_t wl_rand(uint64_t *state);

#endif
