/*
 * Internal interface of the raid5/raid6 level, shared by its files (dependencies one way):
 *
 *   raid5_layout.c   stripe geometry: parity/data slot of a stripe, setup/map/survives
 *   raid5_io.c       member I/O batches of one stripe window, request scratch, parity helpers
 *   raid5_cache.c    the stripe data cache (write-through, for adjacent sequential writes)
 *   raid5_read.c     reads, degraded reads and the window recovery that rebuild/scrub reuse
 *   raid5_write.c    writes (read-modify-write / reconstruct-write), zeroing and discard
 *   raid5_rebuild.c  the rebuild (reconstruct) and scrub hooks
 *   raid5_ppl.c      the partial parity log (write step, ring, replay); blocks: raid5_ppl_fmt.c
 *   raid5_gather.c   stripe gathering: sequential partial-stripe writes held briefly in memory
 *                    and written out as whole stripes (write-back, bounded time)
 *   raid5.c          the request hook, open/close and the level tables
 *
 * Layout (docs/FORMAT.md "raid5, raid6"): member chunk row s of every slot forms stripe s.
 * Stripe s has parity P on slot p = n-1 - s mod n, for raid6 Q on (p+1) mod n, and data chunk k
 * (k = 0..nd-1, nd = n - nparity) on slot (p + nparity + k) mod n; array chunk c is data chunk
 * c mod nd of stripe c div nd. This is md's ALGORITHM_LEFT_SYMMETRIC (raid5_compute_sector),
 * and data chunk k has Q coefficient g^k as in md.
 *
 * Inside a stripe, blocks are numbered as parity.h wants them: data 0..nd-1, then P (nd), then
 * Q (nd+1). Masks are over block numbers unless named slot masks (bit i = slot i).
 *
 * Request flow: a request is cut per stripe; each stripe is handled under its stripe lock in
 * column windows of at most R5_WIN bytes (bounded work buffers), one batch of parallel member
 * reads, the parity computation, then one batch of parallel member writes. Healthy reads go
 * straight to the data chunks without any lock.
 *
 * Lock order (no cycles): member range lock (writes, only while a rebuild/scrub job runs; the
 * job holds it around reconstruct/scrub) -> one pool buffer -> stripe locks (one call of
 * stripe_lock_range at a time). Degraded reads take a buffer, then a stripe lock. Nothing waits
 * for a buffer or a range lock while holding a stripe lock. The cache table lock is innermost and
 * only held for lookups; an entry's data is guarded by the stripe lock of its row, plus a busy
 * mark (set under the table lock) so that no other row can take the entry over while in use.
 *
 * Every function below takes a raid_priv / r5_req of an open raid5/raid6 device; offsets and
 * lengths are bytes; "member offset" means an offset inside a slot's data area (data_offset is
 * added when member I/O is issued).
 */
#ifndef RK_RAID5_INT_H
#define RK_RAID5_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raid/parity.h"
#include "raid/raid_int.h"
#include "raid/stripe.h"

/* Largest column window processed at once: bounds the work buffer at (n + 2) * R5_WIN. */
#define R5_WIN (1024u * 1024u)
/* Memory budget for the stripe buffer pool (at least 2 buffers are always allocated). */
#define R5_POOL_BYTES (64u * 1024u * 1024u)
/* Direct member reads per round of a read request (bounded stack use). */
#define R5_ROUND 64
/* Stripe data cache: at most this many stripes, and at most this many bytes in all. */
#define R5_CACHE_ENTRIES 8
#define R5_CACHE_BYTES   (32u * 1024u * 1024u)
#define R5_NO_ROW        UINT64_MAX
/* Member I/O of one batch: one stripe window (at most one read or write per block, plus
 * repairs), or the writes of a run of whole stripes. */
#define R5_BATCH_IOS (2 * RK_MAX_MEMBERS)

/* Ends of the most recent writes remembered to recognise a sequential stream (raid5_cache.c). */
#define R5_STREAM_ENDS 32
/* A write that starts within this many of its own lengths after a recent end is "near" one. */
#define R5_STREAM_NEAR 8

