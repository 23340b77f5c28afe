/* The scrub driver: walk the members' data areas in steps under the range lock, let the level's
 * scrub hook compare (and repair) copies or parity, and read everything on levels without one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/rangelock.h"

/* Levels without redundancy: read the step on every live member, count read errors. */
static int scrub_read_all(struct raid_priv *r, uint64_t pos, uint64_t len, char *buf)
{
    const struct rk_raid_geom *g = &r->l.g;
    uint32_t active = raid_active_mask(r);
    int ret = 0;
    for (uint32_t s = 0; s < g->members; s++) {
        if (!(active & (1u << s)) || pos >= g->data_size[s])
            continue;
        uint64_t n = g->data_size[s] - pos < len ? g->data_size[s] - pos : len;
        if (rk_dev_read(r->members[s], buf, n, g->data_offset + pos)) {
            rk_warn("scrub: read error on slot %u in data bytes [%llu, %llu)", s,
                    (unsigned long long)pos, (unsigned long long)(pos + n));
            ret = -EIO;
        }
    }
    return ret;
}

void *raid_scrub_thread(void *arg)
{
    struct raid_priv *r = arg;
    struct raid_mgmt *m = r->mgmt;
    bool repair = m->prog.repair;
    uint64_t pos = m->prog.start, end = m->prog.end;
    uint64_t step = raid_job_step(r, m->prog.rate_limit);
    char *buf = r->l.lvl->scrub ? NULL : rk_buf_alloc(step);
    int err = r->l.lvl->scrub || buf ? 0 : -ENOMEM;

    rk_info("scrub (%s) started over %llu bytes of each member", repair ? "repair" : "check",
            (unsigned long long)end);
    /* Where no redundant copy or parity is left there is nothing to compare: say so rather
     * than let "0 mismatches" read like a clean bill of health. */
    int missing = (int)r->l.g.members - __builtin_popcount(raid_active_mask(r));
    int tolerated = r->l.lvl->max_failed(r->l.g.members);
    if (tolerated == 0)
        rk_warn("scrub: %s has no redundancy: it reads everything and reports read errors only",
                r->l.lvl->name);
    else if (missing >= tolerated)
        rk_warn("scrub: the array is degraded (%d of %u slots unavailable): data without a "
                "remaining copy or parity is only read, not compared",
                missing, r->l.g.members);
    while (!err && pos < end) {
        if (atomic_load(&m->stop)) {
            err = -EINTR;
            break;
        }
        uint64_t len = end - pos < step ? end - pos : step, mm = 0;
        struct raid_range lk;
        raid_range_lock(r, &lk, pos, len);
        int rc = r->l.lvl->scrub ? r->l.lvl->scrub(r, pos, len, repair, &mm)
                                 : scrub_read_all(r, pos, len, buf);
        raid_range_unlock(r, &lk);
        pthread_mutex_lock(&m->lock);
        m->prog.mismatches += mm;
        if (repair)
            m->prog.repaired += mm;
        if (rc == -EIO)
            m->prog.bad_ranges++;
        pthread_mutex_unlock(&m->lock);
        if (rc && rc != -EIO)
            err = rc;
        pos += len;
        raid_job_advance(r, pos);
    }
    free(buf);
    pthread_mutex_lock(&m->lock);
    uint64_t mm = m->prog.mismatches, bad = m->prog.bad_ranges;
    pthread_mutex_unlock(&m->lock);
    if (err)
        rk_warn("scrub stopped: %s", strerror(-err));
    else
        rk_info("scrub finished: %llu mismatches%s, %llu unreadable ranges", (unsigned long long)mm,
                repair ? " (repaired)" : "", (unsigned long long)bad);
    raid_job_finish(r, err);
    return NULL;
}
