/* The range lock of a raid device (member data-area ranges, FIFO among overlapping requests),
 * the bad-range list reads consult, and the setup/teardown of the management state. */
#include "raid/rangelock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

double raid_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint32_t raid_active_mask(struct raid_priv *r)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < r->l.g.members; i++)
        if (atomic_load(&r->state[i]) == RK_SLOT_ACTIVE && r->members[i])
            m |= 1u << i;
    return m;
}

int raid_mgmt_init(struct raid_priv *r, struct rk_dev *dev)
{
    struct raid_mgmt *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    m->dev = dev;
    r->mgmt = m;
    return 0;
}

void raid_mgmt_destroy(struct raid_priv *r)
{
    struct raid_mgmt *m = r->mgmt;
    if (!m)
        return;
    rk_raid_job_stop(m->dev);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
    free(m);
    r->mgmt = NULL;
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
    struct raid_mgmt *m = r->mgmt;
    node->off = off;
    node->end = off + len;
    node->next = NULL;
    pthread_mutex_lock(&m->lock);
    node->prev = m->tail;
    if (m->tail)
        m->tail->next = node;
    else
        m->head = node;
    m->tail = node;
    while (range_overlaps_earlier(node))
        pthread_cond_wait(&m->cond, &m->lock);
    pthread_mutex_unlock(&m->lock);
}

void raid_range_unlock(struct raid_priv *r, struct raid_range *node)
{
    struct raid_mgmt *m = r->mgmt;
    pthread_mutex_lock(&m->lock);
    if (node->prev)
        node->prev->next = node->next;
    else
        m->head = node->next;
    if (node->next)
        node->next->prev = node->prev;
    else
        m->tail = node->prev;
    pthread_cond_broadcast(&m->cond);
    pthread_mutex_unlock(&m->lock);
}

/* Member data-area span [lo, hi) that array range [off, off+len) touches on any slot: the copy
 * levels place array data at non-decreasing member offsets, so the first byte's lowest copy and
 * the last byte's highest copy bound it. */
static void raid_write_span(struct raid_priv *r, uint64_t off, uint64_t len, uint64_t *lo,
                            uint64_t *hi)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run;
    int n = l->lvl->map(l, off, c, RK_MAX_MEMBERS, &run);
    *lo = UINT64_MAX;
    for (int i = 0; i < n; i++)
        if (c[i].member_off < *lo)
            *lo = c[i].member_off;
    n = l->lvl->map(l, off + len - 1, c, RK_MAX_MEMBERS, &run);
    *hi = 0;
    for (int i = 0; i < n; i++)
        if (c[i].member_off + 1 > *hi)
            *hi = c[i].member_off + 1;
    if (n <= 0 || *lo >= *hi) {
        *lo = 0;
        *hi = UINT64_MAX;
    }
}

bool raid_write_begin(struct raid_priv *r, struct raid_range *node, uint64_t off, uint64_t len)
{
    struct raid_mgmt *m = r->mgmt;
    /* Only levels that can rebuild have jobs that write member data behind the engine. */
    if (!m || !r->l.lvl->reconstruct || !len)
        return false;
    atomic_fetch_add(&m->unlocked, 1);
    if (!atomic_load(&m->active))
        return false;
    atomic_fetch_sub(&m->unlocked, 1);
    uint64_t lo, hi;
    raid_write_span(r, off, len, &lo, &hi);
    raid_range_lock(r, node, lo, hi - lo);
    return true;
}

void raid_write_end(struct raid_priv *r, struct raid_range *node, bool locked)
{
    struct raid_mgmt *m = r->mgmt;
    if (locked)
        raid_range_unlock(r, node);
    else if (m && r->l.lvl->reconstruct)
        atomic_fetch_sub(&m->unlocked, 1);
}

void raid_mgmt_activate(struct raid_priv *r)
{
    struct raid_mgmt *m = r->mgmt;
    atomic_store(&m->active, 1);
    /* Writes that started before saw no job and hold no lock; wait them out (sequentially
     * consistent: a write either sees active or is counted here). */
    while (atomic_load(&m->unlocked) > 0)
        usleep(200);
}

