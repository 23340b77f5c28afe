/* SSD cache policy: per-stream sequential bypass, an n-hit read admission filter with a bounded
 * ghost table, and GCLOCK eviction over cache blocks (docs/ARCHITECTURE.md "Cache").
 *
 * Three independent parts, all pure logic (policy.h):
 *
 *  - Streams (bcache-style sequential detection): a table of `streams` entries, each the end
 *    offset and the length of a recent run of requests. A request starting exactly at a tracked
 *    end continues that stream; otherwise it replaces the least recently used entry. A stream
 *    whose length exceeds seq_cutoff bypasses the cache (a single request longer than the cutoff
 *    is a stream of its own and bypasses too, as in bcache). Lookup is a linear scan: streams is
 *    small (default 64, at most RK_POLICY_MAX_STREAMS).
 *
 *  - Ghost table (admission): read misses of backing blocks not yet admitted are remembered as a
 *    24-bit fingerprint plus an 8-bit miss count in a set-associative table of 8-entry buckets,
 *    about one entry per cache block; a first miss takes an empty slot of its bucket or replaces
 *    a pseudo-random one. A block is admitted on its admit_hits-th miss, so a
 *    one-pass scan only churns the ghost table and never reaches the cache. A fingerprint
 *    collision admits a block early: harmless, admission is a heuristic, never a correctness rule.
 *
 *  - GCLOCK (generalised CLOCK, the CLOCK class of the issue): one byte per cache block, bit 7 =
 *    held, bits 0..1 = frequency 0..3. Insert sets frequency 0, a hit raises it by one (max 3).
 *    The hand sweeps: a held block with frequency > 0 is decremented and passed, one with
 *    frequency 0 that can_evict() is evicted. A block hit often survives three sweeps of blocks
 *    inserted once.
 *
 * Memory (rk_cache_policy_memory): 1 byte per cache block + 4 bytes per ghost entry (ghost
 * entries = cache blocks rounded up to 8) + 24 bytes per stream: ~5 bytes per cache block, i.e.
 * 80 MiB per TiB of cache at 64 KiB blocks (docs/BENCHMARKS.md "Cache memory").
 */
#include "cache/policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RK_POLICY_MAX_STREAMS 4096u
#define RK_POLICY_MAX_ADMIT   255u         /* the ghost miss count is 8 bits */
#define RK_POLICY_MAX_BLOCKS  (1ull << 40) /* 64 PiB at 64 KiB: far above any cache */
#define RK_POLICY_MAX_BSIZE   (1u << 30)   /* 1 GiB cache block */
#define GHOST_WAYS            8
#define CB_HELD               0x80u
#define CB_FREQ               0x03u
#define CB_FREQ_MAX           3u

struct policy_stream {
    uint64_t end;   /* byte offset just past the stream's last request */
    uint64_t len;   /* bytes of the stream so far (saturating) */
    uint64_t stamp; /* last use, for LRU replacement; 0 = empty */
};

struct rk_cache_policy {
    struct rk_cache_policy_params p;
    struct policy_stream *streams; /* p.streams entries */
    uint64_t clock;                /* stream LRU clock, bumped per request */
    uint8_t *cb;                   /* per cache block: CB_HELD | frequency */
    uint64_t held;                 /* cache blocks with CB_HELD */
    uint64_t hand;                 /* GCLOCK hand, in [0, cache_blocks) */
    uint32_t *ghost;               /* ghost_buckets * GHOST_WAYS: tag << 8 | misses; 0 = empty */
    uint64_t ghost_buckets;
    uint64_t rnd; /* xorshift64 state for ghost replacement, never 0 */
};

