/* Rebuild and scrub hooks of the copy levels (raid1, raid10): reconstruct a slot's data from
 * another live copy, and compare / repair the copies of every chunk. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/rangelock.h"

/* Array offset held at data-area offset moff of slot; false when the layout leaves that place
 * unused (raid10's last row with an odd member count, or past the array). */
static bool copies_inverse(const struct raid_layout *l, uint32_t slot, uint64_t moff,
                           uint64_t *aoff)
{
    uint64_t chunk = l->g.chunk;
    if (l->g.level == RK_LEVEL_RAID1) {
        *aoff = moff;
        return moff < l->size;
    }
    uint64_t p = moff / chunk * l->g.members + slot;
    uint64_t c = p / 2;
    if (c >= l->size / chunk)
        return false;
    *aoff = c * chunk + moff % chunk;
    return true;
}

/* Read [moff, moff+len) of the data held by slot from another ACTIVE copy into buf.
 * -ENODEV: no other copy is active at all; -EIO: every active copy failed to read. */
static int copies_read_other(struct raid_priv *r, uint32_t slot, uint64_t aoff, uint64_t len,
                             char *buf)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run;
    int n = l->lvl->map(l, aoff, c, RK_MAX_MEMBERS, &run);
    uint32_t active = raid_active_mask(r);
    int ret = -ENODEV;
    for (int i = 0; i < n; i++) {
        uint32_t s = c[i].slot;
        if (s == slot || !(active & (1u << s)))
            continue;
        /* A copy recorded unreadable there is a live source that cannot serve: the range is
         * unreadable (-EIO, recorded on the target too), not a lost source (-ENODEV). */
        if (raid_bad_hit(r, s, c[i].member_off, len)) {
            ret = -EIO;
            continue;
        }
        ret = rk_dev_read(r->members[s], buf, len, l->g.data_offset + c[i].member_off);
        if (!ret)
            return 0;
        ret = -EIO;
    }
    return ret;
}

int raid_copies_reconstruct(struct raid_priv *r, uint32_t slot, uint64_t member_off, uint64_t len,
                            void *buf)
{
    const struct raid_layout *l = &r->l;
    char *p = buf;
    int ret = 0;
    while (len) {
        /* raid1 copies are whole slots: one read for the range; raid10 goes chunk by chunk. */
        uint64_t piece = l->g.level == RK_LEVEL_RAID1 ? len : l->g.chunk - member_off % l->g.chunk;
        uint64_t aoff;
        if (piece > len)
            piece = len;
        if (l->g.level == RK_LEVEL_RAID1 && member_off + piece > l->size) {
            /* Past the array: nothing to copy there. */
            memset(p, 0, piece);
        } else if (!copies_inverse(l, slot, member_off, &aoff)) {
            memset(p, 0, piece);
        } else {
            int rc = copies_read_other(r, slot, aoff, piece, p);
            if (rc == -ENODEV)
                return rc;
            if (rc)
                ret = rc;
        }
        p += piece;
        member_off += piece;
        len -= piece;
    }
    return ret;
}

/* Scrub one array chunk piece [aoff, aoff+len): read every active copy, compare with the first
 * readable one (slot order), count one mismatch if any differs, and with repair write the
 * reference over the copies that differ or could not be read. -EIO when no copy reads. */
static int copies_scrub_piece(struct raid_priv *r, uint64_t aoff, uint64_t len, bool repair,
                              uint64_t *mismatches, char *ref, char *cmp)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run;
    int n = l->lvl->map(l, aoff, c, RK_MAX_MEMBERS, &run);
    uint32_t active = raid_active_mask(r), fix = 0;
    int have = -1;
    /* The reference is the first live copy in slot order (raid10 maps a chunk's copies to
     * e.g. slots 2 and 0): insertion sort, n is tiny. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && c[j - 1].slot > c[j].slot; j--) {
            struct rk_raid_extent t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    bool differ = false;
    for (int i = 0; i < n; i++) {
        uint32_t s = c[i].slot;
        if (!(active & (1u << s)) || raid_bad_hit(r, s, c[i].member_off, len))
            continue;
        char *dst = have < 0 ? ref : cmp;
        if (rk_dev_read(r->members[s], dst, len, l->g.data_offset + c[i].member_off)) {
            rk_warn("scrub: read error on slot %u at data offset %llu", s,
                    (unsigned long long)c[i].member_off);
            fix |= 1u << i;
            continue;
        }
        if (have < 0) {
            have = i;
        } else if (memcmp(ref, cmp, len)) {
            differ = true;
            fix |= 1u << i;
        }
    }
    if (have < 0)
        return -EIO;
    if (differ)
        ++*mismatches;
    if (!repair)
        return 0;
    for (int i = 0; i < n; i++) {
        if (!(fix & (1u << i)))
            continue;
        uint32_t s = c[i].slot;
        int w = rk_dev_write(r->members[s], ref, len, l->g.data_offset + c[i].member_off, 0);
        if (w)
            raid_fail(r, s, w);
    }
    return 0;
}

int raid_copies_scrub(struct raid_priv *r, uint64_t member_off, uint64_t len, bool repair,
                      uint64_t *mismatches)
{
    const struct raid_layout *l = &r->l;
    uint64_t chunk = l->g.chunk;
    char *ref = rk_buf_alloc(chunk), *cmp = rk_buf_alloc(chunk);
    int ret = 0;
    if (!ref || !cmp) {
        ret = -ENOMEM;
        goto out;
    }
    if (l->g.level == RK_LEVEL_RAID1) {
        for (uint64_t o = member_off; o < member_off + len && o < l->size;) {
            uint64_t piece = chunk - o % chunk;
            if (piece > member_off + len - o)
                piece = member_off + len - o;
            if (copies_scrub_piece(r, o, piece, repair, mismatches, ref, cmp))
                ret = -EIO;
            o += piece;
        }
        goto out;
    }
    /* raid10: every array chunk whose first copy (even position) lies in these rows. */
    uint64_t n = l->g.members, chunks = l->size / chunk;
    uint64_t row0 = member_off / chunk, row1 = (member_off + len + chunk - 1) / chunk;
    for (uint64_t p = row0 * n; p < row1 * n; p++) {
        if (p % 2 || p / 2 >= chunks)
            continue;
        if (copies_scrub_piece(r, p / 2 * chunk, chunk, repair, mismatches, ref, cmp))
            ret = -EIO;
    }
out:
    free(ref);
    free(cmp);
    return ret;
}