static uint32_t bad_slot(const struct rk_raid_bad_range *b)
{
    return __atomic_load_n(&b->slot, __ATOMIC_ACQUIRE);
}

bool raid_bad_hit(struct raid_priv *r, uint32_t slot, uint64_t moff, uint64_t len)
{
    struct raid_mgmt *m = r->mgmt;
    if (!m)
        return false;
    int n = atomic_load_explicit(&m->nbad, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        const struct rk_raid_bad_range *b = &m->bad[i];
        if (bad_slot(b) == slot && b->member_off < moff + len && moff < b->member_off + b->len)
            return true;
    }
    return false;
}

int raid_bad_add(struct raid_priv *r, uint32_t slot, uint64_t moff, uint64_t len)
{
    struct raid_mgmt *m = r->mgmt;
    int ret = 0;
    bool merged = false;
    pthread_mutex_lock(&m->lock);
    int n = atomic_load(&m->nbad), last = m->bad_last;
    /* Already covered (a rebuild restarted over a range loaded from the superblock). */
    for (int i = 0; i < n; i++) {
        const struct rk_raid_bad_range *b = &m->bad[i];
        if (b->slot == slot && b->member_off <= moff && moff + len <= b->member_off + b->len) {
            pthread_mutex_unlock(&m->lock);
            return 0;
        }
    }
    int free_at = -1;
    for (int i = 0; i < n && free_at < 0; i++)
        if (m->bad[i].slot == RAID_BAD_DEAD)
            free_at = i;
    if (n > 0 && m->bad[last].slot == slot && m->bad[last].member_off + m->bad[last].len == moff) {
        /* Extending the last entry is safe for lock-free readers: a reader seeing the old
         * length only misses the new part, which the caller has not made readable yet. */
        m->bad[last].len += len;
        merged = true;
    } else if (free_at >= 0 || n < RAID_BAD_MAX) {
        int i = free_at >= 0 ? free_at : n;
        m->bad[i].member_off = moff;
        m->bad[i].len = len;
        __atomic_store_n(&m->bad[i].slot, slot, __ATOMIC_RELEASE);
        m->bad_last = i;
        if (i == n)
            atomic_store_explicit(&m->nbad, n + 1, memory_order_release);
    } else {
        ret = -ENOSPC;
    }
    pthread_mutex_unlock(&m->lock);
    if (!ret)
        rk_warn("raid: slot %u: data-area bytes [%llu, %llu) %s unreadable", slot,
                (unsigned long long)moff, (unsigned long long)(moff + len),
                merged ? "also" : "recorded as");
    return ret;
}

void raid_bad_drop(struct raid_priv *r, uint32_t slot)
{
    struct raid_mgmt *m = r->mgmt;
    int dropped = 0;
    pthread_mutex_lock(&m->lock);
    int n = atomic_load(&m->nbad);
    for (int i = 0; i < n; i++)
        if (m->bad[i].slot == slot) {
            __atomic_store_n(&m->bad[i].slot, RAID_BAD_DEAD, __ATOMIC_RELEASE);
            dropped++;
        }
    pthread_mutex_unlock(&m->lock);
    if (dropped)
        rk_info("raid: slot %u: %d unreadable range%s dropped (the slot is being replaced)", slot,
                dropped, dropped > 1 ? "s" : "");
}

uint64_t raid_job_end(const struct raid_priv *r)
{
    const struct raid_layout *l = &r->l;
    uint64_t chunk = l->g.chunk;
    switch (l->g.level) {
    case RK_LEVEL_LINEAR:
    case RK_LEVEL_RAID0: {
        uint64_t mx = 0;
        for (uint32_t i = 0; i < l->g.members; i++)
            if (l->g.data_size[i] > mx)
                mx = l->g.data_size[i];
        return mx;
    }
    case RK_LEVEL_RAID1:
        return l->size;
    case RK_LEVEL_RAID10: {
        /* 2 positions per array chunk, row-major over the members. */
        uint64_t pos = l->size / chunk * 2, n = l->g.members;
        return (pos + n - 1) / n * chunk;
    }
    default:
        return l->min_data / chunk * chunk;
    }
}
