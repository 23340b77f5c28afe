/* Allocation map of a raid device (rk_dev_ops.map, NBD "base:allocation"): what the members
 * really hold, mapped through the level. Copy levels (linear, raid0, raid1, raid10): a hole
 * only where every copy on a readable slot is a hole. Parity levels (raid5, raid6): a hole
 * only where every present member is a hole over the whole stripe row (data and parity are
 * then zero, so a degraded read reconstructs zeros too). Also zero_fast. */
#include <errno.h>

#include "raid/raid_int.h"
#include "raid/raid5_int.h"

/* Status of member slot s at data-area offset moff for up to len bytes. */
static int am_member(struct raid_priv *r, uint32_t s, uint64_t moff, uint64_t len, uint64_t *ext,
                     bool *hole)
{
    return rk_dev_map(r->members[s], r->l.g.data_offset + moff, len, ext, hole);
}

/* Copy levels: one map() run, intersected with the status of every readable copy. */
static int am_copies(struct raid_priv *r, uint64_t off, uint64_t len, uint64_t *ext, bool *hole)
{
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run = 0;
    int n = r->l.lvl->map(&r->l, off, c, RK_MAX_MEMBERS, &run);
    uint32_t usable = raid_slot_mask(r, RAID_STATES_READ);
    if (run > len || run == 0)
        run = len;
    bool all_hole = true, any = false;
    for (int i = 0; i < n && i < RK_MAX_MEMBERS; i++) {
        if (!(usable & (1u << c[i].slot)))
            continue;
        uint64_t e;
        bool h;
        if (am_member(r, c[i].slot, c[i].member_off, run, &e, &h))
            return -EIO;
        any = true;
        all_hole &= h;
        if (e < run)
            run = e; /* every copy keeps its status over [off, off+run) */
    }
    *ext = run;
    *hole = any && all_hole;
    return 0;
}

/* Parity levels: whole stripe rows. A hole run covers the rows every present member holes. */
static int am_parity(struct raid_priv *r, uint64_t off, uint64_t len, uint64_t *ext, bool *hole)
{
    const struct raid_layout *l = &r->l;
    uint64_t chunk = l->g.chunk, sb = r5_stripe_bytes(l);
    uint64_t row = off / sb, row_end = (row + 1) * sb;
    uint64_t rows_left = (off + len - 1) / sb - row + 1; /* rows touched by the request */
    uint64_t hole_rows = rows_left;
    bool any = false;
    uint32_t usable = raid_slot_mask(r, RAID_STATES_READ);
    for (uint32_t s = 0; s < l->g.members && hole_rows; s++) {
        if (!(usable & (1u << s)))
            continue;
        uint64_t e;
        bool h;
        if (am_member(r, s, row * chunk, rows_left * chunk, &e, &h))
            return -EIO;
        any = true;
        if (!h || e < chunk)
            hole_rows = 0;
        else if (e / chunk < hole_rows)
            hole_rows = e / chunk;
    }
    *hole = any && hole_rows > 0;
    uint64_t end = *hole ? (row + hole_rows) * sb : row_end;
    if (end > off + len)
        end = off + len;
    *ext = end - off;
    return 0;
}

int raid_alloc_map(struct rk_dev *dev, uint64_t off, uint64_t len, uint64_t *extent_len,
                   bool *is_hole)
{
    struct raid_priv *r = dev->priv;
    if (r->l.lvl->drain)
        r->l.lvl->drain(r, off, len); /* held writes are data the members must show */
    if (r->l.g.level == RK_LEVEL_RAID5 || r->l.g.level == RK_LEVEL_RAID6)
        return am_parity(r, off, len, extent_len, is_hole);
    return am_copies(r, off, len, extent_len, is_hole);
}

/* Copy levels zero each member range directly: fast when every writable member is. Parity
 * levels must compute and write parity, which is not fast in the FAST_ZERO sense. */
bool raid_alloc_zero_fast(struct rk_dev *dev)
{
    struct raid_priv *r = dev->priv;
    if (r->l.g.level == RK_LEVEL_RAID5 || r->l.g.level == RK_LEVEL_RAID6)
        return false;
    uint32_t w = raid_slot_mask(r, RAID_STATES_WRITE);
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if ((w & (1u << s)) && !rk_dev_zero_fast(r->members[s]))
            return false;
    return w != 0;
}
