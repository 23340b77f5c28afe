/* Pure device-model arithmetic of the emul member (SSD channels and rate gates, HDD seek,
 * rotation, zones, queue picking), separate from threads and clocks so tests can use a fake clock.
 */
#ifndef RK_MEMBER_EMUL_MODEL_H
#define RK_MEMBER_EMUL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "raidkit/emul.h"

#define EMUL_MAX_CHANNELS 64
#define EMUL_DIR_READ     0
#define EMUL_DIR_WRITE    1

/* Kinds of queued HDD commands. */
enum emul_hkind {
    EMUL_H_IO = 0,      /* media access: read or write */
    EMUL_H_BARRIER = 1, /* flush: nothing queued after it may pass it */
};

/* One command waiting for the HDD head. */
struct emul_hreq {
    uint64_t off, len;
    uint8_t dir;  /* EMUL_DIR_READ / EMUL_DIR_WRITE */
    uint8_t kind; /* enum emul_hkind */
};

/* Model state. All times are nanoseconds on the caller's clock (monotonic, or fake in tests). */
struct emul_model {
    struct rk_emul_params p;
    uint64_t capacity; /* modelled bytes (zones and seek distances span it) */
    /* SSD: the rate gate reads and writes share (earliest start of the next request) and the
     * channel free times */
    uint64_t gate;
    uint64_t chan[EMUL_MAX_CHANNELS];
    /* HDD */
    uint64_t rev_ns;       /* one revolution */
    uint64_t phase_ns;     /* spindle angle at time 0, from the seed */
    double seek_a, seek_b; /* seek(d) = track + a*sqrt(d) + b*d microseconds, d in (0,1] */
    uint64_t head;         /* byte offset under the head: end of the last transfer */
};

/* Check p (rk_emul_params_check) and derive constants. capacity must be > 0. Returns 0 or
 * -EINVAL. */
int emul_model_init(struct emul_model *m, const struct rk_emul_params *p, uint64_t capacity);

/* SSD: a request of len bytes in direction dir arrives at now; returns its completion time.
 *   t0   = max(now, gate);  gate = t0 + max(1e9/iops[dir], len*1e9/bw[dir])  (one budget
 *          for both directions: docs/BENCHMARKS.md "SSD model")
 *   c    = channel free earliest; start = max(t0, chan[c])
 *   done = start + latency + len*1e9/bw;  chan[c] = done */
uint64_t emul_ssd_submit(struct emul_model *m, int dir, uint64_t len, uint64_t now);

/* HDD pieces (each documented in docs/BENCHMARKS.md "Device models"). */
uint64_t emul_hdd_zone_bw(const struct emul_model *m, uint64_t off);     /* bytes/s at off */
uint64_t emul_hdd_track_bytes(const struct emul_model *m, uint64_t off); /* bytes per revolution */
uint64_t emul_hdd_seek_ns(const struct emul_model *m, uint64_t from, uint64_t to);
/* Seek plus rotational wait to reach off, starting to move at time t (0 if off == head). */
uint64_t emul_hdd_position_ns(const struct emul_model *m, uint64_t off, uint64_t t);
/* Whole service time of r started at t: command overhead + position + transfer. */
uint64_t emul_hdd_service_ns(const struct emul_model *m, const struct emul_hreq *r, uint64_t t);
/* Which of the n queued commands the head serves next at time t: the first without reorder;
 * with reorder one that continues the last transfer (anywhere before a barrier), else the
 * shortest positioning time among the first queue_depth before any barrier. */
int emul_hdd_pick(const struct emul_model *m, const struct emul_hreq *q, int n, uint64_t t);
/* Serve r starting at t: moves the head and returns the completion time. */
uint64_t emul_hdd_serve(struct emul_model *m, const struct emul_hreq *r, uint64_t t);

/*
 * The HDD command queue: commands wait here for the one head. Completions are reported through
 * done(arg, ctx) -- for a write acknowledged from the drive cache that happens at arrival, and
 * the media write follows later. Times are the caller's clock.
 */
#define EMUL_QMAX 1024

typedef void emul_done_fn(void *arg, void *ctx);

struct emul_hq {
    struct emul_hreq q[EMUL_QMAX];
    void *ctx[EMUL_QMAX];
    bool acked[EMUL_QMAX];
    int n;
    bool busy, cur_acked;
    uint64_t busy_until; /* completion time of the command under the head */
    void *cur_ctx;
    uint32_t cached; /* writes acknowledged from the cache, not yet on the media */
};

/* Queue r (arriving at now; fua: no cache ack). Returns -EAGAIN when the queue is full. */
int emul_hq_add(struct emul_model *m, struct emul_hq *h, const struct emul_hreq *r, bool fua,
                void *ctx, uint64_t now, emul_done_fn *done, void *arg);
/* Complete every command whose time has come (<= now), starting the next ones back to back. */
void emul_hq_advance(struct emul_model *m, struct emul_hq *h, uint64_t now, emul_done_fn *done,
                     void *arg);

/* The built-in profile table (an entry with an empty name ends it). */
extern const struct rk_emul_params emul_builtin_profiles[];

#endif
