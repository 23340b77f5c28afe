/* Pure RAID geometry functions: level names, geometry checks, array size and the array-offset
 * to member-offset mapping (docs/FORMAT.md "Data layout and array size"). No I/O here. */
#include <errno.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid_int.h"

/* Every level raidkit knows (each has an engine implementation in its own file). */
static const struct {
    int level;
    const char *name;
    const char *alias;
    uint32_t min_members;
} raid_levels[] = {
    {RK_LEVEL_LINEAR, "linear", "linear", 1}, {RK_LEVEL_RAID0, "raid0", "0", 1},
    {RK_LEVEL_RAID1, "raid1", "1", 2},        {RK_LEVEL_RAID5, "raid5", "5", 3},
    {RK_LEVEL_RAID6, "raid6", "6", 4},        {RK_LEVEL_RAID10, "raid10", "10", 2},
};

#define RAID_NLEVELS (sizeof(raid_levels) / sizeof(raid_levels[0]))

static int raid_level_index(int level)
{
    for (size_t i = 0; i < RAID_NLEVELS; i++)
        if (raid_levels[i].level == level)
            return (int)i;
    return -1;
}

int rk_level_parse(const char *s, int *level)
{
    if (!s || !level)
        return -EINVAL;
    for (size_t i = 0; i < RAID_NLEVELS; i++) {
        if (!strcmp(s, raid_levels[i].name) || !strcmp(s, raid_levels[i].alias)) {
            *level = raid_levels[i].level;
            return 0;
        }
    }
    return -EINVAL;
}

const char *rk_level_name(int level)
{
    int i = raid_level_index(level);
    return i < 0 ? "unknown" : raid_levels[i].name;
}

int rk_level_min_members(int level)
{
    int i = raid_level_index(level);
    return i < 0 ? -EINVAL : (int)raid_levels[i].min_members;
}

int rk_level_max_failed(int level, uint32_t members)
{
    const struct raid_level *lvl = raid_level_get(level);
    return lvl ? lvl->max_failed(members) : -EINVAL;
}

bool rk_level_write_hole(int level)
{
    const struct raid_level *lvl = raid_level_get(level);
    return lvl && lvl->write_hole;
}

const struct raid_level *raid_level_get(int level)
{
    switch (level) {
    case RK_LEVEL_LINEAR:
        return &raid_level_linear;
    case RK_LEVEL_RAID0:
        return &raid_level_raid0;
    case RK_LEVEL_RAID1:
        return &raid_level_raid1;
    case RK_LEVEL_RAID10:
        return &raid_level_raid10;
    case RK_LEVEL_RAID5:
        return &raid_level_raid5;
    case RK_LEVEL_RAID6:
        return &raid_level_raid6;
    }
    return NULL;
}

int rk_raid_geom_check(const struct rk_raid_geom *g, char *err, size_t errlen)
{
    if (!g) {
        rk_set_err(err, errlen, "no geometry");
        return -EINVAL;
    }
    int min = rk_level_min_members(g->level);
    if (min < 0) {
        rk_set_err(err, errlen, "unknown RAID level %d", g->level);
        return -EINVAL;
    }
    if (g->members < (uint32_t)min || g->members > RK_MAX_MEMBERS) {
        rk_set_err(err, errlen, "%s needs %d to %d members, got %u", rk_level_name(g->level), min,
                   RK_MAX_MEMBERS, g->members);
        return -EINVAL;
    }
    if (g->chunk < RK_CHUNK_MIN || g->chunk > RK_CHUNK_MAX || (g->chunk & (g->chunk - 1))) {
        rk_set_err(err, errlen, "chunk size %u is not a power of two in [%u, %u]", g->chunk,
                   RK_CHUNK_MIN, RK_CHUNK_MAX);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < g->members; i++) {
        if (g->data_size[i] == 0 || g->data_size[i] % g->chunk) {
            rk_set_err(err, errlen,
                       "slot %u: data size %llu is not a non-zero multiple of the "
                       "chunk size %u",
                       i, (unsigned long long)g->data_size[i], g->chunk);
            return -EINVAL;
        }
    }
    /* Sums of up to 32 data sizes must not overflow (linear, raid0 sizes). */
    uint64_t sum = 0;
    for (uint32_t i = 0; i < g->members; i++) {
        if (g->data_size[i] > UINT64_MAX / 2 - sum) {
            rk_set_err(err, errlen, "data sizes too large");
            return -EINVAL;
        }
        sum += g->data_size[i];
    }
    return 0;
}

int raid_layout_init(struct raid_layout *l, const struct rk_raid_geom *g)
{
    if (rk_raid_geom_check(g, NULL, 0))
        return -EINVAL;
    const struct raid_level *lvl = raid_level_get(g->level);
    if (!lvl)
        return -EOPNOTSUPP;
    memset(l, 0, sizeof(*l));
    l->g = *g;
    l->lvl = lvl;
    l->min_data = raid_min_data(g);
    lvl->setup(l);
    return 0;
}

uint64_t rk_raid_array_size(const struct rk_raid_geom *g)
{
    struct raid_layout l;
    if (rk_raid_geom_check(g, NULL, 0))
        return 0;
    if (raid_layout_init(&l, g))
        return 0;
    return l.size;
}

int rk_raid_map(const struct rk_raid_geom *g, uint64_t off, struct rk_raid_extent *copies, int max,
                uint64_t *run)
{
    struct raid_layout l;
    int r = raid_layout_init(&l, g);
    if (r)
        return r;
    if (off >= l.size)
        return -EINVAL;
    uint64_t dummy;
    return l.lvl->map(&l, off, copies, max, run ? run : &dummy);
}

int raid_zone_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies, int max,
                  uint64_t *run, bool run_to_zone_end)
{
    /* Few zones (<= 32): a linear scan beats keeping a search structure. */
    const struct raid_zone *z = &l->zones[0];
    for (uint32_t i = 0; i < l->nzones; i++) {
        z = &l->zones[i];
        if (off - z->array_start < z->array_len)
            break;
    }
    uint64_t chunk = l->g.chunk;
    uint64_t zoff = off - z->array_start;
    uint64_t c = zoff / chunk;
    if (max > 0) {
        copies[0].slot = z->slots[c % z->nslots];
        copies[0].member_off = z->member_start + (c / z->nslots) * chunk + zoff % chunk;
    }
    if (run_to_zone_end)
        *run = z->array_len - zoff;
    else
        *run = chunk - zoff % chunk;
    return 1;
}

int rk_raid_geom_survives(const struct rk_raid_geom *g, uint32_t alive)
{
    struct raid_layout l;
    int r = raid_layout_init(&l, g);
    if (r)
        return -EINVAL;
    return l.lvl->survives(&l, alive & raid_all_mask(g->members)) ? 1 : 0;
}
