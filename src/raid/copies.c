/* Rebuild and scrub hooks of the copy levels with more than one copy (raid1, raid10): reconstruct
 * a slot's data from another live copy, and compare / repair the copies of every chunk. The
 * level's unmap hook says which array data a slot holds where. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/badrange.h"
#include "raid/copies.h"

/* Read array range [aoff, aoff+len), which slot holds too, from another ACTIVE copy into buf.
 * -ENODEV: no other copy is active at all; -EIO: every active copy failed to read. */
static int copies_read_other(struct raid_priv *r, uint32_t slot, uint64_t aoff, uint64_t len,
                             char *buf)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run;
    int n = l->lvl->map(l, aoff, c, RK_MAX_MEMBERS, &run);
    uint32_t active = raid_slot_mask(r, RAID_STATES_READ);
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
        uint64_t aoff, piece;
        if (!l->lvl->unmap(l, slot, member_off, len, &aoff, &piece)) {
            memset(p, 0, piece); /* the layout keeps no data there */
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
    uint32_t active = raid_slot_mask(r, RAID_STATES_READ), fix = 0;
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

/* Is slot's place at member_off the first copy of the array data aoff (lowest data-area
 * offset, then lowest slot)? Every array chunk is scrubbed once, at its first copy. */
static bool copies_first(const struct raid_layout *l, uint64_t aoff, uint32_t slot,
                         uint64_t member_off)
{
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run;
    int n = l->lvl->map(l, aoff, c, RK_MAX_MEMBERS, &run);
    for (int i = 0; i < n; i++)
        if (c[i].member_off < member_off || (c[i].member_off == member_off && c[i].slot < slot))
            return false;
    return true;
}

int raid_copies_scrub(struct raid_priv *r, uint64_t member_off, uint64_t len, bool repair,
                      uint64_t *mismatches)
{
    const struct raid_layout *l = &r->l;
    uint64_t chunk = l->g.chunk, end = member_off + len;
    char *ref = rk_buf_alloc(chunk), *cmp = rk_buf_alloc(chunk);
    int ret = 0;
    if (!ref || !cmp) {
        ret = -ENOMEM;
        goto out;
    }
    /* Every array chunk whose first copy lies in these rows, in member order. */
    for (uint64_t o = member_off; o < end;) {
        uint64_t piece = chunk - o % chunk < end - o ? chunk - o % chunk : end - o;
        for (uint32_t s = 0; s < l->g.members; s++) {
            uint64_t aoff, run;
            if (!l->lvl->unmap(l, s, o, piece, &aoff, &run) || !copies_first(l, aoff, s, o))
                continue;
            if (copies_scrub_piece(r, aoff, run, repair, mismatches, ref, cmp))
                ret = -EIO;
        }
        o += piece;
    }
out:
    free(ref);
    free(cmp);
    return ret;
}