const char *rk_cache_reason_name(enum rk_cache_reason r)
{
    static const char *const names[RK_CACHE_REASONS] = {
        [RK_CACHE_ADMIT] = "admit",
        [RK_CACHE_BYPASS_SEQUENTIAL] = "sequential",
        [RK_CACHE_BYPASS_COLD] = "cold",
        [RK_CACHE_BYPASS_MODE] = "mode",
        [RK_CACHE_BYPASS_FULL] = "full",
        [RK_CACHE_BYPASS_FAILED] = "failed",
        [RK_CACHE_BYPASS_DETACHING] = "detaching",
        [RK_CACHE_BYPASS_UNALIGNED] = "unaligned",
    };
    if ((unsigned)r >= RK_CACHE_REASONS)
        return "?";
    return names[r];
}

void rk_cache_policy_defaults(struct rk_cache_policy_params *p, uint64_t cache_blocks,
                              uint32_t block_size)
{
    memset(p, 0, sizeof(*p));
    p->cache_blocks = cache_blocks;
    p->block_size = block_size;
    p->seq_cutoff = 4ull << 20;
    p->admit_hits = 2;
    p->streams = 64;
}

static bool policy_params_ok(const struct rk_cache_policy_params *p)
{
    if (!p || p->cache_blocks < 1 || p->cache_blocks > RK_POLICY_MAX_BLOCKS)
        return false;
    if (p->block_size < 4096 || p->block_size > RK_POLICY_MAX_BSIZE ||
        (p->block_size & (p->block_size - 1)))
        return false;
    if (p->admit_hits < 1 || p->admit_hits > RK_POLICY_MAX_ADMIT)
        return false;
    return p->streams >= 1 && p->streams <= RK_POLICY_MAX_STREAMS;
}

struct rk_cache_policy *rk_cache_policy_new(const struct rk_cache_policy_params *p)
{
    if (!policy_params_ok(p)) {
        errno = EINVAL;
        return NULL;
    }
    struct rk_cache_policy *pol = calloc(1, sizeof(*pol));
    if (!pol)
        goto nomem;
    pol->p = *p;
    pol->rnd = 0x2545f4914f6cdd1dull;
    pol->ghost_buckets = (p->cache_blocks + GHOST_WAYS - 1) / GHOST_WAYS;
    pol->streams = calloc(p->streams, sizeof(*pol->streams));
    pol->cb = calloc(p->cache_blocks, 1);
    /* admit_hits 1 never consults the ghost table: keep one bucket so the code has no NULL. */
    if (p->admit_hits == 1)
        pol->ghost_buckets = 1;
    pol->ghost = calloc(pol->ghost_buckets * GHOST_WAYS, sizeof(*pol->ghost));
    if (!pol->streams || !pol->cb || !pol->ghost)
        goto nomem;
    return pol;
nomem:
    rk_cache_policy_free(pol);
    errno = ENOMEM;
    return NULL;
}