/* One cached stripe: data chunk k is data + k * chunk, valid when bit k of valid is set; a chunk
 * not valid but with bit k of part set is known over columns [plo[k], phi[k]) only. */
struct r5_centry {
    uint64_t row;  /* R5_NO_ROW = unused */
    uint64_t used; /* LRU tick */
    uint32_t valid;
    uint32_t part;
    uint32_t plo[RK_MAX_MEMBERS], phi[RK_MAX_MEMBERS];
    bool busy; /* in use by the holder of row's stripe lock */
    char *data;
};

struct r5_cache {
    pthread_mutex_t lock; /* row, used and busy of every entry; ends */
    int n;                /* 0 = cache off */
    uint64_t tick;
    struct r5_centry e[R5_CACHE_ENTRIES];
    char *mem;
    uint64_t ends[R5_STREAM_ENDS]; /* array end offsets of recent writes (0: none) */
    unsigned endpos;
};

/* r->level_priv of a raid5/raid6 device. */
struct r5_priv {
    struct stripe_locks locks;
    struct stripe_pool pool;
    struct rk_parity_ctx *pctx;
    uint64_t win; /* column window: min(chunk, R5_WIN) */
    char *zero;   /* win bytes of zeros: the source of partial-stripe write-zeroes */
    struct r5_cache cache;
    struct r5_ppl *ppl;       /* partial parity log (raid5_ppl.c), NULL: none */
    struct r5_gather *gather; /* stripe gathering (raid5_gather.c), NULL: off */
    uint64_t wstep; /* columns per partial-stripe write window (<= win; the log's bound) */
    /* Stripes whose parity may be torn, found by a read-only start's log check (RK_LOG_CHECK,
     * r5_ppl_start): the rows of the entries still live, or every row (suspect_all) when the
     * log cannot be read or trusted. A read-only start replays nothing, so a read that needs
     * parity there fails (-EIO) instead of returning what a torn stripe holds. Set before the
     * array serves, read without a lock. */
    struct r5_suspect {
        uint64_t row, nrows;
    } * suspect;
    size_t nsuspect;
    bool suspect_all;
    atomic_bool suspect_said; /* the first such read was logged */
};

/* Whether a read of row needs parity the log check could not vouch for (r5_priv.suspect). */
bool r5_row_suspect(const struct r5_priv *p, uint64_t row);

/* A pool buffer: (members + 2) block windows plus this much for two log entries' headers. */
#define R5_BUF_EXTRA 8192u

/* Where the blocks of one stripe live. */
struct r5_geo {
    uint32_t n, nd, np;
    uint64_t row; /* stripe number = member chunk row */
    uint32_t slot[RK_MAX_MEMBERS];
    uint32_t blk_of_slot[RK_MAX_MEMBERS];
};

/* One request's scratch: a pool buffer (taken on first use) and a completion batch. */
struct r5_req {
    struct raid_priv *r;
    struct r5_priv *p;
    char *buf;
    struct rk_io_batch batch;
    uint32_t wflags; /* flags of member writes (RK_WRITE_FUA) */
};

/* The member ios of one batch and the slot of each. */
struct r5_ios {
    int n;
    struct rk_io io[R5_BATCH_IOS];
    uint32_t slot[R5_BATCH_IOS];
};

/* One column window [lo, hi) of one stripe a write covers: the touched columns [a[k], b[k]) of
 * each data chunk (a == b: untouched) and the bytes to write there (src[k], NULL if untouched). */
struct r5_wwin {
    uint64_t lo, hi;
    uint64_t a[RK_MAX_MEMBERS], b[RK_MAX_MEMBERS];
    const char *src[RK_MAX_MEMBERS];
};

/* How a write window computes its parity: read-modify-write, reconstruct-write, or rebuild the
 * missing blocks first (a block it needs is on a slot that cannot be read). */
enum r5_mode { R5_RMW, R5_RCW, R5_RECOVER };

/* ---- raid5_layout.c ---- */

