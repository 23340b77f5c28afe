/* The bad-range table of a raid device: lock-free lookups for reads, appends and drops under a
 * small lock, and the public listing and preloading (rk_raid_bad_ranges, rk_raid_add_bad_range). */
#include "raid/badrange.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/util.h"

#define RAID_BAD_DEAD UINT32_MAX /* slot of a dropped entry */

/*
 * Readers scan [0, nbad) without the lock. An entry is published by storing its slot last
 * (release; readers load it with acquire), and dropped (slot replaced) by storing RAID_BAD_DEAD
 * as its slot. Dead entries are reused under the lock (a reader that raced the reuse may pair
 * the old slot, which is being replaced and serves no reads, with the new range); nbad only
 * grows. last: index of the newest entry.
 */
struct raid_badtab {
    pthread_mutex_t lock; /* appends, drops, listing */
    _Atomic int nbad;
    int last;
    struct rk_raid_bad_range bad[RAID_BAD_MAX];
};

int raid_badtab_init(struct raid_priv *r)
{
    struct raid_badtab *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    pthread_mutex_init(&t->lock, NULL);
    r->bad = t;
    return 0;
}

void raid_badtab_destroy(struct raid_priv *r)
{
    struct raid_badtab *t = r->bad;
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t);
    r->bad = NULL;
}

static uint32_t bad_slot(const struct rk_raid_bad_range *b)
{
    return __atomic_load_n(&b->slot, __ATOMIC_ACQUIRE);
}

bool raid_bad_hit(struct raid_priv *r, uint32_t slot, uint64_t moff, uint64_t len)
{
    struct raid_badtab *t = r->bad;
    if (!t)
        return false;
    int n = atomic_load_explicit(&t->nbad, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        const struct rk_raid_bad_range *b = &t->bad[i];
        if (bad_slot(b) == slot && b->member_off < moff + len && moff < b->member_off + b->len)
            return true;
    }
    return false;
}

bool raid_bad_recorded(struct raid_priv *r)
{
    return r->bad && atomic_load(&r->bad->nbad) > 0;
}

/* Under t->lock: is [moff, moff+len) of slot inside one entry already? */
static bool bad_covered(const struct raid_badtab *t, int n, uint32_t slot, uint64_t moff,
                        uint64_t len)
{
    for (int i = 0; i < n; i++) {
        const struct rk_raid_bad_range *b = &t->bad[i];
        if (b->slot == slot && b->member_off <= moff && moff + len <= b->member_off + b->len)
            return true;
    }
    return false;
}

int raid_bad_add(struct raid_priv *r, uint32_t slot, uint64_t moff, uint64_t len)
{
    struct raid_badtab *t = r->bad;
    int ret = 0;
    bool merged = false;
    pthread_mutex_lock(&t->lock);
    int n = atomic_load(&t->nbad), last = t->last;
    /* Already covered (a rebuild restarted over a range loaded from the superblock). */
    if (bad_covered(t, n, slot, moff, len)) {
        pthread_mutex_unlock(&t->lock);
        return 0;
    }
    int free_at = -1;
    for (int i = 0; i < n && free_at < 0; i++)
        if (t->bad[i].slot == RAID_BAD_DEAD)
            free_at = i;
    if (n > 0 && t->bad[last].slot == slot && t->bad[last].member_off + t->bad[last].len == moff) {
        /* Extending the last entry is safe for lock-free readers: a reader seeing the old
         * length only misses the new part, which the caller has not made readable yet. */
        t->bad[last].len += len;
        merged = true;
    } else if (free_at >= 0 || n < RAID_BAD_MAX) {
        int i = free_at >= 0 ? free_at : n;
        t->bad[i].member_off = moff;
        t->bad[i].len = len;
        __atomic_store_n(&t->bad[i].slot, slot, __ATOMIC_RELEASE);
        t->last = i;
        if (i == n)
            atomic_store_explicit(&t->nbad, n + 1, memory_order_release);
    } else {
        ret = -ENOSPC;
    }
    pthread_mutex_unlock(&t->lock);
    if (!ret)
        rk_warn("raid: slot %u: data-area bytes [%llu, %llu) %s unreadable", slot,
                (unsigned long long)moff, (unsigned long long)(moff + len),
                merged ? "also" : "recorded as");
    return ret;
}

void raid_bad_drop(struct raid_priv *r, uint32_t slot)
{
    struct raid_badtab *t = r->bad;
    int dropped = 0;
    pthread_mutex_lock(&t->lock);
    int n = atomic_load(&t->nbad);
    for (int i = 0; i < n; i++)
        if (t->bad[i].slot == slot) {
            __atomic_store_n(&t->bad[i].slot, RAID_BAD_DEAD, __ATOMIC_RELEASE);
            dropped++;
        }
    pthread_mutex_unlock(&t->lock);
    if (dropped)
        rk_info("raid: slot %u: %d unreadable range%s dropped (the slot is being replaced)", slot,
                dropped, dropped > 1 ? "s" : "");
}

int rk_raid_bad_ranges(struct rk_dev *raid, struct rk_raid_bad_range *out, int max)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r)
        return -EINVAL;
    struct raid_badtab *t = r->bad;
    int total = 0;
    pthread_mutex_lock(&t->lock);
    int n = atomic_load(&t->nbad);
    for (int i = 0; i < n; i++) {
        const struct rk_raid_bad_range *b = &t->bad[i];
        /* Dropped entries and those of a failed slot (never read again; a replace drops them)
         * are not reported, so they do not reach the superblock. */
        if (b->slot == RAID_BAD_DEAD || atomic_load(&r->state[b->slot]) == RK_SLOT_FAILED)
            continue;
        if (total < max)
            out[total] = *b;
        total++;
    }
    pthread_mutex_unlock(&t->lock);
    return total;
}

int rk_raid_add_bad_range(struct rk_dev *raid, uint32_t slot, uint64_t member_off, uint64_t len)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || slot >= r->l.g.members || !len || member_off > r->l.g.data_size[slot] ||
        len > r->l.g.data_size[slot] - member_off)
        return -EINVAL;
    return raid_bad_add(r, slot, member_off, len);
}
