/* The bad-range table of a raid device: ranges of a slot's data area that hold no valid data
 * (a rebuild could not reconstruct them, or the superblock recorded them). Reads never use them;
 * readers check lock-free. */
#ifndef RK_RAID_BADRANGE_H
#define RK_RAID_BADRANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "raid/raid_int.h"

/* Entries the in-memory table holds (rk_raid_add_bad_range returns -ENOSPC beyond). */
#define RAID_BAD_MAX 256

/* Allocate r->bad (engine open; 0 or -ENOMEM) / free it (engine close; a no-op when r->bad is
 * NULL). */
int raid_badtab_init(struct raid_priv *r);
void raid_badtab_destroy(struct raid_priv *r);

/* Is any byte of [moff, moff+len) of slot's data area recorded unreadable? Lock-free, for the
 * data path; false while r->bad is not set up. */
bool raid_bad_hit(struct raid_priv *r, uint32_t slot, uint64_t moff, uint64_t len);

/* Record [moff, moff+len) of slot's data area as unreadable (logged; covered ranges are
 * ignored, a range continuing the newest entry extends it). Returns 0, or -ENOSPC when the
 * table is full (the caller fails the slot or its job instead). */
int raid_bad_add(struct raid_priv *r, uint32_t slot, uint64_t moff, uint64_t len);

/* Drop every bad range of slot (it is being replaced: its new contents start clean). */
void raid_bad_drop(struct raid_priv *r, uint32_t slot);

/* Has any range been recorded since open (dropped ones included)? Lock-free. */
bool raid_bad_recorded(struct raid_priv *r);

#endif
