/* Internal interface of the RAID engine: the per-level table and the precomputed layout that
 * the pure mapping functions (geom.c) and the I/O engine (engine.c) share. */
#ifndef RK_RAID_INT_H
#define RK_RAID_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raidkit/raid.h"

/*
 * A zone of a striped or concatenated layout: array bytes [array_start, array_start+array_len)
 * are striped chunk by chunk, in slot order, across slots[0..nslots-1], starting at byte
 * member_start of each of those slots' data areas. linear uses one zone per slot (nslots 1),
 * raid0 one zone per distinct data size (md "zones").
 */
struct raid_zone {
    uint64_t array_start;
    uint64_t array_len;
    uint64_t member_start;
    uint32_t nslots;
    uint8_t slots[RK_MAX_MEMBERS];
};

/* Everything the mapping needs, computed once from a geometry by the level's setup(). */
struct raid_layout {
    struct rk_raid_geom g;
    const struct raid_level *lvl;
    uint64_t size;     /* array bytes */
    uint64_t min_data; /* smallest data_size over the slots */
    uint32_t nzones;   /* linear/raid0 only */
    struct raid_zone zones[RK_MAX_MEMBERS];
};

struct raid_priv;
struct raid_mgmt;

/*
 * One RAID level (SPDK's raid_bdev_module). The engine is generic over "copies": every array
 * byte lives at one place per copy (linear/raid0: 1, raid1: members, raid10: 2); reads pick one
 * live copy, writes go to every live copy. Parity levels will add their own request hook here
 * (with stripe locking) and leave map() for the data placement only.
 */
struct raid_level {
    int level;
    const char *name;
    uint32_t min_members;
    uint32_t max_copies; /* upper bound of map()'s copy count (0 = members) */
    /* Members that may be missing while all data stays reachable (guaranteed). */
    int (*max_failed)(uint32_t members);
    /* Fill l->size (and zones) from l->g, which is already checked. */
    void (*setup)(struct raid_layout *l);
    /* Map array offset off (< l->size); see rk_raid_map. */
    int (*map)(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies, int max,
               uint64_t *run);
    /* True when every array byte has a copy on a slot in alive (bit i = slot i usable). */
    bool (*survives)(const struct raid_layout *l, uint32_t alive);
    /*
     * Parity levels (raid5/raid6) handle whole requests themselves, with stripe locking; NULL
     * for the copy levels, which the generic engine (engine.c raid_rw) serves. op is READ,
     * WRITE, DISCARD or WRITE_ZEROES; buf is NULL for the last two. Returns 0 or -errno.
     */
    int (*rw)(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
              uint32_t flags);
    /*
     * Rebuild and scrub hooks, in member data-area coordinates (both chunk aligned):
     * reconstruct() fills buf with what slot should hold at [member_off, member_off+len) computed
     * from the other ACTIVE slots (never from slot itself); scrub() checks that range on every
     * slot for consistency (copies equal / parity matches), adds the number of mismatched
     * chunks (copy levels) or stripes (parity levels) to *mismatches and, with repair, rewrites
     * the copies/parity from the data. Both return 0 or -errno (-EIO when the data cannot be
     * reconstructed). Callers hold the range lock for the range (raid_range_lock).
     */
    int (*reconstruct)(struct raid_priv *r, uint32_t slot, uint64_t member_off, uint64_t len,
                       void *buf);
    int (*scrub)(struct raid_priv *r, uint64_t member_off, uint64_t len, bool repair,
                 uint64_t *mismatches);
    /* Optional: set up r->level_priv once the layout is known (stripe locks, buffers), before
     * any request; close() frees it. Returns 0 or -errno. */
    int (*open)(struct raid_priv *r);
    void (*close)(struct raid_priv *r);
    /* True for levels whose stripes can be left inconsistent by a crash in a way that a
     * degraded start cannot detect or repair (the RAID5/6 write hole): a dirty and degraded
     * start of such a level needs --force. */
    bool write_hole;
};

/* The state of one open raid device (rk_dev.priv). */
struct raid_priv {
    struct raid_layout l;                   /* constant after open */
    struct rk_dev *members[RK_MAX_MEMBERS]; /* NULL = missing; owned by the caller */
    _Atomic int state[RK_MAX_MEMBERS];      /* enum rk_slot_state */
    struct rk_raid_events ev;               /* member_failed NULL when no callback */
    _Atomic uint32_t rr;                    /* round-robin tie breaker for reads */
    pthread_mutex_t fail_lock;              /* serialises rk_raid_fail_slot's "would this lose
                                             * data" check; never held across a callback */
    void *level_priv;                       /* parity levels: stripe locks, caches */
    struct raid_mgmt *mgmt;                 /* range lock, bad ranges, rebuild/scrub job
                                             * (src/raid/rangelock.h) */
};

extern const struct raid_level raid_level_linear;
extern const struct raid_level raid_level_raid0;
extern const struct raid_level raid_level_raid1;
extern const struct raid_level raid_level_raid10;
extern const struct raid_level raid_level_raid5;
extern const struct raid_level raid_level_raid6;

/* Move slot to FAILED after a member error (enum rk_slot_state); the thread that makes the
 * transition runs the member_failed callback, so it runs once per slot whichever path saw the
 * error first. Caller holds no engine lock. Defined in engine.c, used by every level. */
void raid_fail(struct raid_priv *r, uint32_t slot, int error);

/* The table entry of a level, or NULL when the engine has no implementation (yet). */
const struct raid_level *raid_level_get(int level);

/* Build the layout of a checked geometry; -EINVAL when g is invalid, -EOPNOTSUPP when the
 * level has no engine implementation. */
int raid_layout_init(struct raid_layout *l, const struct rk_raid_geom *g);

/* Zone helpers shared by linear and raid0. */
int raid_zone_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies, int max,
                  uint64_t *run, bool run_to_zone_end);

static inline uint64_t raid_min_data(const struct rk_raid_geom *g)
{
    uint64_t m = g->data_size[0];
    for (uint32_t i = 1; i < g->members; i++)
        if (g->data_size[i] < m)
            m = g->data_size[i];
    return m;
}

/* Slot-state sets for raid_slot_mask(): bit s = enum rk_slot_state s. */
#define RAID_STATES_READ  (1u << RK_SLOT_ACTIVE)
#define RAID_STATES_WRITE ((1u << RK_SLOT_ACTIVE) | (1u << RK_SLOT_REBUILDING))

/* Slots (bit i = slot i) that have a member and whose state is in states (RAID_STATES_READ:
 * ACTIVE slots, which serve reads; RAID_STATES_WRITE: ACTIVE and REBUILDING slots, which take
 * writes so a rebuild sees new data). Lock-free: a snapshot of the atomic slot states. */
static inline uint32_t raid_slot_mask(struct raid_priv *r, uint32_t states)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < r->l.g.members; i++) {
        int s = atomic_load(&r->state[i]);
        if (r->members[i] && s >= 0 && s < 32 && (states & (1u << s)))
            m |= 1u << i;
    }
    return m;
}

static inline uint32_t raid_all_mask(uint32_t members)
{
    return members >= 32 ? 0xffffffffu : (1u << members) - 1;
}

#endif
