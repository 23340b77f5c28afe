/* raid0: chunks striped across the members, md-style zones for members of unequal size.
 * No redundancy: every member is needed. Requests take the copy-level path (one copy). */
#include "raid/copies.h"
#include "raid/raid_int.h"

/*
 * Zones for data sizes 1,1,2,2 MiB (chunk 64 KiB): zone 0 stripes over all four slots up to the
 * smallest size, zone 1 over the two larger slots for the rest.
 *
 *            slot0   slot1   slot2   slot3
 *   zone 0:  c0      c1      c2      c3       member offsets 0 .. 1 MiB
 *            c4      c5      c6      c7
 *            ...
 *   zone 1:                  c64     c65      member offsets 1 MiB .. 2 MiB
 *                            c66     c67
 */
static void raid0_setup(struct raid_layout *l)
{
    const struct rk_raid_geom *g = &l->g;
    uint64_t prev = 0, start = 0;
    for (;;) {
        /* Next zone ends at the smallest data size above the previous zone's end. */
        uint64_t next = UINT64_MAX;
        for (uint32_t i = 0; i < g->members; i++)
            if (g->data_size[i] > prev && g->data_size[i] < next)
                next = g->data_size[i];
        if (next == UINT64_MAX)
            break;
        struct raid_zone *z = &l->zones[l->nzones++];
        z->array_start = start;
        z->member_start = prev;
        z->nslots = 0;
        for (uint32_t i = 0; i < g->members; i++)
            if (g->data_size[i] > prev)
                z->slots[z->nslots++] = (uint8_t)i;
        z->array_len = (next - prev) * z->nslots;
        start += z->array_len;
        prev = next;
    }
    l->size = start;
    l->member_used = prev; /* the largest data size */
}

static int raid0_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies,
                     int max, uint64_t *run)
{
    return raid_zone_map(l, off, copies, max, run, false);
}

static int raid0_max_failed(uint32_t members)
{
    return 0;
}

static bool raid0_survives(const struct raid_layout *l, uint32_t alive)
{
    uint32_t all = raid_all_mask(l->g.members);
    return (alive & all) == all;
}

const struct raid_level raid_level_raid0 = {
    .level = RK_LEVEL_RAID0,
    .name = "raid0",
    .min_members = 1,
    .max_failed = raid0_max_failed,
    .setup = raid0_setup,
    .map = raid0_map,
    .survives = raid0_survives,
    .rw = raid_copies_rw,
};
