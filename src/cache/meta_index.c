/* The cache index (docs/FORMAT.md "Cache device", memory in "Cache index memory"): per cache
 * block one u64 entry (mapped, dirty, backing block), a bblock -> cblock hash with 32-bit chain
 * links, and a free list threaded through the same links. 14 bytes per cache block.
 *
 * Block states (memory): free (on the free list) -> alloc (handed out) -> mapped -> limbo
 * (unmapped, unmap not durable) -> free after the commit that wrote the unmap. An alloc'ed block
 * goes back with release. Only mapped/dirty reach the disk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/meta_int.h"
#include "core/util.h"

static uint32_t idx_hash(const struct rk_cache_meta *m, uint64_t bblock)
{
    return (uint32_t)((bblock * 0x9E3779B97F4A7C15ull) >> (64 - m->bucket_bits));
}

int rkc_index_init(struct rk_cache_meta *m)
{
    uint64_t n = m->sb.nblocks;
    m->bucket_bits = 4;
    while ((1ull << m->bucket_bits) < n / 2)
        m->bucket_bits++;
    m->ent = calloc(n, sizeof(*m->ent));
    m->next = malloc(n * sizeof(*m->next));
    m->bucket = malloc((sizeof(*m->bucket)) << m->bucket_bits);
    if (!m->ent || !m->next || !m->bucket)
        return -ENOMEM;
    memset(m->next, 0xff, n * sizeof(*m->next));
    memset(m->bucket, 0xff, (sizeof(*m->bucket)) << m->bucket_bits);
    m->free_head = RKC_NIL;
    m->nfree = m->nmapped = m->ndirty = 0;
    return 0;
}

void rkc_index_free(struct rk_cache_meta *m)
{
    free(m->ent);
    free(m->next);
    free(m->bucket);
    m->ent = NULL;
    m->next = m->bucket = NULL;
}

/* cblock mapped to bblock, or RKC_NIL. */
static uint32_t idx_find(const struct rk_cache_meta *m, uint64_t bblock)
{
    for (uint32_t c = m->bucket[idx_hash(m, bblock)]; c != RKC_NIL; c = m->next[c])
        if ((m->ent[c] & RKC_E_BBLOCK) == bblock)
            return c;
    return RKC_NIL;
}

static void idx_insert(struct rk_cache_meta *m, uint32_t c, uint64_t bblock, bool dirty)
{
    uint32_t h = idx_hash(m, bblock);
    m->ent[c] = RKC_E_MAPPED | (dirty ? RKC_E_DIRTY : 0) | bblock;
    m->next[c] = m->bucket[h];
    m->bucket[h] = c;
    m->nmapped++;
    m->ndirty += dirty;
}

static void idx_remove(struct rk_cache_meta *m, uint32_t c)
{
    uint32_t *p = &m->bucket[idx_hash(m, m->ent[c] & RKC_E_BBLOCK)];
    while (*p != c)
        p = &m->next[*p];
    *p = m->next[c];
    m->next[c] = RKC_NIL;
    m->nmapped--;
    m->ndirty -= (m->ent[c] & RKC_E_DIRTY) != 0;
    m->ent[c] = 0;
}

static void idx_set_dirty(struct rk_cache_meta *m, uint32_t c, bool dirty)
{
    bool was = (m->ent[c] & RKC_E_DIRTY) != 0;
    if (was == dirty)
        return;
    m->ent[c] ^= RKC_E_DIRTY;
    if (dirty)
        m->ndirty++;
    else
        m->ndirty--;
}

void rkc_free_push(struct rk_cache_meta *m, uint32_t c)
{
    m->ent[c] = 0;
    m->next[c] = m->free_head;
    m->free_head = c;
    m->nfree++;
}

void rkc_index_build_free(struct rk_cache_meta *m)
{
    m->free_head = RKC_NIL;
    m->nfree = 0;
    for (uint64_t c = m->sb.nblocks; c-- > 0;)
        if (!(m->ent[c] & RKC_E_MAPPED))
            rkc_free_push(m, (uint32_t)c);
}