/* Parity blocks per stripe of layout l: 1 (raid5) or 2 (raid6). */
uint32_t r5_nparity(const struct raid_layout *l);
/* Array bytes of one stripe: chunk * (members - nparity). */
uint64_t r5_stripe_bytes(const struct raid_layout *l);
/* Fill *g with the slots of the blocks of stripe row (see the layout above). */
void r5_geo(const struct raid_layout *l, uint64_t row, struct r5_geo *g);
/* Level hooks (raid_int.h struct raid_level): array size, mapping of one array offset to its
 * data chunk (always 1 copy), and "at most nparity slots gone". */
void r5_setup(struct raid_layout *l);
int r5_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies, int max,
           uint64_t *run);
bool r5_survives(const struct raid_layout *l, uint32_t alive);
/* Blocks of stripe g whose member range [moff, moff+len) can be read: ACTIVE slot, and not
 * recorded unreadable by a rebuild (such bytes are rebuilt from the others or give EIO). */
uint32_t r5_blk_readable(struct raid_priv *r, const struct r5_geo *g, uint64_t moff, uint64_t len);
/* The block mask of stripe g that covers the slots in slot mask slots. */
uint32_t r5_blk_mask_of_slots(const struct r5_geo *g, uint32_t slots);
/* Is the data of r still reachable with the slots now ACTIVE? */
bool r5_alive(struct raid_priv *r);

/* ---- raid5_io.c ---- */

/* Start a request's scratch for r (no buffer yet); wflags are the flags of its member writes.
 * End it with r5_req_done, which returns the buffer to the pool. */
void r5_req_init(struct r5_req *q, struct raid_priv *r, uint32_t wflags);
/* Take a pool buffer for q unless it has one (may wait for one: hold no stripe lock). */
void r5_req_buf(struct r5_req *q);
void r5_req_done(struct r5_req *q);
/* Block b's window buffer inside q's pool buffer (q->p->win bytes; b may be n or n+1, the
 * scrub's scratch parity). q must hold a buffer. */
char *r5_blk(struct r5_req *q, uint32_t b);
/* Append one member io to v: op on slot's member at member offset moff, len bytes from/to buf
 * (NULL for write-zeroes); buf stays owned by the caller until v has run. */
void r5_io_add(struct r5_ios *v, struct raid_priv *r, uint32_t slot, enum rk_op op, uint32_t flags,
               void *buf, uint64_t len, uint64_t moff);
/* Submit every io of v in parallel and wait; returns the slot mask of the ios that failed. */
uint32_t r5_io_run(struct r5_req *q, struct r5_ios *v);
/* Fail every slot whose io in v failed (a slot that missed a write no longer holds its data). */
void r5_fail_writes(struct r5_req *q, struct r5_ios *v);
/* Run the writes in v; the slots that fail them are failed. Returns 0, or -EIO when the array
 * lost data by that; *failed (may be NULL) tells whether any write failed. */
int r5_io_write(struct r5_req *q, struct r5_ios *v, bool *failed);
/* Parity of nd data blocks of len bytes: P into p and, with np == 2, Q into qb. */
void r5_parity_gen(uint32_t np, uint32_t nd, uint64_t len, void **data, void *p, void *qb);
/* Rebuild the blocks in mask missing (at most g->np) of stripe g in q's block buffers from the
 * others (len bytes each). Returns 0 or -EIO. */
int r5_recover_blocks(struct r5_req *q, const struct r5_geo *g, uint64_t len, uint32_t missing);

/* ---- raid5_cache.c ---- */

/* Allocate p's cache for r (R5_CACHE_ENTRIES x stripe bytes, capped at R5_CACHE_BYTES; off
 * below 2 entries, when the chunk exceeds the window, or without memory) / free it. */
void r5c_open(struct raid_priv *r, struct r5_priv *p);
void r5c_close(struct r5_priv *p);
/* The entry of row (caller holds row's stripe lock), marked busy; with create, a free or the
 * least recently used idle entry is taken over (empty). NULL when there is none. Release it
 * with r5c_put (NULL is fine). */
