/*
 * Internal state of the partial parity log shared by raid5_ppl.c (the write step: rings, group
 * commit, reclaim) and raid5_ppl_replay.c (scan, replay, start). docs/FORMAT.md "Partial parity
 * log"; the on-disk codec is raid5_ppl_fmt.c (raid5_ppl.h).
 */
#ifndef RK_RAID5_PPL_INT_H
#define RK_RAID5_PPL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "raid/raid5_int.h"
#include "raid/raid5_ppl.h"

/* Where an entry's log write stands (group commit, r5_ppl_commit). */
enum ppl_wstate { PPL_FILLING, PPL_READY, PPL_WRITING, PPL_DURABLE };

struct ppl_ent {
    uint64_t seq, pos, size;
    enum ppl_wstate ws;
    int result;   /* of its log write, once PPL_DURABLE (0 or -errno) */
    uint64_t run; /* PPL_WRITING: the log write carrying it (its leader's seq) */
    bool done;    /* the stripe write completed (durable after the next member flush) */
    bool durable; /* done and durable: its member writes were FUA, or a flush followed */
    bool partial; /* a partial-stripe entry, of stripe row prow (a window never covers it) */
    uint64_t prow;
};

/* One member's ring: live entries [first, first + count) of q (circular, cap entries). Entries
 * are encoded in place in stage (the ring's image, ring bytes), so that adjacent entries of
 * concurrent writers go out as one member write (r5_ppl_commit). */
struct ppl_ring {
    struct rk_dev *dev; /* member whose head this session wrote; other: adopt it first */
    uint32_t joins;     /* r->joins[slot] then (ppl_ring_current) */
    uint64_t head;      /* next free position (ring bytes) */
    uint64_t retired;   /* the durable retirement point (head block) */
    uint32_t first, count;
    unsigned writing;    /* log writes of this ring in flight */
    uint64_t lat_ns;     /* moving mean duration of its log writes (group commit decides by it) */
    pthread_cond_t cond; /* a log write of this ring ended, or the ring was adopted */
    int waiters;         /* threads waiting on cond (r5_ppl_commit) */
    struct ppl_ent *q;
    char *stage;
};

/* A log window (raid5_ppl_full.c, r5_ppl_log_stream): one RK_PPL_FULL entry covering rows
 * [row, end) ahead of a sequential stream, so the stream's next full-stripe runs log nothing. */
#define PPL_NWIN        4
#define PPL_WIN_BYTES   (32ull << 20) /* array data a window covers */
#define PPL_WIN_RECLAIM 8             /* windows opened before a reclaim closes them all */

struct ppl_win {
    uint64_t row, end; /* rows its entry covers */
    uint64_t ulo, uhi; /* rows a write may still take it for (a newer entry of a row cuts it) */
    uint64_t seq;      /* its entry (0 while the creator logs it) */
    uint32_t slots;    /* slots its entry is on */
    uint64_t span;     /* rows its slots were chosen for (before the clip, full_slots) */
    struct rk_dev *dev[RK_MAX_MEMBERS]; /* their members then (a replaced one: log afresh) */
    uint32_t joins[RK_MAX_MEMBERS];     /* and r->joins[] then (a member that came back) */
    unsigned holds;                     /* writes in flight under it, its creator included */
    bool open;                          /* new writes may take it */
    bool used;                          /* open, held or being logged */
};

struct r5_ppl {
    pthread_mutex_t lock;         /* everything below; never held across I/O */
    pthread_cond_t cond;          /* an entry completed, or a reclaim or adoption ended */
    bool on;                      /* started (rk_raid_log_start); off: writes log nothing */
    bool busy;                    /* one thread reclaims or adopts (outside the lock) */
    int waiters;                  /* threads in ppl_wait */
    uint64_t id, off, size, ring; /* generation, member offset and bytes of the region, ring */
    uint32_t cap;
    uint64_t next_seq;
    char *hbuf; /* head blocks of the busy thread: slot s at s * RK_PPL_BLOCK */
    bool hash;  /* partial entries carry digests of the new data (RAIDKIT_PPL_HASH, default on) */
    uint8_t key[RK_PPL_KEY_BYTES]; /* the log key, written in every head (r5_ppl_start) */
    struct ppl_ring m[RK_MAX_MEMBERS];
    struct ppl_win win[PPL_NWIN];
    uint64_t recent[PPL_NWIN]; /* row ends of the last full-stripe runs (0: none) */
    uint32_t recent_i;
    uint32_t win_made; /* windows opened since the last reclaim (PPL_WIN_RECLAIM) */
    uint64_t win_rows; /* rows of a window: PPL_WIN_BYTES of array data, >= members */
    bool win_on;       /* windows used (RAIDKIT_PPL_WINDOW, default on) */
};

