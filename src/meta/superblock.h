/* Member superblock v1 (docs/FORMAT.md): the in-memory form, the 4 KiB little-endian encoding
 * with its crc32c, and the decoder that rejects every out-of-bounds field with its own message. */
#ifndef RK_META_SUPERBLOCK_H
#define RK_META_SUPERBLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidkit/device.h"
#include "raidkit/raid.h"

#define RK_SB_SIZE        4096u
#define RK_SB_VERSION     1u
#define RK_SB_MAGIC       "RAIDKTSB"      /* 8 bytes, no NUL on disk */
#define RK_SB_DATA_OFFSET (1024u * 1024u) /* data area start written by create */
#define RK_SB_ALIGN       (1024u * 1024u) /* data offsets are multiples of this */
#define RK_SB_NAME_LEN    32u             /* on-disk name field, NUL padded (<= 31 chars) */
#define RK_UUID_LEN       16u
#define RK_UUID_STR_LEN   37u /* 36 characters + NUL */

/* Event counters are bounded far below 2^64 so that raising one can never wrap: a superblock
 * with a higher counter is refused at decode, and meta_write_sb refuses to write one (at one
 * million state changes per second the bound lasts nine years; real arrays raise it a few times a
 * day). docs/FORMAT.md "Validation". */
#define RK_SB_EVENTS_MAX (1ull << 48)

/* Clean/dirty flag values (field "dirty"). */
#define RK_SB_CLEAN 0u
#define RK_SB_DIRTY 1u

/* Resync flags (field "resync_flags", bytes 192..195; docs/FORMAT.md "Resync state"). */
#define RK_SB_RESYNC_PENDING 0x1u /* a resync must run before the array is in sync */
#define RK_SB_RESYNC_FULL    0x2u /* ... over every region from resync_offset (no bitmap says) */
#define RK_SB_RESYNC_MASK    0x3u
/* Write-hole protection (field "write_hole", bytes 224..227; docs/FORMAT.md "Partial parity
 * log"): none (arrays created before the field existed read 0), or a partial parity log in the
 * journal region [journal_offset, journal_offset + journal_size) of every member. */
#define RK_SB_WH_NONE 0u
#define RK_SB_WH_PPL  1u
/* The PPL region create sets up: [RK_SB_PPL_OFFSET, data_offset). */
#define RK_SB_PPL_OFFSET (512u * 1024u)

/* Decode failures: callers tell "not ours" from "ours but damaged" by the code. */
#define RK_SB_ENOTOURS -ENODATA         /* bad magic: not a raidkit member */
#define RK_SB_EVERSION -EPROTONOSUPPORT /* unknown format version */
#define RK_SB_ECRC     -EBADMSG         /* checksum mismatch */
#define RK_SB_EFIELD   -EINVAL          /* a field out of bounds */

/* Cache binding (field "cache_flags", bytes 3336..3339; docs/FORMAT.md "Cache binding"): the
 * array is bound to the cache device with cache_uuid (bytes 3344..3359), which may hold dirty
 * data. Same bit values as RK_CACHE_BIND_* in src/cache/meta.h. 0 on arrays without a cache. */
#define RK_SB_CACHE_BOUND 0x1u
#define RK_SB_CACHE_DIRTY 0x2u
#define RK_SB_CACHE_MASK  0x3u

/* One entry of the per-slot table (slot states: enum rk_slot_state, MISSING never on disk). */
struct rk_sb_slot {
    uint32_t state;            /* RK_SLOT_ACTIVE/FAILED/SPARE/REBUILDING */
    uint64_t data_size;        /* usable data bytes of the slot (chunk multiple) */
    uint64_t rebuild_offset;   /* bytes of the data area already rebuilt (REBUILDING) */
    uint8_t uuid[RK_UUID_LEN]; /* member UUID of the device holding this slot */
};

/* Bad-range table (offset 1792, docs/FORMAT.md): data-area ranges of a slot that hold no valid
 * data (a rebuild could not reconstruct them); reads never use them. Zero entries on arrays
 * written before the table existed, so it needs no new format version. */
#define RK_SB_BAD_MAX 64u