void rk_cache_policy_free(struct rk_cache_policy *pol)
{
    if (!pol)
        return;
    free(pol->streams);
    free(pol->cb);
    free(pol->ghost);
    free(pol);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

bool rk_cache_policy_sequential(struct rk_cache_policy *pol, uint64_t offset, uint64_t length)
{
    if (length == 0)
        return false;
    struct policy_stream *hit = NULL, *lru = &pol->streams[0];
    for (uint32_t i = 0; i < pol->p.streams; i++) {
        struct policy_stream *s = &pol->streams[i];
        if (s->stamp && s->end == offset) {
            hit = s;
            break;
        }
        if (s->stamp < lru->stamp)
            lru = s;
    }
    if (hit) {
        hit->len = sat_add(hit->len, length);
    } else {
        hit = lru;
        hit->len = length;
    }
    hit->end = sat_add(offset, length);
    hit->stamp = ++pol->clock;
    return pol->p.seq_cutoff != 0 && hit->len > pol->p.seq_cutoff;
}

/* splitmix64 finaliser: spreads consecutive block numbers over buckets and tags. */
static uint64_t policy_hash(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

bool rk_cache_policy_admit_read(struct rk_cache_policy *pol, uint64_t bblock)
{
    if (pol->p.admit_hits <= 1)
        return true;
    uint64_t h = policy_hash(bblock);
    uint32_t *b = &pol->ghost[(h % pol->ghost_buckets) * GHOST_WAYS];
    uint32_t tag = (uint32_t)(h >> 40) | 1u; /* 24 bits, never 0 (0 = empty slot) */
    int at = -1, empty = -1;
    for (int i = 0; i < GHOST_WAYS && at < 0; i++) {
        if (b[i] >> 8 == tag)
            at = i;
        else if (b[i] == 0 && empty < 0)
            empty = i;
    }
    if (at >= 0) {
        uint32_t misses = (b[at] & 0xffu) + 1;
        if (misses >= pol->p.admit_hits) {
            b[at] = 0; /* admitted: forgotten */
            return true;
        }
        b[at] = tag << 8 | misses;
        return false;
    }
    /* First miss: an empty slot, else a pseudo-random one. Random replacement, not LRU: a loop
     * over more blocks than a bucket holds (a warm-up pass over the hot set) would never find
     * its entries again under LRU; under random replacement some survive each pass. */
    if (empty < 0) {
        pol->rnd ^= pol->rnd << 13;
        pol->rnd ^= pol->rnd >> 7;
        pol->rnd ^= pol->rnd << 17;
        empty = (int)(pol->rnd % GHOST_WAYS);
    }
    b[empty] = tag << 8 | 1u;
    return false;
}

void rk_cache_policy_insert(struct rk_cache_policy *pol, uint64_t cblock)
{
    if (cblock >= pol->p.cache_blocks || (pol->cb[cblock] & CB_HELD))
        return;
    pol->cb[cblock] = CB_HELD;
    pol->held++;
}

void rk_cache_policy_touch(struct rk_cache_policy *pol, uint64_t cblock)
{
    if (cblock >= pol->p.cache_blocks)
        return;
    uint8_t c = pol->cb[cblock];
    if ((c & CB_HELD) && (c & CB_FREQ) < CB_FREQ_MAX)
        pol->cb[cblock] = c + 1;
}

void rk_cache_policy_remove(struct rk_cache_policy *pol, uint64_t cblock)
{
    if (cblock >= pol->p.cache_blocks || !(pol->cb[cblock] & CB_HELD))
        return;
    pol->cb[cblock] = 0;
    pol->held--;
}

/* The hand sweeps at most CB_FREQ_MAX + 1 rotations: after CB_FREQ_MAX every held block passed
 * has frequency 0, so the next rotation evicts the first evictable one. A whole rotation without
 * one evictable block ends the search with -ENOSPC (can_evict is stable during one call), so the
 * worst case is cache_blocks calls of can_evict. */
int rk_cache_policy_evict(struct rk_cache_policy *pol,
                          bool (*can_evict)(void *ctx, uint64_t cblock), void *ctx,
                          uint64_t *cblock)
{
    uint64_t n = pol->p.cache_blocks;
    if (pol->held == 0)
        return -ENOSPC;
    for (unsigned rot = 0; rot <= CB_FREQ_MAX; rot++) {
        bool any = false;
        for (uint64_t step = 0; step < n; step++) {
            uint64_t i = pol->hand;
            pol->hand = i + 1 == n ? 0 : i + 1;
            uint8_t c = pol->cb[i];
            if (!(c & CB_HELD) || !can_evict(ctx, i))
                continue;
            any = true;
            if (c & CB_FREQ) {
                pol->cb[i] = c - 1;
                continue;
            }
            pol->cb[i] = 0;
            pol->held--;
            *cblock = i;
            return 0;
        }
        if (!any)
            return -ENOSPC;
    }
    return -ENOSPC; /* not reached: rotation CB_FREQ_MAX + 1 finds frequency 0 */
}

size_t rk_cache_policy_memory(const struct rk_cache_policy *pol)
{
    return sizeof(*pol) + (size_t)pol->p.streams * sizeof(*pol->streams) +
           (size_t)pol->p.cache_blocks + (size_t)pol->ghost_buckets * GHOST_WAYS * sizeof(uint32_t);
}
