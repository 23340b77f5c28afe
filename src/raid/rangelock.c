/* The range lock of a raid device (member data-area ranges, FIFO among overlapping requests)
 * and the switch that makes foreground writes take it while a background job runs. */
#include "raid/rangelock.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct raid_rangelock {
    pthread_mutex_t lock;   /* the range list; the drain wait of raid_range_activate */
    pthread_cond_t cond;    /* a range was released */
    pthread_cond_t drained; /* the last unlocked write ended while draining */
    struct raid_range *head, *tail;
    /* A job runs: writes take range locks. Writes that saw it clear are counted in unlocked;
     * a job starts only after they drained (raid_range_activate waits, draining set). */
    _Atomic int active;
    _Atomic int64_t unlocked;
    _Atomic int draining;
};

int raid_rangelock_init(struct raid_priv *r)
{
    struct raid_rangelock *rl = calloc(1, sizeof(*rl));
    if (!rl)
        return -ENOMEM;
    pthread_mutex_init(&rl->lock, NULL);
    pthread_cond_init(&rl->cond, NULL);
    pthread_cond_init(&rl->drained, NULL);
    r->rl = rl;
    return 0;
}

void raid_rangelock_destroy(struct raid_priv *r)
{
    struct raid_rangelock *rl = r->rl;
    if (!rl)
        return;
    pthread_cond_destroy(&rl->drained);
    pthread_cond_destroy(&rl->cond);
    pthread_mutex_destroy(&rl->lock);
    free(rl);
    r->rl = NULL;
}

static bool range_overlaps_earlier(const struct raid_range *n)
{
    for (const struct raid_range *p = n->prev; p; p = p->prev)
        if (p->off < n->end && n->off < p->end)
            return true;
    return false;
}

void raid_range_lock(struct raid_priv *r, struct raid_range *node, uint64_t off, uint64_t len)
{
    struct raid_rangelock *rl = r->rl;
    node->off = off;
    node->end = off + len;
    node->next = NULL;
    pthread_mutex_lock(&rl->lock);
    node->prev = rl->tail;
    if (rl->tail)
        rl->tail->next = node;
    else
        rl->head = node;
    rl->tail = node;
    while (range_overlaps_earlier(node))
        pthread_cond_wait(&rl->cond, &rl->lock);
    pthread_mutex_unlock(&rl->lock);
}

void raid_range_unlock(struct raid_priv *r, struct raid_range *node)
{
    struct raid_rangelock *rl = r->rl;
    pthread_mutex_lock(&rl->lock);
    if (node->prev)
        node->prev->next = node->next;
    else
        rl->head = node->next;
    if (node->next)
        node->next->prev = node->prev;
    else
        rl->tail = node->prev;
    pthread_cond_broadcast(&rl->cond);
    pthread_mutex_unlock(&rl->lock);
}

/* Levels that rebuild place array data at non-decreasing member offsets (raid_level.map), so
 * the first byte's lowest copy and the last byte's highest copy bound the span. Striped levels
 * (raid5/6, raid10) only per row of chunks: the next chunk of the same row starts again at the
 * row's first member offset, so a range that leaves its first extent spans whole chunks of the
 * rows it touches (rounded out to the chunk; a region is a multiple of the chunk, so the regions
 * named stay exactly those written). Before this rounding, a write from the middle of one chunk
 * into the next chunk of its row gave lo >= hi and fell back to the whole member. */
void raid_member_span(struct raid_priv *r, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run, chunk = l->g.chunk;
    int n = l->lvl->map(l, off, c, RK_MAX_MEMBERS, &run);
    bool whole_chunks = chunk && len > run;
    *lo = UINT64_MAX;
    for (int i = 0; i < n; i++)
        if (c[i].member_off < *lo)
            *lo = c[i].member_off;
    if (whole_chunks && *lo != UINT64_MAX)
        *lo -= *lo % chunk;
    n = l->lvl->map(l, off + len - 1, c, RK_MAX_MEMBERS, &run);
    *hi = 0;
    for (int i = 0; i < n; i++)
        if (c[i].member_off + 1 > *hi)
            *hi = c[i].member_off + 1;
    if (whole_chunks && *hi % chunk)
        *hi += chunk - *hi % chunk;
    if (n <= 0 || *lo >= *hi) {
        *lo = 0;
        *hi = UINT64_MAX;
    }
}

/* One unlocked write ended (or turned into a locked one): wake a starting job when it was the
 * last. Sequentially consistent with raid_range_activate: either the job's check sees this
 * decrement, or this sees draining and wakes it (under the lock: the wake-up is not lost). */
static void unlocked_put(struct raid_rangelock *rl)
{
    if (atomic_fetch_sub(&rl->unlocked, 1) == 1 && atomic_load(&rl->draining)) {
        pthread_mutex_lock(&rl->lock);
        pthread_cond_broadcast(&rl->drained);
        pthread_mutex_unlock(&rl->lock);
    }
}

bool raid_write_begin(struct raid_priv *r, struct raid_range *node, uint64_t off, uint64_t len)
{
    struct raid_rangelock *rl = r->rl;
    /* Only levels that can rebuild have jobs that write member data behind the engine. */
    if (!rl || !r->l.lvl->reconstruct || !len)
        return false;
    atomic_fetch_add(&rl->unlocked, 1);
    if (!atomic_load(&rl->active))
        return false;
    unlocked_put(rl);
    uint64_t lo, hi;
    raid_member_span(r, off, len, &lo, &hi);
    raid_range_lock(r, node, lo, hi - lo);
    return true;
}

void raid_write_end(struct raid_priv *r, struct raid_range *node, bool locked)
{
    struct raid_rangelock *rl = r->rl;
    if (locked)
        raid_range_unlock(r, node);
    else if (rl && r->l.lvl->reconstruct)
        unlocked_put(rl);
}

void raid_range_activate(struct raid_priv *r)
{
    struct raid_rangelock *rl = r->rl;
    atomic_store(&rl->active, 1);
    /* Writes that started before saw no job and hold no lock: wait them out. */
    pthread_mutex_lock(&rl->lock);
    atomic_store(&rl->draining, 1);
    while (atomic_load(&rl->unlocked) > 0)
        pthread_cond_wait(&rl->drained, &rl->lock);
    atomic_store(&rl->draining, 0);
    pthread_mutex_unlock(&rl->lock);
}

void raid_range_deactivate(struct raid_priv *r)
{
    atomic_store(&r->rl->active, 0);
}
