/* raid1: n-way mirror, every slot holds the whole array at the same offset. The array is as
 * large as the smallest slot; any one live slot holds all data. */
#include "raid/copies.h"
#include "raid/raid_int.h"

static void raid1_setup(struct raid_layout *l)
{
    l->size = l->min_data;
    l->member_used = l->size;
}

/* Runs end at chunk boundaries (in array space) so that one large read is spread over the
 * mirrors piece by piece; writes to one slot are merged again by the engine. */
static int raid1_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies,
                     int max, uint64_t *run)
{
    uint32_t n = l->g.members;
    for (uint32_t i = 0; i < n && (int)i < max; i++) {
        copies[i].slot = i;
        copies[i].member_off = off;
    }
    *run = l->g.chunk - off % l->g.chunk;
    return (int)n;
}

/* Every slot holds array byte x at data-area offset x: one run up to the array's end. */
static int raid1_unmap(const struct raid_layout *l, uint32_t slot, uint64_t member_off,
                       uint64_t len, uint64_t *aoff, uint64_t *run)
{
    *run = len;
    if (member_off >= l->size)
        return 0;
    if (len > l->size - member_off)
        *run = l->size - member_off;
    *aoff = member_off;
    return 1;
}

static int raid1_max_failed(uint32_t members)
{
    return members ? (int)members - 1 : 0;
}

static bool raid1_survives(const struct raid_layout *l, uint32_t alive)
{
    return (alive & raid_all_mask(l->g.members)) != 0;
}

const struct raid_level raid_level_raid1 = {
    .level = RK_LEVEL_RAID1,
    .name = "raid1",
    .min_members = 2,
    .max_failed = raid1_max_failed,
    .setup = raid1_setup,
    .map = raid1_map,
    .survives = raid1_survives,
    .rw = raid_copies_rw,
    .unmap = raid1_unmap,
    .reconstruct = raid_copies_reconstruct,
    .scrub = raid_copies_scrub,
};