struct r5_centry *r5c_get(struct r5_priv *p, uint64_t row, bool create);
void r5c_put(struct r5_priv *p, struct r5_centry *e);
/* Forget rows [row, row+count) (caller holds their stripe locks, so none of them is busy). */
void r5c_drop(struct r5_priv *p, uint64_t row, uint64_t count);
/* True when stripe g may use the cache: every slot ACTIVE and nothing recorded unreadable. */
bool r5c_usable(struct raid_priv *r, const struct r5_geo *g);
/* Forget everything ce holds (after a failure or a change the cache did not follow); NULL ok. */
void r5c_forget(struct r5_centry *ce);
/* The data blocks ce can supply over the whole of window w: valid chunks, partial ones whose
 * known range covers the window, and touched ones whose known range and the columns w writes
 * together cover it (their buffer is the cached window patched with the new bytes); 0 for NULL. */
uint32_t r5c_known(const struct r5_centry *ce, uint32_t nd, const struct r5_wwin *w);
/* After a successful write of window w in mode: record in ce what is now known of each data
 * chunk (touched: data blocks written; need: blocks the reconstruct-write read into q's
 * buffers; cv: blocks ce knew over the window before, r5c_known; full: blocks written over the
 * whole window). A chunk whose known columns grow to the whole chunk becomes valid. */
void r5c_update(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                struct r5_centry *ce, enum r5_mode mode, uint32_t touched, uint32_t need,
                uint32_t cv, uint32_t full);
/* Sequential-stream detection: true when a write starting at array offset off begins where one
 * of the last R5_STREAM_ENDS writes ended; *near_end (may be NULL) gets the latest such end at
 * most R5_STREAM_NEAR * len bytes before off, or 0, and *ahead_end (may be NULL) the earliest
 * one after off + len and at most R5_STREAM_NEAR * len bytes after off, or 0 (a stream whose
 * requests run out of order on several threads: its later pieces came first); then (always)
 * remember end = off + len. */
bool r5c_stream(struct r5_priv *p, uint64_t off, uint64_t len, uint64_t *near_end,
                uint64_t *ahead_end);
/*
 * Stream fill (issue 13 "stripe gathering", without holding writes): before a sub-chunk write of
 * a sequential stream into stripe g (stripe lock held, ce its entry, touched the data blocks the
 * request writes in this stripe), read every other data chunk not yet valid whole into ce, in
 * one parallel batch, so the stream's next writes into this stripe are reconstruct-writes with
 * no member reads. Chunks whose read failed stay unknown (the write then plans as usual).
 */
void r5c_fill(struct r5_req *q, const struct r5_geo *g, struct r5_centry *ce, uint32_t touched);

/* ---- raid5_read.c ---- */

/* Read array range [off, off+len) into buf (q from r5_req_init). Returns 0 or -EIO. */
int r5_read(struct r5_req *q, char *buf, uint64_t len, uint64_t off);
/*
 * Read the blocks of stripe g that are not in excl (and are readable) over columns [lo, hi)
 * into q's block buffers, and rebuild the others (want, and whatever else is missing) with the
 * parity code; caller holds the stripe lock and q a buffer. Read errors exclude that block too
 * and retry. Returns 0 with every block of want valid in its buffer, or -EIO when more blocks
 * are missing than the parity covers. *bad_out (may be NULL) gets the blocks whose reads failed.
 */
int r5_recover_window(struct r5_req *q, const struct r5_geo *g, uint64_t lo, uint64_t hi,
                      uint32_t want, uint32_t excl, uint32_t *bad_out);
/* Write back the blocks in bad (their buffers now hold the right content) over columns
 * [lo, hi) of stripe g; a slot that cannot take the repair write is failed. */
void r5_repair(struct r5_req *q, const struct r5_geo *g, uint64_t lo, uint64_t hi, uint32_t bad);

/* ---- raid5_write.c ---- */

/* Write buf (NULL: zeros) over array range [off, off+len); stream: the request continues a
 * sequential stream (r5c_stream; its sub-chunk pieces fill the stripe cache first). Returns 0
 * or -EIO. */