/* One valid live entry found by the scan; payload points into the scan buffer of its slot. */
struct ppl_found {
    struct rk_ppl_entry e;
    const char *payload;
    uint32_t slot;
};

struct ppl_scan {
    char *buf[RK_MAX_MEMBERS]; /* region image of each readable slot, NULL: none */
    struct ppl_found *f;
    size_t nf, cap;
    uint64_t next;      /* > every seq seen, >= every retirement point */
    unsigned untrusted; /* log blocks ignored as corrupt or out of bounds (heads included) */
    uint32_t badhead;   /* slots whose head was not a valid head (bit s): retired unknown */
    bool haskey[RK_MAX_MEMBERS]; /* the slot's head holds a log key (key[slot]) */
    uint8_t key[RK_MAX_MEMBERS][RK_PPL_KEY_BYTES];
};

/* One write of the log as the replay sees it: the copies of one seq found on the members
 * (raid6: P's entry and Q's entry) merged; pp, pq: the partial parities found (NULL: none);
 * dig, key: its digests and the key they were made with (NULL: not provable by digest). */
struct ppl_lent {
    struct rk_ppl_entry e;
    const char *pp, *pq;
    const uint8_t *dig, *key;
};

/* The replay's view while proving entry ls[xi] (ls sorted by seq). trust_absent: no log block
 * was ignored, so the latest live entry that modified a cell is the latest write to it. */
struct ppl_ctx {
    const struct ppl_lent *ls;
    size_t nl, xi;
    bool trust_absent;
};

/* The writer's digests (RK_PPL_HASHED) of the new data of every whole cell that e's ranges
 * cover (window w, touched data chunks of nd): into e->dig (a per-thread buffer, valid until
 * the thread's next call). Returns RK_PPL_HASHED, or 0 with e->dig NULL when L's digests are off
 * (RAIDKIT_PPL_HASH=0) or more than RK_PPL_MAX_DIG would be needed. */
uint32_t r5_ppl_digests(const struct r5_ppl *L, const struct r5_wwin *w, uint32_t touched,
                        uint32_t nd, struct rk_ppl_entry *e);

/*
 * raid5_ppl_prove.c (docs/FORMAT.md "Replay", "Digests"). Columns [s, t) of the chunks of the
 * stripe g of entry c->ls[c->xi].
 *
 * ppl_prove_older: the readable data chunks in chunks, which x's partial parity assumes as x
 * saw them but an older live entry modified, are proven to hold that entry's new data (the
 * content x saw) over every cell of [s, t), by their digests. False when any cell is not.
 *
 * ppl_prove_rebuild: the missing data chunks of g (not in rd) rebuilt from the parity on the
 * members (raid5: P; raid6 one missing: P, else Q; two missing: P and Q) each match, over
 * every cell of [s, t), a version the log proves (x's new data, or the latest older live
 * entry's); then q's data and parity buffers over [s, t) (window offset s - x.lo) are set from
 * that consistent version. False (buffers of [s, t) untouched) when no parity proves one.
 */
bool ppl_prove_older(struct r5_req *q, const struct r5_geo *g, const struct ppl_ctx *c,
                     uint32_t chunks, uint32_t s, uint32_t t);
bool ppl_prove_rebuild(struct r5_req *q, const struct r5_geo *g, const struct ppl_ctx *c,
                       uint32_t rd, uint32_t s, uint32_t t);

