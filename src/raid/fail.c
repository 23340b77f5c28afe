/* Member failures of an open array: the move of a slot to FAILED, its recording in the
 * superblocks (the member_failed callback) before any request that depended on it completes,
 * and the member round that fails the slots whose I/O failed (flush, bitmap area writes). */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid_int.h"

int raid_fail(struct raid_priv *r, uint32_t slot, int error)
{
    uint32_t bit = 1u << slot;
    /* The pending bit is set before the state reads FAILED (both under rec_lock), so a
     * request that routed around the slot always finds it in raid_fail_settle. */
    pthread_mutex_lock(&r->rec_lock);
    int s = atomic_load(&r->state[slot]);
    if (s == RK_SLOT_FAILED || s == RK_SLOT_MISSING) {
        pthread_mutex_unlock(&r->rec_lock);
        return 0;
    }
    /* Only this function moves a slot to FAILED, so the check above still holds; other
     * transitions (REBUILDING -> ACTIVE) are overridden: the failure wins. */
    atomic_fetch_or(&r->rec_pending, bit);
    atomic_store(&r->state[slot], RK_SLOT_FAILED);
    pthread_mutex_unlock(&r->rec_lock);
    if (error)
        rk_warn("raid: slot %u (%s) failed: %s", slot, r->members[slot]->name, strerror(-error));
    else
        rk_warn("raid: slot %u (%s) marked failed on request", slot, r->members[slot]->name);
    /* Recording runs with whatever locks the failing request holds, but needs none of them:
     * the other requests wait for it in raid_fail_settle, outside every lock. */
    int rec = r->ev.member_failed ? r->ev.member_failed(r->ev.ctx, slot, error) : 0;
    pthread_mutex_lock(&r->rec_lock);
    if (rec && !atomic_load(&r->writes_stopped)) {
        rk_err("raid: the failure of slot %u could not be recorded in any superblock (%s): "
               "writes and flushes fail with EIO from now on",
               slot, strerror(-rec));
        atomic_store(&r->writes_stopped, true);
    }
    atomic_fetch_and(&r->rec_pending, ~bit); /* after writes_stopped: settle reads them so */
    pthread_cond_broadcast(&r->rec_cond);
    pthread_mutex_unlock(&r->rec_lock);
    return rec;
}

int raid_fail_settle(struct raid_priv *r, int ret)
{
    uint32_t want = atomic_load(&r->rec_pending);
    if (want) {
        pthread_mutex_lock(&r->rec_lock);
        while (atomic_load(&r->rec_pending) & want)
            pthread_cond_wait(&r->rec_cond, &r->rec_lock);
        pthread_mutex_unlock(&r->rec_lock);
    }
    return atomic_load(&r->writes_stopped) ? -EIO : ret;
}

int raid_members_round(struct raid_priv *r, enum rk_op op, const void *buf, uint64_t len,
                       uint64_t off, uint32_t flags)
{
    struct rk_io io[RK_MAX_MEMBERS];
    uint32_t slot[RK_MAX_MEMBERS];
    struct rk_io_batch batch;
    uint32_t usable = raid_slot_mask(r, RAID_STATES_WRITE), failed = 0;
    int n = 0;

    rk_io_batch_init(&batch);
    for (uint32_t i = 0; i < r->l.g.members; i++) {
        if (!(usable & (1u << i)))
            continue;
        rk_io_init(&io[n], r->members[i], op, (void *)buf, len, off, flags);
        slot[n++] = i;
    }
    if (rk_io_run(&batch, io, n)) {
        for (int i = 0; i < n; i++) {
            if (io[i].result) {
                failed |= 1u << slot[i];
                raid_fail(r, slot[i], io[i].result);
            }
        }
    }
    rk_io_batch_destroy(&batch);
    return r->l.lvl->survives(&r->l, usable & ~failed) ? 0 : -EIO;
}
