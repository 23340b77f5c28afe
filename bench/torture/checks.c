/* The torture driver's checks after a power cut (driver.h): per variant, reopen the array from
 * the member images, verify every stamped block against what was acknowledged, resync/rebuild,
 * scrub, and the degraded and read-only starts. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "claims.h"
#include "driver.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

/* Scrub (check only) and count its mismatches into cy; lax: mismatches are counted, not a
 * failure. */
static void cycle_scrub(struct rk_dev *raid, struct cyc *cy, bool lax)
{
    int r = rk_raid_job_wait(raid); /* the resync of the dirty restart, or a rebuild */
    if (r < 0 && r != -EINTR)       /* -EINTR: stopped (--no-resync) */
        FAILF(cy, "resync/rebuild job failed: %s", strerror(-r));
    r = rk_raid_scrub_start(raid, false, 0);
    if (r == 0)
        r = rk_raid_job_wait(raid);
    struct rk_raid_progress p;
    if (r < 0 || rk_raid_progress(raid, &p) < 0) {
        FAILF(cy, "scrub failed: %s", strerror(-r));
        return;
    }
    if (lax) {
        cy->mism_lax = p.last_mismatches + p.last_errors;
        return;
    }
    cy->mism = p.last_mismatches + p.last_errors;
    if (cy->mism)
        FAILF(cy, "scrub: %" PRIu64 " mismatches, %" PRIu64 " read errors", p.last_mismatches,
              p.last_errors);
}

static void verify_into(const struct wl *w, struct rk_dev *dev, struct wl_verify *v, struct cyc *cy,
                        const char *when, struct claims *cl)
{
    wl_verify(w, dev, v, cl ? claims_skip : NULL, cl);
    if (!wl_verify_ok(v))
        FAILF(cy,
              "verify %s: lost_flush=%" PRIu64 " lost_fua=%" PRIu64 " garbage=%" PRIu64
              " read_errors=%" PRIu64 " (first: block %" PRIu64 " holds %" PRId64
              ", durable %" PRIu32 ", newest written %" PRIu32 "%s)",
              when, v->lost_flush, v->lost_fua, v->garbage, v->read_errors, v->first_bad,
              v->first_bad_g, w->durable[v->first_bad], w->issued[v->first_bad],
              w->issued[v->first_bad] ? "" : ": never written in this cycle");
}

/* Phase 2 of variant fail: all members, verify, resync + scrub, fail a slot, verify. */
void cycle_fail(const struct cfg *c, struct arr *a, struct wl *w, struct cyc *cy)
{
    const char *paths[MAX_MEMBERS];
    for (int i = 0; i < a->n; i++)
        paths[i] = a->path[i];
    struct rk_volume *v;
    char err[256];
    if (rk_volume_open(paths, a->n, NULL, &v, err, sizeof(err)) < 0) {
        FAILF(cy, "restart: %s", err);
        return;
    }
    struct rk_dev *raid = rk_volume_raid(v);
    if (c->no_resync) /* what the log replay alone left: the scrub then sees every stale stripe */
        rk_raid_job_stop(raid);
    verify_into(w, rk_volume_dev(v), &cy->v1, cy, "after restart", NULL);
    cycle_scrub(raid, cy, false);
    uint32_t slot = (uint32_t)(cy->seed % (uint64_t)a->n);
    int r = rk_raid_fail_slot(raid, slot);
    if (r < 0)
        FAILF(cy, "fail slot %u: %s", slot, strerror(-r));
    else
        verify_into(w, rk_volume_dev(v), &cy->v2, cy, "after fail", NULL);
    if (rk_volume_close(v) < 0)
        FAILF(cy, "clean close failed");
}

/* Open without cl->slot (degraded, force as asked) with the replay's claims collected in cl. */
static int open_degraded(struct arr *a, struct claims *cl, bool force, struct rk_volume **v,
                         char *err, size_t errlen)
{
    const char *paths[MAX_MEMBERS];
    int n = 0;
    for (int i = 0; i < a->n; i++)
        if ((uint32_t)i != cl->slot)
            paths[n++] = a->path[i];
    struct rk_open_opts oo = {.degraded = true, .force = force};
    claims_begin(cl);
    int ret = rk_volume_open(paths, n, &oo, v, err, errlen);
    claims_end(cl);
    return ret;
}

/* Phase 2 of variant remove: dirty + degraded start without a slot, verify, replace the slot
 * with an empty member, rebuild, scrub, verify. A start refused because the log cannot prove
 * every stripe is the safe answer (counted as refused); the cycle then starts with force, as a
 * user would, and checks what the replay claims: every block reads old or new except the
 * missing slot's blocks in the cells it left unproven. */