/* Write the head block of every slot s with upto[s] != 0, retirement point upto[s], as FUA
 * writes in parallel (one batch). Caller is the busy thread (or the only one: start) and holds
 * no lock. A slot whose write fails is failed and its upto[s] set to 0. Returns the number of
 * failed writes. */
int r5_ppl_write_heads(struct raid_priv *r, struct r5_ppl *L, uint64_t *upto);

/* Read slot's log region and collect into sc its valid entries newer than its head's retirement
 * point (sc->buf[slot] keeps the region image; caller frees it and sc->f). Untrusted blocks are
 * logged and ignored. Holds no lock. */
void r5_ppl_scan_slot(struct raid_priv *r, struct r5_ppl *L, uint32_t slot, struct ppl_scan *sc);

/* Ring m of slot s is the one this session set up for the slot's member: the same device, and
 * no member joined the slot since (one that left and came back may be the same device). Else
 * it must be adopted before any entry goes to it. Lock held (or busy). */
static inline bool ppl_ring_current(struct raid_priv *r, const struct ppl_ring *m, uint32_t s)
{
    return m->dev == r->members[s] && m->joins == atomic_load(&r->joins[s]);
}

/* Wake the threads waiting on L->cond (an entry completed; a reclaim or adoption ended). Lock
 * held. */
static inline void ppl_wake(struct r5_ppl *L)
{
    if (L->waiters)
        pthread_cond_broadcast(&L->cond);
}

/* Reserve an entry of size bytes on the rings of slots[0..*n-1] (raid5_ppl.c; waits for room):
 * 0 with its seq and position on each, or -EIO (nothing reserved). A slot that can no longer
 * take it (failed meanwhile) is dropped from slots[] and *n. prow: the stripe row of a partial
 * entry, or -1 for a whole-stripe one. Lock not held. */
int r5_ppl_alloc(struct raid_priv *r, struct r5_ppl *L, uint32_t *slots, int *n, uint64_t size,
                 int64_t prow, uint64_t *seq, uint64_t *pos);

/*
 * raid5_ppl_full.c, log windows; lock held for all three. ppl_win_cut: an entry of rows
 * [row, row + nrows) other than a window's is being logged (keep: a window to leave alone, or
 * NULL): no window may be taken for those rows from now on (the seq order per row stays the
 * write order). ppl_win_close_all: no window
 * may be taken any more (a member flush or reclaim begins; their entries complete once their
 * writes are done). ppl_win_put: a write under window w ended.
 */
void ppl_win_cut(struct r5_ppl *L, uint64_t row, uint64_t nrows, const struct ppl_win *keep);
void ppl_win_close_all(struct r5_ppl *L);
void ppl_win_put(struct r5_ppl *L, struct ppl_win *w);

/* Wake the writers waiting for a log write of ring m (r5_ppl_commit), if any. Lock held. */
static inline void ppl_ring_wake(struct ppl_ring *m)
{
    if (m->waiters)
        pthread_cond_broadcast(&m->cond);
}

/* raid5_ppl_commit.c. The entry of seq in ring m, or NULL (it is live while its writer has not
 * completed it; gone when the ring was adopted meanwhile). Lock held. */
struct ppl_ent *r5_ppl_ring_ent(const struct r5_ppl *L, struct ppl_ring *m, uint64_t seq);

/*
 * Group commit (md's io_unit, without a format change: each entry keeps its own header): make
 * the entries of seq on slots[0..n-1] (encoded in their rings' stage, state READY) durable. The
 * thread that finds its entry READY writes the whole run of READY entries around it, back to
 * back in the ring, as one FUA member write, for every writer in the run. On a ring whose log
 * writes are slow (PPL_GROUP_NS) it first waits for the write in flight, so the entries that
 * arrive during one log write share the next one; on a fast ring it writes at once. A writer
 * waits on the cond of one ring its entry waits on, woken only by that ring's log writes. Lock
 * not held. Returns the slot mask whose log write failed (each such slot is failed by the
 * thread that wrote the run).
 */
uint32_t r5_ppl_commit(struct raid_priv *r, struct r5_ppl *L, const uint32_t *slots, int n,
                       uint64_t seq);

#endif
