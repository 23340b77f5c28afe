/* raid5 and raid6 stripe geometry: where the data and parity blocks of a stripe live, the array
 * size and mapping, and which blocks of a stripe can be read (see raid5_int.h for the layout). */
#include "raid/raid5_int.h"
#include "raid/badrange.h"

uint32_t r5_nparity(const struct raid_layout *l)
{
    return l->g.level == RK_LEVEL_RAID6 ? 2 : 1;
}

uint64_t r5_stripe_bytes(const struct raid_layout *l)
{
    return (uint64_t)l->g.chunk * (l->g.members - r5_nparity(l));
}

void r5_geo(const struct raid_layout *l, uint64_t row, struct r5_geo *g)
{
    uint32_t n = l->g.members, np = r5_nparity(l), nd = n - np;
    uint32_t p = n - 1 - (uint32_t)(row % n);
    g->n = n;
    g->np = np;
    g->nd = nd;
    g->row = row;
    g->slot[nd] = p;
    if (np == 2)
        g->slot[nd + 1] = (p + 1) % n;
    for (uint32_t k = 0; k < nd; k++)
        g->slot[k] = (p + np + k) % n;
    for (uint32_t b = 0; b < n; b++)
        g->blk_of_slot[g->slot[b]] = b;
}

void r5_setup(struct raid_layout *l)
{
    l->size = (uint64_t)(l->g.members - r5_nparity(l)) * l->min_data;
}

int r5_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies, int max,
           uint64_t *run)
{
    uint64_t chunk = l->g.chunk, n = l->g.members, np = r5_nparity(l), nd = n - np;
    uint64_t c = off / chunk, row = c / nd, k = c % nd;
    uint64_t p = n - 1 - row % n;
    if (max > 0) {
        copies[0].slot = (uint32_t)((p + np + k) % n);
        copies[0].member_off = row * chunk + off % chunk;
    }
    *run = chunk - off % chunk;
    return 1;
}

/* Every stripe has every slot, so data survives while at most nparity slots are gone. */
bool r5_survives(const struct raid_layout *l, uint32_t alive)
{
    uint32_t all = raid_all_mask(l->g.members);
    return (uint32_t)__builtin_popcount(all & ~alive) <= r5_nparity(l);
}

bool r5_alive(struct raid_priv *r)
{
    return r5_survives(&r->l, raid_slot_mask(r, RAID_STATES_READ));
}

uint32_t r5_blk_readable(struct raid_priv *r, const struct r5_geo *g, uint64_t moff, uint64_t len)
{
    uint32_t rd = raid_slot_mask(r, RAID_STATES_READ), m = 0;
    for (uint32_t b = 0; b < g->n; b++)
        if ((rd & (1u << g->slot[b])) && !raid_bad_hit(r, g->slot[b], moff, len))
            m |= 1u << b;
    return m;
}

uint32_t r5_blk_mask_of_slots(const struct r5_geo *g, uint32_t slots)
{
    uint32_t m = 0;
    for (uint32_t b = 0; b < g->n; b++)
        if (slots & (1u << g->slot[b]))
            m |= 1u << b;
    return m;
}