int r5_write(struct r5_req *q, const char *buf, uint64_t len, uint64_t off, bool stream);
/* Discard (zero false) or write-zeroes (flags: RK_WRITE_FUA | RK_ZERO_NO_HOLE) over array
 * range [off, off+len). Returns 0 or -EIO. */
int r5_zero(struct r5_req *q, uint64_t len, uint64_t off, bool zero, uint32_t flags);

/* ---- raid5_ppl.c ---- */

/* The log entry one write window wrote: its seq and the slots holding it (P's, Q's member; for a
 * whole-stripe entry, the parity members of its rows). */
struct r5_ppl_tok {
    uint64_t seq;
    int n; /* 0: nothing logged */
    uint32_t slot[RK_MAX_MEMBERS];
    int win; /* > 0: the entry is log window win - 1's (r5_ppl_log_stream), held until done */
};

/* Set up p's log when r's geometry has one (p->wstep is set either way). The log stays off
 * until r5_ppl_start. Returns 0 or -EINVAL (bad region) / -ENOMEM; r5_ppl_close frees it
 * (also after a failed open). */
int r5_ppl_open(struct raid_priv *r, struct r5_priv *p);
void r5_ppl_close(struct r5_priv *p);
/* The level's log_start hook (rk_raid_log_start, mode RK_LOG_*): scan, replay (with
 * RK_LOG_REPLAY), start empty; -EUCLEAN (log kept) for an unprovable degraded replay without
 * RK_LOG_FORCE. RK_LOG_CHECK: scan only, -EUCLEAN when an entry is live (nothing written). */
int r5_ppl_start(struct raid_priv *r, int mode);
/* The level's log_join hook: slot's member has just joined (rk_raid_add_member). Its ring is
 * adopted at once (its head voids every entry it holds, seq numbers continue above them) and
 * every log window closes, so nothing it held before it left is taken for live by a later
 * replay, even when it becomes readable before any entry is logged on it. Returns 0, or -EIO
 * when its head write failed (the slot was failed). */
int r5_ppl_join(struct raid_priv *r, uint32_t slot);
/*
 * The write step between parity computation and commit: when the log is on and window w of
 * stripe g writes the data blocks in touched and the parity blocks in pwrite (q's P/Q buffers
 * hold the new parity), write its entry with FUA on each written parity block's member and
 * wait (for ring room first, if needed): P's member gets PP, Q's member PQ. *tok tells
 * r5_ppl_done what to complete once the window's member writes are done. A member that fails its
 * entry write is failed. Returns 0, or -EIO when that lost the array. Caller holds the stripe lock
 * and q a buffer.
 */
int r5_ppl_log(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w, uint32_t touched,
               uint32_t pwrite, struct r5_ppl_tok *tok);
/*
 * The write step of whole stripes [row, row + count) (a run of full-stripe writes, or their
 * zeroing): before their member writes, one header-only entry (RK_PPL_FULL, no partial parity,
 * md's PPL logs full-stripe writes the same way) is written with FUA on the parity member of
 * every one of those rows that is writable (every writable member once count >= members), and
 * waited for. It supersedes every older entry of those rows at replay, whose partial parity the
 * whole-stripe write made stale. Returns 0 (tok set; release with r5_ppl_done), or -EIO when the
 * array was lost. Caller holds the stripe locks of the rows and q a buffer.
 */
int r5_ppl_log_full(struct r5_req *q, uint64_t row, uint64_t count, struct r5_ppl_tok *tok);
/*
 * The same step for a run of full-stripe writes [row, row + count) of a write request
 * (raid5_ppl_full.c): a run that continues a recent one (a sequential stream) logs one entry for
 * a log window of rows ahead of it (at least count, up to PPL_WIN_BYTES of array data, inside
 * the array), and the stream's following runs inside that window log nothing: they only wait
 * until its entry is durable. Any other entry of a row (a partial-stripe write, zeroing) cuts
 * the row out of every window first, so per row the log's seq order stays the order of the
 * writes. A window closes at every member flush, at a reclaim and when its stream leaves it;
 * its entry is complete once it is closed and no write under it is in flight. Otherwise as
 * r5_ppl_log_full. Returns 0 (tok set, tok->win the window or 0; release with r5_ppl_done) or
 * -EIO when the array was lost. Caller holds the stripe locks of the rows and q a buffer.
 */
