/* Adding a write-intent bitmap to an array created without one (`raidkit bitmap --add`,
 * docs/CLI.md): offline, the empty area first, then the superblocks that name it. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "meta/volume_int.h"
#include "raid/bitmap_disk.h"

/* Write an empty bitmap area of v's superblock fields to every active member, raw, flushed. */
static int vol_bitmap_write_empty(struct rk_volume *v, char *err, size_t errlen)
{
    uint8_t *area = rk_buf_alloc(v->sb.bitmap_size);
    if (!area) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    memset(area, 0, v->sb.bitmap_size);
    struct rk_bm_hdr h = {.region = v->sb.bitmap_region, .events = 1};
    h.nregions = (vol_max_data(v) + h.region - 1) / h.region;
    memcpy(h.uuid, v->sb.array_uuid, 16);
    rk_bm_encode(&h, area, v->sb.bitmap_size);
    int r = 0;
    for (uint32_t i = 0; i < v->sb.members && !r; i++) {
        if (!v->file[i] || v->sb.slots[i].state != RK_SLOT_ACTIVE)
            continue;
        r = rk_dev_write(v->file[i], area, v->sb.bitmap_size, v->sb.bitmap_offset, RK_WRITE_FUA);
        if (r)
            rk_set_err(err, errlen, "member %s: cannot write the bitmap: %s", v->paths[i],
                       strerror(-r));
    }
    free(area);
    return r;
}

/* The refusals of rk_volume_bitmap_add, on an open volume; *region gets the default when 0.
 * 0, or -errno with the reason in err. */
static int bitmap_add_check(struct rk_volume *v, uint64_t *region, char *err, size_t errlen)
{
    int r = 0;
    uint64_t maxd = vol_max_data(v);
    if (!*region)
        *region = rk_bm_default_region(maxd, v->sb.chunk);
    if (v->sb.bitmap_offset) {
        rk_set_err(err, errlen, "the array already has a write-intent bitmap");
        r = -EEXIST;
    } else if (rk_level_max_failed(v->sb.level, v->sb.members) == 0) {
        rk_set_err(err, errlen, "%s has no redundancy: nothing to resync, no bitmap",
                   rk_level_name(v->sb.level));
        r = -EOPNOTSUPP;
    } else if (v->resync || v->was_dirty || (v->sb.resync_flags & RK_SB_RESYNC_PENDING)) {
        rk_set_err(err, errlen, "the array is not in sync: serve it until its resync ends first");
        r = -EBUSY;
    } else {
        r = rk_bm_check_region(*region, maxd, v->sb.chunk, err, errlen);
    }
    return r;
}

int rk_volume_bitmap_add(const char *const *paths, int n, uint64_t region, char *err, size_t errlen)
{
    struct rk_volume *v = NULL;
    /* Every refusal is decided on a read-only open, which writes nothing to any member. */
    struct rk_open_opts ro = {.read_only = true};
    int r = rk_volume_open(paths, n, &ro, &v, err, errlen);
    if (r)
        return r;
    r = bitmap_add_check(v, &region, err, errlen);
    rk_volume_close(v);
    v = NULL;
    if (r)
        return r;
    struct rk_open_opts o = {.degraded = false};
    r = rk_volume_open(paths, n, &o, &v, err, errlen);
    if (r)
        return r;
    uint64_t maxd = vol_max_data(v);
    r = bitmap_add_check(v, &region, err, errlen); /* unchanged since: the members are locked */
    if (!r) {
        pthread_mutex_lock(&v->lock);
        v->sb.bitmap_offset = RK_BM_OFFSET;
        v->sb.bitmap_size = rk_bm_area_size((maxd + region - 1) / region);
        v->sb.bitmap_region = region;
        /* Every check passed: say what is about to be written before writing it (as md does
         * for --grow --bitmap). */
        char rs[32], as[32];
        rk_warn("bitmap --add: writing a write-intent bitmap (%s, one bit per %s of data) into "
                "the metadata area at byte %u of every one of the %d members, then their "
                "superblocks (event %" PRIu64 " -> %" PRIu64 "); the array must stay stopped "
                "(its members are locked meanwhile: no serve or fuse can open them) and this "
                "raidkit must not be interrupted",
                rk_format_size(v->sb.bitmap_size, as, sizeof(as)),
                rk_format_size(region, rs, sizeof(rs)), RK_BM_OFFSET, n, v->sb.events,
                v->sb.events + 1);
        /* The area first: a superblock that names it must never point at garbage. */
        r = vol_bitmap_write_empty(v, err, errlen);
        if (!r) {
            v->sb.events++;
            /* Re-add: writes before this event were not recorded (docs/FORMAT.md "Re-add"). */
            v->sb.events_cleared = v->sb.events;
            r = vol_write_sbs(v, true);
            if (r)
                rk_set_err(err, errlen, "cannot write the superblocks: %s", strerror(-r));
        }
        if (r)
            v->sb.bitmap_offset = v->sb.bitmap_size = v->sb.bitmap_region = 0;
        pthread_mutex_unlock(&v->lock);
    }
    int rc = rk_volume_close(v);
    return r ? r : rc;
}