void cycle_remove(const struct cfg *c, struct arr *a, struct wl *w, struct cyc *cy)
{
    uint32_t slot = (uint32_t)(cy->seed % (uint64_t)a->n);
    bool parity = a->level == RK_LEVEL_RAID5 || a->level == RK_LEVEL_RAID6;
    struct claims cl;
    struct rk_volume *v;
    char err[256];
    if (claims_init(&cl, (uint32_t)a->n, a->level == RK_LEVEL_RAID6 ? 2 : 1, slot,
                    c->member_bytes / CHUNK)) {
        FAILF(cy, "out of memory");
        return;
    }
    int ret = open_degraded(a, &cl, false, &v, err, sizeof(err));
    if (ret == -EUCLEAN) { /* the log cannot prove every stripe: refused without --force */
        cy->refused = cy->forced = true;
        ret = open_degraded(a, &cl, true, &v, err, sizeof(err));
    }
    if (ret < 0) {
        FAILF(cy, "degraded restart without slot %u%s: %s", slot, cy->forced ? " (forced)" : "",
              err);
        claims_free(&cl);
        return;
    }
    struct claims *skip = parity && cl.cells ? &cl : NULL;
    struct rk_dev *raid = rk_volume_raid(v);
    verify_into(w, rk_volume_dev(v), &cy->v1, cy, "degraded restart", skip);
    int r = rk_raid_job_wait(raid);
    if (r < 0)
        FAILF(cy, "job of the degraded restart failed: %s", strerror(-r));
    /* The slot comes back empty (a new disk): truncated to nothing and back. */
    if (truncate(a->path[slot], 0) || truncate(a->path[slot], (off_t)c->member_bytes)) {
        FAILF(cy, "truncate %s: %s", a->path[slot], strerror(errno));
    } else if ((r = rk_volume_replace(v, slot, a->path[slot], 0, err, sizeof(err))) < 0) {
        FAILF(cy, "replace slot %u: %s", slot, err);
    } else {
        /* raid6: a stripe left unproven may hold P and Q of different versions; the rebuild
         * makes one of them match, the scrub may see the other (raid5 has only one). */
        cycle_scrub(raid, cy, skip && a->level == RK_LEVEL_RAID6);
        verify_into(w, rk_volume_dev(v), &cy->v2, cy, "after rebuild", skip);
    }
    if (rk_volume_close(v) < 0)
        FAILF(cy, "clean close failed");
    claims_free(&cl);
}

/* The member files' content, read whole into img[i] (c->member_bytes each). 0 or -errno. */
static int arr_images(const struct cfg *c, const struct arr *a, uint8_t **img)
{
    for (int i = 0; i < a->n; i++) {
        int fd = img[i] ? open(a->path[i], O_RDONLY | O_CLOEXEC) : -1;
        ssize_t got = fd < 0 ? -1 : pread(fd, img[i], c->member_bytes, 0);
        if (fd >= 0)
            close(fd);
        if (got != (ssize_t)c->member_bytes)
            return -EIO;
    }
    return 0;
}

/* Phase 2 of variant rocheck: the dirty and degraded read-only start without slot seed %
 * members and without force reads the partial parity log (RK_LOG_CHECK) and is accepted only
 * when no entry is live, i.e. (the claim under test) no stripe can be torn: then every block
 * must read old or new, with the slot missing. Refused (-EUCLEAN) is the safe answer. Either
 * way the members must not change; an accepted start is followed by the writable degraded
 * start (no force), which must be accepted too (its replay finds nothing), and a verify. */
void cycle_rocheck(const struct cfg *c, struct arr *a, struct wl *w, struct cyc *cy)
{
    uint32_t slot = (uint32_t)(cy->seed % (uint64_t)a->n), gone = 1u << slot;
    /* raid6, odd seeds: a second slot missing too (both parities of some stripes gone). */
    if (a->level == RK_LEVEL_RAID6 && cy->seed % 2)
        gone |= 1u << (slot + 1 + (uint32_t)(cy->seed / (uint64_t)a->n) % (uint32_t)(a->n - 1)) %
                          (uint32_t)a->n;
    const char *paths[MAX_MEMBERS];
    uint8_t *before[MAX_MEMBERS] = {0}, *after[MAX_MEMBERS] = {0};
    int n = 0, ret = 0;
    for (int i = 0; i < a->n; i++) {
        if (!(gone & (1u << i)))
            paths[n++] = a->path[i];
        before[i] = malloc(c->member_bytes);
        after[i] = malloc(c->member_bytes);
    }
    char err[256];
    struct rk_volume *v;
    if (arr_images(c, a, before) < 0) {
        FAILF(cy, "cannot read the member images");
        goto out;
    }
    struct rk_open_opts ro = {.degraded = true, .read_only = true};
    ret = rk_volume_open(paths, n, &ro, &v, err, sizeof(err));
    if (ret == -EUCLEAN) {
        cy->refused = true;
    } else if (ret < 0) {
        FAILF(cy, "read-only degraded restart without slots 0x%x: %s", gone, err);
    } else {
        verify_into(w, rk_volume_dev(v), &cy->v1, cy, "read-only degraded restart", NULL);
        rk_volume_close(v);
    }
    if (arr_images(c, a, after) < 0) {
        FAILF(cy, "cannot read the member images");
        goto out;
    }
    for (int i = 0; i < a->n; i++)
        if (memcmp(before[i], after[i], c->member_bytes))
            FAILF(cy, "the read-only start (%s) changed member %d", ret ? "refused" : "accepted",
                  i);
    if (ret || cy->fail)
        goto out;
    struct rk_open_opts wo = {.degraded = true};
    if (rk_volume_open(paths, n, &wo, &v, err, sizeof(err)) < 0) {
        FAILF(cy, "the read-only degraded start was accepted, the writable one not: %s", err);
        goto out;
    }
    verify_into(w, rk_volume_dev(v), &cy->v2, cy, "writable degraded restart", NULL);
    rk_raid_job_wait(rk_volume_raid(v));
    if (rk_volume_close(v) < 0)
        FAILF(cy, "clean close failed");
out:
    for (int i = 0; i < a->n; i++) {
        free(before[i]);
        free(after[i]);
    }
}