int rkc_index_apply(struct rk_cache_meta *m, uint64_t w0, uint64_t w1, char *err, size_t errlen)
{
    unsigned op = (unsigned)(w0 >> 56);
    uint64_t c = w0 & ((1ull << 56) - 1);
    if (op == RKC_OP_MODE) {
        if (c || w1 > RK_CACHE_WRITEAROUND)
            goto bad;
        m->mode = (enum rk_cache_mode)w1;
        return 0;
    }
    if (c >= m->sb.nblocks || op < RKC_OP_MAP_CLEAN || op > RKC_OP_UNMAP)
        goto bad;
    bool mapped = (m->ent[c] & RKC_E_MAPPED) != 0;
    switch (op) {
    case RKC_OP_MAP_CLEAN:
    case RKC_OP_MAP_DIRTY:
        if (mapped || w1 >= m->array_blocks || idx_find(m, w1) != RKC_NIL)
            goto bad;
        idx_insert(m, (uint32_t)c, w1, op == RKC_OP_MAP_DIRTY);
        return 0;
    case RKC_OP_SET_DIRTY:
    case RKC_OP_SET_CLEAN:
        if (!mapped || w1)
            goto bad;
        idx_set_dirty(m, (uint32_t)c, op == RKC_OP_SET_DIRTY);
        return 0;
    default: /* RKC_OP_UNMAP */
        if (!mapped || w1)
            goto bad;
        idx_remove(m, (uint32_t)c);
        return 0;
    }
bad:
    rk_set_err(err, errlen, "invalid record (op %u, cache block %llu, argument %llu)", op,
               (unsigned long long)c, (unsigned long long)w1);
    return -EINVAL;
}

void rkc_queue(struct rk_cache_meta *m, enum rkc_op op, uint64_t cblock, uint64_t arg)
{
    m->queued++; /* counted even when it cannot be kept: the commit then fails */
    if (m->npend == m->pend_cap) {
        size_t cap = m->pend_cap ? 2 * m->pend_cap : 256;
        uint64_t *p = realloc(m->pend, cap * 2 * sizeof(*p));
        if (!p) {
            /* Cannot remember the change: the metadata can no longer be made durable. */
            m->failed = m->failed ? m->failed : -ENOMEM;
            return;
        }
        m->pend = p;
        m->pend_cap = cap;
    }
    m->pend[2 * m->npend] = ((uint64_t)op << 56) | cblock;
    m->pend[2 * m->npend + 1] = arg;
    m->npend++;
}

/* ---- the public index calls (meta.h) ---- */

int rk_cache_meta_lookup(struct rk_cache_meta *m, uint64_t bblock, uint64_t *cblock, bool *dirty)
{
    pthread_mutex_lock(&m->lock);
    uint32_t c = bblock <= RKC_E_BBLOCK ? idx_find(m, bblock) : RKC_NIL;
    if (c != RKC_NIL) {
        *cblock = c;
        if (dirty)
            *dirty = (m->ent[c] & RKC_E_DIRTY) != 0;
    }
    pthread_mutex_unlock(&m->lock);
    return c == RKC_NIL ? -ENOENT : 0;
}

int rk_cache_meta_alloc(struct rk_cache_meta *m, uint64_t *cblock)
{
    pthread_mutex_lock(&m->lock);
    uint32_t c = m->free_head;
    if (c != RKC_NIL) {
        m->free_head = m->next[c];
        m->next[c] = RKC_NIL;
        m->ent[c] = RKC_E_ALLOC;
        m->nfree--;
        *cblock = c;
    }
    pthread_mutex_unlock(&m->lock);
    return c == RKC_NIL ? -ENOSPC : 0;
}

/* Misuse of the interface (a caller bug): logged once per call, the index stays as it was. */
static bool idx_misuse(const struct rk_cache_meta *m, const char *what, uint64_t cblock)
{
    rk_err("cache %s: %s of cache block %llu in the wrong state (ignored)", m->name, what,
           (unsigned long long)cblock);
    return true;
}

void rk_cache_meta_release(struct rk_cache_meta *m, uint64_t cblock)
{
    pthread_mutex_lock(&m->lock);
    if (cblock < m->sb.nblocks && m->ent[cblock] == RKC_E_ALLOC)
        rkc_free_push(m, (uint32_t)cblock);
    else
        idx_misuse(m, "release", cblock);
    pthread_mutex_unlock(&m->lock);
}

void rk_cache_meta_map(struct rk_cache_meta *m, uint64_t cblock, uint64_t bblock, bool dirty)
{
    pthread_mutex_lock(&m->lock);
    if (cblock < m->sb.nblocks && m->ent[cblock] == RKC_E_ALLOC && bblock < m->array_blocks &&
        idx_find(m, bblock) == RKC_NIL) {
        idx_insert(m, (uint32_t)cblock, bblock, dirty);
        rkc_queue(m, dirty ? RKC_OP_MAP_DIRTY : RKC_OP_MAP_CLEAN, cblock, bblock);
    } else {
        rk_err("cache %s: map of cache block %llu to backing block %llu: the cache block was "
               "not allocated or the backing block is mapped or out of range (ignored)",
               m->name, (unsigned long long)cblock, (unsigned long long)bblock);
    }
    pthread_mutex_unlock(&m->lock);
}

