/* linear (JBOD): the slots' data areas concatenated in slot order. No redundancy; one zone per
 * slot so the zone mapper of geom.c does the work; requests take the copy-level path. */
#include "raid/copies.h"
#include "raid/raid_int.h"

/*
 *   array:  | slot 0 data_size[0] | slot 1 data_size[1] | ... | slot n-1 |
 */
static void linear_setup(struct raid_layout *l)
{
    uint64_t start = 0;
    l->nzones = l->g.members;
    l->member_used = 0;
    for (uint32_t i = 0; i < l->g.members; i++) {
        struct raid_zone *z = &l->zones[i];
        z->array_start = start;
        z->array_len = l->g.data_size[i];
        z->member_start = 0;
        z->nslots = 1;
        z->slots[0] = (uint8_t)i;
        start += z->array_len;
        if (z->array_len > l->member_used)
            l->member_used = z->array_len;
    }
    l->size = start;
}

static int linear_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies,
                      int max, uint64_t *run)
{
    return raid_zone_map(l, off, copies, max, run, true);
}

static int linear_max_failed(uint32_t members)
{
    return 0;
}

static bool linear_survives(const struct raid_layout *l, uint32_t alive)
{
    uint32_t all = raid_all_mask(l->g.members);
    return (alive & all) == all;
}

const struct raid_level raid_level_linear = {
    .level = RK_LEVEL_LINEAR,
    .name = "linear",
    .min_members = 1,
    .max_failed = linear_max_failed,
    .setup = linear_setup,
    .map = linear_map,
    .survives = linear_survives,
    .rw = raid_copies_rw,
};
