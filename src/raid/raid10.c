/* raid10: Linux md "near" layout with 2 copies over any n >= 2 members. Chunk c's copies sit at
 * positions 2c and 2c+1 of a row-major walk over the members (works for odd n too). */
#include "raid/copies.h"
#include "raid/raid_int.h"

/*
 * Position p -> slot p % n, member chunk row p / n. With n = 3:
 *
 *            slot0   slot1   slot2
 *   row 0:   c0      c0      c1
 *   row 1:   c1      c2      c2
 *   row 2:   c3      c3      c4
 *
 * Every member uses the smallest data size; size = floor(min * n / 2 / chunk) * chunk. The
 * 2 * chunks positions fill ceil(2 * chunks / n) rows of every member.
 */
static void raid10_setup(struct raid_layout *l)
{
    uint64_t chunks = l->min_data / l->g.chunk * l->g.members / 2, n = l->g.members;
    l->size = chunks * l->g.chunk;
    l->member_used = (2 * chunks + n - 1) / n * l->g.chunk;
}

static int raid10_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies,
                      int max, uint64_t *run)
{
    uint64_t chunk = l->g.chunk, n = l->g.members;
    uint64_t p = off / chunk * 2;
    for (int i = 0; i < 2 && i < max; i++) {
        copies[i].slot = (uint32_t)((p + i) % n);
        copies[i].member_off = (p + i) / n * chunk + off % chunk;
    }
    *run = chunk - off % chunk;
    return 2;
}

/* Row r of slot s is position p = r * n + s, a copy of chunk p / 2 (none past the last chunk:
 * an odd member count leaves the last position of the last row unused). Runs end at the chunk. */
static int raid10_unmap(const struct raid_layout *l, uint32_t slot, uint64_t member_off,
                        uint64_t len, uint64_t *aoff, uint64_t *run)
{
    uint64_t chunk = l->g.chunk;
    uint64_t c = (member_off / chunk * l->g.members + slot) / 2;
    *run = chunk - member_off % chunk < len ? chunk - member_off % chunk : len;
    if (c >= l->size / chunk)
        return 0;
    *aoff = c * chunk + member_off % chunk;
    return 1;
}

static int raid10_max_failed(uint32_t members)
{
    return 1;
}

/* The slot pairs repeat with period n in the chunk number (2(c+n) = 2c mod n), so checking the
 * first n chunks covers the whole array. */
static bool raid10_survives(const struct raid_layout *l, uint32_t alive)
{
    uint64_t n = l->g.members, chunks = l->size / l->g.chunk;
    for (uint64_t c = 0; c < n && c < chunks; c++) {
        uint32_t a = (uint32_t)(2 * c % n), b = (uint32_t)((2 * c + 1) % n);
        if (!(alive & (1u << a)) && !(alive & (1u << b)))
            return false;
    }
    return true;
}

const struct raid_level raid_level_raid10 = {
    .level = RK_LEVEL_RAID10,
    .name = "raid10",
    .min_members = 2,
    .max_failed = raid10_max_failed,
    .setup = raid10_setup,
    .map = raid10_map,
    .survives = raid10_survives,
    .rw = raid_copies_rw,
    .unmap = raid10_unmap,
    .reconstruct = raid_copies_reconstruct,
    .scrub = raid_copies_scrub,
};