void rk_cache_meta_set_dirty(struct rk_cache_meta *m, uint64_t cblock, bool dirty)
{
    pthread_mutex_lock(&m->lock);
    if (cblock < m->sb.nblocks && (m->ent[cblock] & RKC_E_MAPPED)) {
        if (((m->ent[cblock] & RKC_E_DIRTY) != 0) != dirty) {
            idx_set_dirty(m, (uint32_t)cblock, dirty);
            rkc_queue(m, dirty ? RKC_OP_SET_DIRTY : RKC_OP_SET_CLEAN, cblock, 0);
        }
    } else {
        idx_misuse(m, "set_dirty", cblock);
    }
    pthread_mutex_unlock(&m->lock);
}

void rk_cache_meta_unmap(struct rk_cache_meta *m, uint64_t cblock)
{
    pthread_mutex_lock(&m->lock);
    if (cblock < m->sb.nblocks && (m->ent[cblock] & RKC_E_MAPPED)) {
        idx_remove(m, (uint32_t)cblock);
        m->ent[cblock] = RKC_E_LIMBO;
        rkc_queue(m, RKC_OP_UNMAP, cblock, 0);
    } else {
        idx_misuse(m, "unmap", cblock);
    }
    pthread_mutex_unlock(&m->lock);
}

struct dirty_pair {
    uint64_t bblock, cblock;
};

static int pair_cmp(const void *a, const void *b)
{
    const struct dirty_pair *x = a, *y = b;
    return x->bblock < y->bblock ? -1 : x->bblock > y->bblock;
}

/* Keep the k smallest bblocks seen in a max-heap h of n <= k pairs. */
static void heap_offer(struct dirty_pair *h, size_t *n, size_t k, struct dirty_pair p)
{
    size_t i;
    if (*n < k) {
        for (i = (*n)++; i > 0 && h[(i - 1) / 2].bblock < p.bblock; i = (i - 1) / 2)
            h[i] = h[(i - 1) / 2];
        h[i] = p;
        return;
    }
    if (p.bblock >= h[0].bblock)
        return;
    for (i = 0;;) { /* replace the root, sift down */
        size_t c = 2 * i + 1;
        if (c >= k)
            break;
        if (c + 1 < k && h[c + 1].bblock > h[c].bblock)
            c++;
        if (h[c].bblock <= p.bblock)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = p;
}

size_t rk_cache_meta_dirty_scan(struct rk_cache_meta *m, uint64_t from_bblock, size_t max,
                                void (*fn)(void *ctx, uint64_t cblock, uint64_t bblock), void *ctx)
{
    pthread_mutex_lock(&m->lock);
    size_t n = 0, cap = m->ndirty;
    if (max && max < cap)
        cap = max;
    struct dirty_pair *v = cap ? malloc(cap * sizeof(*v)) : NULL;
    for (uint64_t c = 0; v && c < m->sb.nblocks; c++) {
        uint64_t e = m->ent[c];
        if ((e & RKC_E_DIRTY) && (e & RKC_E_BBLOCK) >= from_bblock)
            heap_offer(v, &n, cap, (struct dirty_pair){e & RKC_E_BBLOCK, c});
    }
    pthread_mutex_unlock(&m->lock);
    if (!v)
        return 0;
    qsort(v, n, sizeof(*v), pair_cmp);
    for (size_t i = 0; i < n; i++)
        fn(ctx, v[i].cblock, v[i].bblock);
    free(v);
    return n;
}

void rk_cache_meta_stats(struct rk_cache_meta *m, struct rk_cache_meta_stats *out)
{
    pthread_mutex_lock(&m->lock);
    *out = (struct rk_cache_meta_stats){
        .mapped = m->nmapped,
        .dirty = m->ndirty,
        .free = m->nfree,
        .journal_bytes = m->jpos * RKC_BLK,
        .journal_size = m->sb.journal_size,
        .commits = m->commits,
        .checkpoints = m->checkpoints,
        .seq = m->next_seq,
    };
    pthread_mutex_unlock(&m->lock);
}
