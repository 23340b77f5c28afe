/* Pure RAID geometry functions: level names, geometry checks, array size and the array-offset
 * to member-offset mapping (docs/FORMAT.md "Data layout and array size"). No I/O here. */
#include <errno.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid_int.h"

/* The level registry: every level raidkit knows, each implemented in its own file. */
static const struct raid_level *const raid_levels[] = {
    &raid_level_linear, &raid_level_raid0, &raid_level_raid1,
    &raid_level_raid5,  &raid_level_raid6, &raid_level_raid10,
};

#define RAID_NLEVELS (sizeof(raid_levels) / sizeof(raid_levels[0]))

const struct raid_level *raid_level_get(int level)
{
    for (size_t i = 0; i < RAID_NLEVELS; i++)
        if (raid_levels[i]->level == level)
            return raid_levels[i];
    return NULL;
}

/* A level is named by its name, or by N for a name "raidN". */
int rk_level_parse(const char *s, int *level)
{
    if (!s || !level)
        return -EINVAL;
    for (size_t i = 0; i < RAID_NLEVELS; i++) {
        const char *name = raid_levels[i]->name;
        if (!strcmp(s, name) || (!strncmp(name, "raid", 4) && !strcmp(s, name + 4))) {
            *level = raid_levels[i]->level;
            return 0;
        }
    }
    return -EINVAL;
}

const char *rk_level_name(int level)
{
    const struct raid_level *lvl = raid_level_get(level);
    return lvl ? lvl->name : "unknown";
}

int rk_level_min_members(int level)
{
    const struct raid_level *lvl = raid_level_get(level);
    return lvl ? (int)lvl->min_members : -EINVAL;
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

int rk_raid_geom_check(const struct rk_raid_geom *g, char *err, size_t errlen)
{
    if (!g) {
        rk_set_err(err, errlen, "no geometry");
        return -EINVAL;
    }
    const struct raid_level *lvl = raid_level_get(g->level);
    if (!lvl) {
        rk_set_err(err, errlen, "unknown RAID level %d", g->level);
        return -EINVAL;
    }
    if (g->members < lvl->min_members || g->members > RK_MAX_MEMBERS) {
        rk_set_err(err, errlen, "%s needs %u..%d members, got %u", lvl->name, lvl->min_members,
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
                       "data size %llu of slot %u is not a non-zero multiple of the chunk "
                       "size %u",
                       (unsigned long long)g->data_size[i], i, g->chunk);
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
    memset(l, 0, sizeof(*l));
    l->g = *g;
    l->lvl = raid_level_get(g->level);
    l->min_data = raid_min_data(g);
    l->member_used = l->min_data / g->chunk * g->chunk;
    l->lvl->setup(l);
    return 0;
}

uint64_t rk_raid_array_size(const struct rk_raid_geom *g)
{
    struct raid_layout l;
    return raid_layout_init(&l, g) ? 0 : l.size;
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