struct rk_sb_bad {
    uint32_t slot;   /* < members */
    uint64_t offset; /* data-area bytes, 512-aligned */
    uint64_t len;    /* bytes, 512-aligned, non-zero; offset + len <= the slot's data_size */
};

/* The decoded superblock. Fields mirror the on-disk table of docs/FORMAT.md one to one. */
struct rk_sb {
    uint32_t version;                      /* RK_SB_VERSION */
    uint8_t array_uuid[RK_UUID_LEN];       /* identical on every member of the array */
    uint8_t member_uuid[RK_UUID_LEN];      /* this member */
    uint32_t slot;                         /* this member's slot, < members */
    int32_t level;                         /* enum rk_level */
    uint32_t layout;                       /* 0 = the level's only v1 layout */
    uint32_t chunk;                        /* bytes, power of two */
    uint32_t members;                      /* slots in the array */
    uint64_t data_offset;                  /* bytes, multiple of RK_SB_ALIGN */
    uint64_t data_size;                    /* this member's data bytes (= slots[slot]) */
    uint64_t array_size;                   /* = rk_raid_array_size(geometry) */
    uint64_t events;                       /* raised on every state change, >= 1 */
    uint32_t dirty;                        /* RK_SB_CLEAN / RK_SB_DIRTY */
    uint64_t bitmap_offset, bitmap_size;   /* write-intent bitmap (reserved: 0) */
    uint64_t journal_offset, journal_size; /* partial parity log region (0: none) */
    uint32_t write_hole;                   /* RK_SB_WH_NONE / RK_SB_WH_PPL */
    uint64_t ppl_id;                       /* PPL generation: stamped in every log block */
    uint64_t ctime, utime;                 /* seconds since the epoch (UTC) */
    uint32_t resync_flags;                 /* RK_SB_RESYNC_*; 0 on older arrays */
    uint64_t resync_offset;                /* full resync: data-area bytes already in sync */
    uint64_t bitmap_region;                /* bitmap: data-area bytes per bit (0 = none) */
    /* Re-add (docs/FORMAT.md "Re-add"): the array event count at which the write-intent
     * bitmap last cleared bits (0 on older arrays: unknown, a returning member is rebuilt
     * whole), and the slots whose REBUILDING state is a re-add (bit i = slot i: only the
     * regions the bitmap marks are resynced). */
    uint64_t events_cleared;
    uint32_t readd_slots;
    char name[RK_SB_NAME_LEN]; /* NUL padded */
    struct rk_sb_slot slots[RK_MAX_MEMBERS];
    uint32_t nbad; /* bad-range table entries in use, <= RK_SB_BAD_MAX */
    struct rk_sb_bad bad[RK_SB_BAD_MAX];
    uint32_t cache_flags;            /* RK_SB_CACHE_*; 0 = no cache bound */
    uint8_t cache_uuid[RK_UUID_LEN]; /* the bound cache device's UUID (zero when unbound) */
};

/* Encode sb into out (RK_SB_SIZE bytes) with the crc filled in. Does not validate. */
void rk_sb_encode(const struct rk_sb *sb, uint8_t *out);

/*
 * Decode and validate RK_SB_SIZE bytes. Returns 0 and *sb, or RK_SB_ENOTOURS / RK_SB_EVERSION /
 * RK_SB_ECRC / RK_SB_EFIELD with one line in err naming the field (no member path: the caller
 * adds it).
 */
int rk_sb_decode(const uint8_t *buf, struct rk_sb *sb, char *err, size_t errlen);

/* Bounds checks of a decoded (or about to be encoded) superblock; 0 or -EINVAL with err. */
int rk_sb_check(const struct rk_sb *sb, char *err, size_t errlen);

/* True when buf (RK_SB_SIZE bytes) starts with the raidkit magic, whatever else it holds. */
bool rk_sb_has_magic(const uint8_t *buf);

/* Fill the RAID geometry described by sb. */
void rk_sb_geom(const struct rk_sb *sb, struct rk_raid_geom *g);

/* "active", "failed", "spare", "rebuilding", "missing"; "unknown" otherwise. */
const char *rk_slot_state_name(int state);

/* Format a UUID as 8-4-4-4-12 lower-case hex into out (RK_UUID_STR_LEN bytes). Returns out. */
char *rk_uuid_format(const uint8_t *uuid, char *out);

#endif
