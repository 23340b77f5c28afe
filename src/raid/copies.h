/* The copy levels' shared code (linear, raid0, raid1, raid10: every array byte has 1..n plain
 * copies, placed by the level's map()): the request path (copies_rw.c) and the rebuild and
 * scrub hooks of the levels with more than one copy (copies.c). */
#ifndef RK_RAID_COPIES_H
#define RK_RAID_COPIES_H

#include <stdbool.h>
#include <stdint.h>

#include "raid/raid_int.h"

/*
 * The rw hook of the copy levels (struct raid_level.rw): read, write, discard or write-zeroes
 * of array range [off, off+len) (validated; buf NULL for DISCARD and WRITE_ZEROES, and only
 * read for WRITE). Reads take one live copy per piece and repair read errors from another copy;
 * writes go to every ACTIVE and REBUILDING copy and fail the slots whose write fails.
 * Returns 0, or -EIO when some piece could not be read from any copy / reached no live copy.
 */
int raid_copies_rw(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
                   uint32_t flags);

/* The reconstruct and scrub hooks (struct raid_level) of the levels with an unmap hook (raid1,
 * raid10), with the contracts described there. */
int raid_copies_reconstruct(struct raid_priv *r, uint32_t slot, uint64_t member_off, uint64_t len,
                            void *buf);
int raid_copies_scrub(struct raid_priv *r, uint64_t member_off, uint64_t len, unsigned mode,
                      uint64_t *mismatches);

#endif