int r5_ppl_log_stream(struct r5_req *q, uint64_t row, uint64_t count, struct r5_ppl_tok *tok);
/* Flush hooks (raid_level.flush_begin / flush_end): before the member flush of a FLUSH request,
 * note per ring the first entry whose stripe write is not complete (mark, RK_MAX_MEMBERS
 * entries); after that flush succeeded, every entry below its ring's mark is durable: retire
 * them (FUA head writes), so a replay never needs them. */
void r5_ppl_flush_begin(struct raid_priv *r, uint64_t *mark);
void r5_ppl_flush_end(struct raid_priv *r, const uint64_t *mark);
/* The member writes of tok's window are done (successful or not): its entry can retire at the
 * next member flush. When one of its rings is half full, this call reclaims it (flushes the
 * members and writes the heads) before returning. No-op for an empty tok. */
void r5_ppl_done(struct r5_req *q, const struct r5_ppl_tok *tok);

/* ---- raid5.c ---- */

/* The request path without stripe gathering (raid5.c): range lock while a job runs, then read,
 * write (stream as in r5_write), discard or write-zeroes of array range [off, off+len) on the
 * members. Call holding no lock of the level. Returns 0 or -errno. */
int r5_rw_direct(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
                 uint32_t flags, bool stream);

/* ---- raid5_gather.c ---- */

/* Gathering entries (stripes held at once) and their memory bound; extents per held stripe. */
#define R5G_ENTRIES 8
#define R5G_BYTES   (32u * 1024u * 1024u)
#define R5G_EXTENTS 16
/* Default hold of a gathering entry after its last write, microseconds
 * (RAIDKIT_RAID5_GATHER_US), and the longest hold after its first write, in holds. */
#define R5G_HOLD_US  2000
#define R5G_HOLD_MAX 4

/* Set up p's stripe gathering for r (after r5c_open: it needs the stream detection): entries
 * of one stripe each, R5G_ENTRIES at most within R5G_BYTES, and the thread that writes out
 * expired ones. Off (p->gather NULL, returns 0) when RAIDKIT_RAID5_GATHER_US=0, without the
 * stripe cache, or below two entries. Returns 0 or -ENOMEM / the thread's error. */
int r5g_open(struct raid_priv *r, struct r5_priv *p);
/* Stop the thread and free p->gather (held data not written out is dropped: the engine drains
 * before close). NULL-safe. */
void r5g_close(struct r5_priv *p);
/*
 * A write request of array range [off, off+len) from buf (flags: RK_WRITE_FUA) when gathering
 * is on: each partial-stripe piece of a sequential stream (or any piece landing in a stripe
 * already held) is copied into its stripe's entry and acknowledged; a stripe whose entry became
 * whole is written out at once as a full stripe by this call. FUA pieces and whole stripes are
 * written through r5_rw_direct after the held data of their stripes was written out. Returns 0
 * or -errno (-EIO when the array lost data).
 */
int r5g_write(struct raid_priv *r, const char *buf, uint64_t len, uint64_t off, uint32_t flags);
/* The level's drain hook (raid_int.h; also before reads, discard and write-zeroes): write out
 * every held stripe that array range [off, off+len) touches (len UINT64_MAX: all) and wait for
 * write-outs already running there. Call holding no lock of the level. Returns 0, or, for a
 * whole drain, the first write-out error since the last whole drain (-EIO: a held write that
 * was acknowledged is lost, e.g. the array lost data meanwhile). */
int r5g_drain(struct raid_priv *r, uint64_t off, uint64_t len);

/* ---- raid5_rebuild.c ---- */

/* The level's reconstruct and scrub hooks (raid_int.h struct raid_level). */
int r5_reconstruct(struct raid_priv *r, uint32_t slot, uint64_t member_off, uint64_t len,
                   void *out);
int r5_scrub(struct raid_priv *r, uint64_t member_off, uint64_t len, unsigned mode,
             uint64_t *mismatches);

#endif
