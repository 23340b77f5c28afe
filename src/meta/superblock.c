/* Member superblock v1: encode to / decode from the 4 KiB on-disk block (docs/FORMAT.md).
 * Every field read from disk is bounded here before anyone else uses it. */
#include "meta/superblock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"

/*
 * On-disk layout (little-endian; the table in docs/FORMAT.md is the reference):
 *
 *   0 magic[8]  8 version u32  12 header_size u32  16 crc32c u32  20 dirty u32
 *  24 array_uuid[16]  40 member_uuid[16]  56 slot u32  60 level s32  64 layout u32
 *  68 chunk u32  72 members u32  76 reserved u32  80 data_offset u64  88 data_size u64
 *  96 array_size u64  104 events u64  112 ctime u64  120 utime u64  128 bitmap_offset u64
 * 136 bitmap_size u64  144 journal_offset u64  152 journal_size u64  160 name[32]
 * 192 resync_flags u32  196 reserved u32  200 resync_offset u64  208 bitmap_region u64
 * 216 events_cleared u64  224 write_hole u32  228 readd_slots u32  232 ppl_id u64
 * 240..255 reserved (zero)
 * 256 slot table: RK_MAX_MEMBERS entries of 48 bytes:
 *       +0 state u32  +4 reserved u32  +8 data_size u64  +16 rebuild_offset u64
 *       +24 member_uuid[16]  +40 reserved[8]
 * 1792 bad-range table: count u32, reserved u32, then RK_SB_BAD_MAX entries of 24 bytes:
 *       +0 slot u32  +4 reserved u32  +8 offset u64  +16 len u64
 * 3336 cache binding (docs/FORMAT.md "Cache binding"): cache_flags u32, reserved u32,
 *       cache_uuid[16], reserved[40] up to 3399
 * 3400..4095 reserved (zero)
 */
#define SB_OFF_MAGIC       0
#define SB_OFF_VERSION     8
#define SB_OFF_HDR_SIZE    12
#define SB_OFF_CRC         16
#define SB_OFF_DIRTY       20
#define SB_OFF_ARRAY_UUID  24
#define SB_OFF_MEMBER_UUID 40
#define SB_OFF_SLOT        56
#define SB_OFF_LEVEL       60
#define SB_OFF_LAYOUT      64
#define SB_OFF_CHUNK       68
#define SB_OFF_MEMBERS     72
#define SB_OFF_DATA_OFFSET 80
#define SB_OFF_DATA_SIZE   88
#define SB_OFF_ARRAY_SIZE  96
#define SB_OFF_EVENTS      104
#define SB_OFF_CTIME       112
#define SB_OFF_UTIME       120
#define SB_OFF_BITMAP_OFF  128
#define SB_OFF_BITMAP_SIZE 136
#define SB_OFF_JOURNAL_OFF 144
#define SB_OFF_JOURNAL_SZ  152
#define SB_OFF_NAME        160
#define SB_OFF_RESYNC_FL   192
#define SB_OFF_RESYNC_OFF  200
#define SB_OFF_BM_REGION   208
#define SB_OFF_EV_CLEARED  216
#define SB_OFF_WRITE_HOLE  224
#define SB_OFF_READD       228
#define SB_OFF_PPL_ID      232
#define SB_OFF_SLOTS       256
#define SB_SLOT_SIZE       48
#define SB_SLOT_STATE      0
#define SB_SLOT_DATA_SIZE  8
#define SB_SLOT_REBUILD    16
#define SB_SLOT_UUID       24
#define SB_OFF_BAD         1792
#define SB_BAD_ENTRIES     (SB_OFF_BAD + 8)
#define SB_BAD_SIZE        24
#define SB_BAD_SLOT        0
#define SB_BAD_OFFSET      8
#define SB_BAD_LEN         16
#define SB_OFF_CACHE_FL    3336
#define SB_OFF_CACHE_UUID  3344

_Static_assert(SB_OFF_SLOTS + RK_MAX_MEMBERS * SB_SLOT_SIZE <= RK_SB_SIZE, "slot table fits");
_Static_assert(SB_OFF_SLOTS + RK_MAX_MEMBERS * SB_SLOT_SIZE <= SB_OFF_BAD, "bad table after slots");
_Static_assert(SB_BAD_ENTRIES + RK_SB_BAD_MAX * SB_BAD_SIZE <= RK_SB_SIZE, "bad table fits");

void rk_sb_encode(const struct rk_sb *sb, uint8_t *out)
{
    memset(out, 0, RK_SB_SIZE);
    memcpy(out + SB_OFF_MAGIC, RK_SB_MAGIC, 8);
    rk_put_le32(out + SB_OFF_VERSION, sb->version);
    rk_put_le32(out + SB_OFF_HDR_SIZE, RK_SB_SIZE);
    rk_put_le32(out + SB_OFF_DIRTY, sb->dirty);
    memcpy(out + SB_OFF_ARRAY_UUID, sb->array_uuid, RK_UUID_LEN);
    memcpy(out + SB_OFF_MEMBER_UUID, sb->member_uuid, RK_UUID_LEN);
    rk_put_le32(out + SB_OFF_SLOT, sb->slot);
    rk_put_le32(out + SB_OFF_LEVEL, (uint32_t)sb->level);
    rk_put_le32(out + SB_OFF_LAYOUT, sb->layout);
    rk_put_le32(out + SB_OFF_CHUNK, sb->chunk);
    rk_put_le32(out + SB_OFF_MEMBERS, sb->members);
    rk_put_le64(out + SB_OFF_DATA_OFFSET, sb->data_offset);
    rk_put_le64(out + SB_OFF_DATA_SIZE, sb->data_size);
    rk_put_le64(out + SB_OFF_ARRAY_SIZE, sb->array_size);
    rk_put_le64(out + SB_OFF_EVENTS, sb->events);
    rk_put_le64(out + SB_OFF_CTIME, sb->ctime);
    rk_put_le64(out + SB_OFF_UTIME, sb->utime);
    rk_put_le64(out + SB_OFF_BITMAP_OFF, sb->bitmap_offset);
    rk_put_le64(out + SB_OFF_BITMAP_SIZE, sb->bitmap_size);
    rk_put_le64(out + SB_OFF_JOURNAL_OFF, sb->journal_offset);
    rk_put_le64(out + SB_OFF_JOURNAL_SZ, sb->journal_size);
    rk_put_le32(out + SB_OFF_RESYNC_FL, sb->resync_flags);
    rk_put_le64(out + SB_OFF_RESYNC_OFF, sb->resync_offset);
    rk_put_le64(out + SB_OFF_BM_REGION, sb->bitmap_region);
    rk_put_le64(out + SB_OFF_EV_CLEARED, sb->events_cleared);
    rk_put_le32(out + SB_OFF_READD, sb->readd_slots);
    rk_put_le32(out + SB_OFF_WRITE_HOLE, sb->write_hole);
    rk_put_le64(out + SB_OFF_PPL_ID, sb->ppl_id);
    /* strnlen keeps a name without NUL from running past the field. */
    memcpy(out + SB_OFF_NAME, sb->name, strnlen(sb->name, RK_SB_NAME_LEN));
    for (uint32_t i = 0; i < RK_MAX_MEMBERS; i++) {
        uint8_t *e = out + SB_OFF_SLOTS + i * SB_SLOT_SIZE;
        const struct rk_sb_slot *s = &sb->slots[i];
        rk_put_le32(e + SB_SLOT_STATE, s->state);
        rk_put_le64(e + SB_SLOT_DATA_SIZE, s->data_size);
        rk_put_le64(e + SB_SLOT_REBUILD, s->rebuild_offset);
        memcpy(e + SB_SLOT_UUID, s->uuid, RK_UUID_LEN);
    }
    /* Entries past the count stay zero, so a table of 0 encodes exactly like the old format. */
    uint32_t nbad = sb->nbad < RK_SB_BAD_MAX ? sb->nbad : RK_SB_BAD_MAX;
    rk_put_le32(out + SB_OFF_BAD, sb->nbad);
    for (uint32_t i = 0; i < nbad; i++) {
        uint8_t *e = out + SB_BAD_ENTRIES + i * SB_BAD_SIZE;
        rk_put_le32(e + SB_BAD_SLOT, sb->bad[i].slot);
        rk_put_le64(e + SB_BAD_OFFSET, sb->bad[i].offset);
        rk_put_le64(e + SB_BAD_LEN, sb->bad[i].len);
    }
    rk_put_le32(out + SB_OFF_CACHE_FL, sb->cache_flags);
    memcpy(out + SB_OFF_CACHE_UUID, sb->cache_uuid, RK_UUID_LEN);
    rk_put_le32(out + SB_OFF_CRC, rk_crc32c(out, RK_SB_SIZE));
}

bool rk_sb_has_magic(const uint8_t *buf)
{
    return memcmp(buf + SB_OFF_MAGIC, RK_SB_MAGIC, 8) == 0;
}

static bool sb_uuid_zero(const uint8_t *u)
{
    for (unsigned i = 0; i < RK_UUID_LEN; i++)
        if (u[i])
            return false;
    return true;
}

static bool sb_slot_empty(const struct rk_sb_slot *s)
{
    return s->state == 0 && s->data_size == 0 && s->rebuild_offset == 0 && sb_uuid_zero(s->uuid);
}

/* The write-hole mode: none, or a partial parity log (raid5/raid6 only) in a journal region of
 * at least 64 KiB, 4 KiB aligned (the log's block size), with a non-zero generation. */
static int sb_check_write_hole(const struct rk_sb *sb, char *err, size_t errlen)
{
    if (sb->write_hole == RK_SB_WH_NONE)
        return 0;
    if (sb->write_hole != RK_SB_WH_PPL) {
        rk_set_err(err, errlen, "unknown write-hole mode %" PRIu32, sb->write_hole);
        return -EINVAL;
    }
    if (!rk_level_write_hole(sb->level)) {
        rk_set_err(err, errlen, "partial parity log on a %s array", rk_level_name(sb->level));
        return -EINVAL;
    }
    if (sb->journal_size < 64 * 1024 || sb->journal_offset % 4096 || sb->journal_size % 4096 ||
        sb->ppl_id == 0) {
        rk_set_err(err, errlen,
                   "partial parity log region [%" PRIu64 ", +%" PRIu64 ") or generation %" PRIu64
                   " invalid (needs >= 64 KiB, 4 KiB aligned, generation > 0)",
                   sb->journal_offset, sb->journal_size, sb->ppl_id);
        return -EINVAL;
    }
    return 0;
}

/* A reserved region [off, off+size) must be empty or lie between the superblock and the data. */
static int sb_check_region(const char *what, uint64_t off, uint64_t size, uint64_t data_offset,
                           char *err, size_t errlen)
{
    if (off == 0 && size == 0)
        return 0;
    if (off < RK_SB_SIZE || size == 0 || off > data_offset || size > data_offset - off) {
        rk_set_err(err, errlen,
                   "%s region [%" PRIu64 ", +%" PRIu64 ") is not inside [4096, data offset %" PRIu64
                   ")",
                   what, off, size, data_offset);
        return -EINVAL;
    }
    return 0;
}

/* The bitmap and resync fields (bytes 192..223): a bitmap has a region size, a power of two
 * >= 64 KiB, and ends below 512 KiB; resync flags are known; the resync offset is inside the
 * data area. Zeros (older arrays) pass. */
static int sb_check_resync(const struct rk_sb *sb, char *err, size_t errlen)
{
    if (sb->resync_flags & ~RK_SB_RESYNC_MASK) {
        rk_set_err(err, errlen, "unknown resync flags %#" PRIx32, sb->resync_flags);
        return -EINVAL;
    }
    if (sb->resync_offset > sb->data_size) {
        rk_set_err(err, errlen, "resync offset %" PRIu64 " is beyond the data size %" PRIu64,
                   sb->resync_offset, sb->data_size);
        return -EINVAL;
    }
    uint64_t rg = sb->bitmap_region;
    if (!sb->bitmap_offset != !rg || (rg && (rg < 64 * 1024 || (rg & (rg - 1)) || rg < sb->chunk ||
                                             sb->bitmap_offset + sb->bitmap_size > 512 * 1024))) {
        rk_set_err(err, errlen,
                   "write-intent bitmap region %" PRIu64 " (area at %" PRIu64 ", %" PRIu64
                   " bytes) is not a power of two >= 64 KiB and the chunk inside 512 KiB",
                   rg, sb->bitmap_offset, sb->bitmap_size);
        return -EINVAL;
    }
    return 0;
}

/* The re-add fields (docs/FORMAT.md "Re-add"); slots are already checked. */
static int sb_check_readd(const struct rk_sb *sb, char *err, size_t errlen)
{
    if (sb->events_cleared > sb->events) {
        rk_set_err(err, errlen,
                   "bitmap cleared at event %" PRIu64 ", after the event counter %" PRIu64,
                   sb->events_cleared, sb->events);
        return -EINVAL;
    }
    for (uint32_t i = sb->members; i < 32; i++)
        if (sb->readd_slots & (1u << i)) {
            rk_set_err(err, errlen, "re-add flag of slot %" PRIu32 ", beyond the %" PRIu32 " slots",
                       i, sb->members);
            return -EINVAL;
        }
    return 0;
}

/* The bad-range table; slots are already checked. */
static int sb_check_bad(const struct rk_sb *sb, char *err, size_t errlen)
{
    if (sb->nbad > RK_SB_BAD_MAX) {
        rk_set_err(err, errlen, "bad-range count %" PRIu32 " exceeds the table's %u entries",
                   sb->nbad, RK_SB_BAD_MAX);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < sb->nbad; i++) {
        const struct rk_sb_bad *b = &sb->bad[i];
        if (b->slot >= sb->members) {
            rk_set_err(err, errlen,
                       "bad range %" PRIu32 " names slot %" PRIu32 " (the array has %" PRIu32
                       " members)",
                       i, b->slot, sb->members);
            return -EINVAL;
        }
        if (b->len == 0 || b->offset % 512 || b->len % 512) {
            rk_set_err(err, errlen,
                       "bad range %" PRIu32 " [%" PRIu64 ", +%" PRIu64
                       ") is empty or not 512-byte aligned",
                       i, b->offset, b->len);
            return -EINVAL;
        }
        uint64_t ds = sb->slots[b->slot].data_size;
        if (b->offset > ds || b->len > ds - b->offset) {
            rk_set_err(err, errlen,
                       "bad range %" PRIu32 " [%" PRIu64 ", +%" PRIu64 ") ends beyond slot %" PRIu32
                       "'s data size %" PRIu64,
                       i, b->offset, b->len, b->slot, ds);
            return -EINVAL;
        }
    }
    return 0;
}

/* The slot table: entries past the member count empty, known states, rebuild offsets within
 * the data size, member UUIDs set. Returns 0 or -EINVAL with the reason in err. */
static int sb_check_slots(const struct rk_sb *sb, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < RK_MAX_MEMBERS; i++) {
        const struct rk_sb_slot *s = &sb->slots[i];
        if (i < sb->members && s->data_size > UINT64_MAX - sb->data_offset) {
            rk_set_err(err, errlen,
                       "data offset %" PRIu64 " + slot %" PRIu32 "'s data size %" PRIu64
                       " overflows 64 bits",
                       sb->data_offset, i, s->data_size);
            return -EINVAL;
        }
        if (i >= sb->members) {
            if (!sb_slot_empty(s)) {
                rk_set_err(err, errlen,
                           "slot table entry %" PRIu32 " is not empty but the array has %" PRIu32
                           " members",
                           i, sb->members);
                return -EINVAL;
            }
            continue;
        }
        if (s->state > RK_SLOT_REBUILDING) {
            rk_set_err(err, errlen, "slot %" PRIu32 " has unknown state %" PRIu32, i, s->state);
            return -EINVAL;
        }
        if (s->rebuild_offset > s->data_size) {
            rk_set_err(err, errlen,
                       "rebuild offset %" PRIu64 " of slot %" PRIu32
                       " is beyond its data size %" PRIu64,
                       s->rebuild_offset, i, s->data_size);
            return -EINVAL;
        }
        if (sb_uuid_zero(s->uuid)) {
            rk_set_err(err, errlen, "member UUID of slot %" PRIu32 " is all zeros", i);
            return -EINVAL;
        }
    }
    return 0;
}

/* Cache binding: known flags, dirty only when bound, a UUID exactly when bound. */
static int sb_check_cache(const struct rk_sb *sb, char *err, size_t errlen)
{
    bool bound = (sb->cache_flags & RK_SB_CACHE_BOUND) != 0;
    if ((sb->cache_flags & ~RK_SB_CACHE_MASK) ||
        ((sb->cache_flags & RK_SB_CACHE_DIRTY) && !bound)) {
        rk_set_err(err, errlen, "unknown cache binding flags %#" PRIx32, sb->cache_flags);
        return -EINVAL;
    }
    if (bound == sb_uuid_zero(sb->cache_uuid)) {
        rk_set_err(err, errlen, "cache binding: %s",
                   bound ? "bound to a zero cache UUID" : "a cache UUID without the bound flag");
        return -EINVAL;
    }
    return 0;
}

int rk_sb_check(const struct rk_sb *sb, char *err, size_t errlen)
{
    if (sb->version != RK_SB_VERSION) {
        rk_set_err(err, errlen, "unsupported superblock version %" PRIu32 " (this build reads 1)",
                   sb->version);
        return RK_SB_EVERSION;
    }
    if (sb->dirty != RK_SB_CLEAN && sb->dirty != RK_SB_DIRTY) {
        rk_set_err(err, errlen, "unknown clean/dirty flag %" PRIu32 " (expected 0 or 1)",
                   sb->dirty);
        return -EINVAL;
    }
    /* Level, member count, chunk and data sizes: the one geometry check. */
    struct rk_raid_geom g;
    rk_sb_geom(sb, &g);
    int r = rk_raid_geom_check(&g, err, errlen);
    if (r)
        return r;
    if (sb->layout != 0) {
        rk_set_err(err, errlen, "unknown layout %" PRIu32 " for %s (version 1 knows only 0)",
                   sb->layout, rk_level_name(sb->level));
        return -EINVAL;
    }
    if (sb->slot >= sb->members) {
        rk_set_err(err, errlen, "slot %" PRIu32 " out of range (the array has %" PRIu32 " members)",
                   sb->slot, sb->members);
        return -EINVAL;
    }
    if (sb->data_offset == 0 || sb->data_offset % RK_SB_ALIGN) {
        rk_set_err(err, errlen, "data offset %" PRIu64 " is not a non-zero multiple of 1 MiB",
                   sb->data_offset);
        return -EINVAL;
    }
    if (sb->events == 0) {
        rk_set_err(err, errlen, "event counter is 0 (every written superblock has >= 1)");
        return -EINVAL;
    }
    if (sb->events > RK_SB_EVENTS_MAX) {
        rk_set_err(err, errlen,
                   "event counter %" PRIu64 " is beyond the bound 2^48 (raising it could wrap)",
                   sb->events);
        return -EINVAL;
    }
    if (sb_uuid_zero(sb->array_uuid)) {
        rk_set_err(err, errlen, "array UUID is all zeros");
        return -EINVAL;
    }
    if (sb_uuid_zero(sb->member_uuid)) {
        rk_set_err(err, errlen, "member UUID is all zeros");
        return -EINVAL;
    }
    if (memchr(sb->name, '\0', RK_SB_NAME_LEN) == NULL) {
        rk_set_err(err, errlen, "array name is not NUL-terminated within %u bytes", RK_SB_NAME_LEN);
        return -EINVAL;
    }
    r = sb_check_region("write-intent bitmap", sb->bitmap_offset, sb->bitmap_size, sb->data_offset,
                        err, errlen);
    if (r)
        return r;
    r = sb_check_resync(sb, err, errlen);
    if (r)
        return r;
    r = sb_check_region("journal", sb->journal_offset, sb->journal_size, sb->data_offset, err,
                        errlen);
    if (r)
        return r;
    r = sb_check_write_hole(sb, err, errlen);
    if (r)
        return r;
    r = sb_check_slots(sb, err, errlen);
    if (r)
        return r;
    r = sb_check_readd(sb, err, errlen);
    if (r)
        return r;
    if (sb->data_size != sb->slots[sb->slot].data_size) {
        rk_set_err(err, errlen,
                   "member data size %" PRIu64 " differs from slot %" PRIu32 "'s entry %" PRIu64,
                   sb->data_size, sb->slot, sb->slots[sb->slot].data_size);
        return -EINVAL;
    }
    if (memcmp(sb->member_uuid, sb->slots[sb->slot].uuid, RK_UUID_LEN) != 0) {
        rk_set_err(err, errlen, "member UUID differs from the one recorded for slot %" PRIu32,
                   sb->slot);
        return -EINVAL;
    }
    int rb = sb_check_bad(sb, err, errlen);
    if (!rb)
        rb = sb_check_cache(sb, err, errlen);
    if (rb)
        return rb;
    uint64_t want = rk_raid_array_size(&g);
    if (sb->array_size != want) {
        rk_set_err(err, errlen,
                   "array size %" PRIu64 " does not match the geometry (%s of %" PRIu32
                   " members gives %" PRIu64 ")",
                   sb->array_size, rk_level_name(sb->level), sb->members, want);
        return -EINVAL;
    }
    return 0;
}

int rk_sb_decode(const uint8_t *buf, struct rk_sb *sb, char *err, size_t errlen)
{
    if (!rk_sb_has_magic(buf)) {
        rk_set_err(err, errlen, "not a raidkit member (no superblock magic at offset 0)");
        return RK_SB_ENOTOURS;
    }
    memset(sb, 0, sizeof(*sb));
    sb->version = rk_get_le32(buf + SB_OFF_VERSION);
    /* The version decides the layout, so it is checked before anything else is trusted. */
    if (sb->version != RK_SB_VERSION) {
        rk_set_err(err, errlen, "unsupported superblock version %" PRIu32 " (this build reads 1)",
                   sb->version);
        return RK_SB_EVERSION;
    }
    uint32_t hdr = rk_get_le32(buf + SB_OFF_HDR_SIZE);
    if (hdr != RK_SB_SIZE) {
        rk_set_err(err, errlen, "bad superblock header size %" PRIu32 " (version 1 uses %u)", hdr,
                   RK_SB_SIZE);
        return -EINVAL;
    }
    uint32_t stored = rk_get_le32(buf + SB_OFF_CRC);
    uint8_t tmp[RK_SB_SIZE];
    memcpy(tmp, buf, RK_SB_SIZE);
    memset(tmp + SB_OFF_CRC, 0, 4);
    uint32_t computed = rk_crc32c(tmp, RK_SB_SIZE);
    if (stored != computed) {
        rk_set_err(err, errlen,
                   "superblock checksum mismatch (stored %08" PRIx32 ", computed %08" PRIx32 ")",
                   stored, computed);
        return RK_SB_ECRC;
    }
    sb->dirty = rk_get_le32(buf + SB_OFF_DIRTY);
    memcpy(sb->array_uuid, buf + SB_OFF_ARRAY_UUID, RK_UUID_LEN);
    memcpy(sb->member_uuid, buf + SB_OFF_MEMBER_UUID, RK_UUID_LEN);
    sb->slot = rk_get_le32(buf + SB_OFF_SLOT);
    sb->level = (int32_t)rk_get_le32(buf + SB_OFF_LEVEL);
    sb->layout = rk_get_le32(buf + SB_OFF_LAYOUT);
    sb->chunk = rk_get_le32(buf + SB_OFF_CHUNK);
    sb->members = rk_get_le32(buf + SB_OFF_MEMBERS);
    sb->data_offset = rk_get_le64(buf + SB_OFF_DATA_OFFSET);
    sb->data_size = rk_get_le64(buf + SB_OFF_DATA_SIZE);
    sb->array_size = rk_get_le64(buf + SB_OFF_ARRAY_SIZE);
    sb->events = rk_get_le64(buf + SB_OFF_EVENTS);
    sb->ctime = rk_get_le64(buf + SB_OFF_CTIME);
    sb->utime = rk_get_le64(buf + SB_OFF_UTIME);
    sb->bitmap_offset = rk_get_le64(buf + SB_OFF_BITMAP_OFF);
    sb->bitmap_size = rk_get_le64(buf + SB_OFF_BITMAP_SIZE);
    sb->journal_offset = rk_get_le64(buf + SB_OFF_JOURNAL_OFF);
    sb->journal_size = rk_get_le64(buf + SB_OFF_JOURNAL_SZ);
    sb->write_hole = rk_get_le32(buf + SB_OFF_WRITE_HOLE);
    sb->ppl_id = rk_get_le64(buf + SB_OFF_PPL_ID);
    memcpy(sb->name, buf + SB_OFF_NAME, RK_SB_NAME_LEN);
    sb->resync_flags = rk_get_le32(buf + SB_OFF_RESYNC_FL);
    sb->resync_offset = rk_get_le64(buf + SB_OFF_RESYNC_OFF);
    sb->bitmap_region = rk_get_le64(buf + SB_OFF_BM_REGION);
    sb->events_cleared = rk_get_le64(buf + SB_OFF_EV_CLEARED);
    sb->readd_slots = rk_get_le32(buf + SB_OFF_READD);
    /* A re-add flag means something only for a rebuilding slot (docs/FORMAT.md "Re-add"). */
    for (uint32_t i = 0; i < RK_MAX_MEMBERS; i++)
        if (rk_get_le32(buf + SB_OFF_SLOTS + i * SB_SLOT_SIZE + SB_SLOT_STATE) !=
            RK_SLOT_REBUILDING)
            sb->readd_slots &= ~(1u << i);
    for (uint32_t i = 0; i < RK_MAX_MEMBERS; i++) {
        const uint8_t *e = buf + SB_OFF_SLOTS + i * SB_SLOT_SIZE;
        struct rk_sb_slot *s = &sb->slots[i];
        s->state = rk_get_le32(e + SB_SLOT_STATE);
        s->data_size = rk_get_le64(e + SB_SLOT_DATA_SIZE);
        s->rebuild_offset = rk_get_le64(e + SB_SLOT_REBUILD);
        memcpy(s->uuid, e + SB_SLOT_UUID, RK_UUID_LEN);
    }
    sb->nbad = rk_get_le32(buf + SB_OFF_BAD);
    /* Entries are read only up to the bound; rk_sb_check refuses a larger count. */
    for (uint32_t i = 0; i < sb->nbad && i < RK_SB_BAD_MAX; i++) {
        const uint8_t *e = buf + SB_BAD_ENTRIES + i * SB_BAD_SIZE;
        sb->bad[i].slot = rk_get_le32(e + SB_BAD_SLOT);
        sb->bad[i].offset = rk_get_le64(e + SB_BAD_OFFSET);
        sb->bad[i].len = rk_get_le64(e + SB_BAD_LEN);
    }
    sb->cache_flags = rk_get_le32(buf + SB_OFF_CACHE_FL);
    memcpy(sb->cache_uuid, buf + SB_OFF_CACHE_UUID, RK_UUID_LEN);
    return rk_sb_check(sb, err, errlen);
}

void rk_sb_geom(const struct rk_sb *sb, struct rk_raid_geom *g)
{
    memset(g, 0, sizeof(*g));
    g->level = sb->level;
    g->members = sb->members;
    g->chunk = sb->chunk;
    g->data_offset = sb->data_offset;
    for (uint32_t i = 0; i < sb->members && i < RK_MAX_MEMBERS; i++)
        g->data_size[i] = sb->slots[i].data_size;
    if (sb->write_hole == RK_SB_WH_PPL) {
        g->ppl_offset = sb->journal_offset;
        g->ppl_size = sb->journal_size;
        g->ppl_id = sb->ppl_id;
    }
}

const char *rk_slot_state_name(int state)
{
    switch (state) {
    case RK_SLOT_ACTIVE:
        return "active";
    case RK_SLOT_FAILED:
        return "failed";
    case RK_SLOT_SPARE:
        return "spare";
    case RK_SLOT_REBUILDING:
        return "rebuilding";
    case RK_SLOT_MISSING:
        return "missing";
    default:
        return "unknown";
    }
}

char *rk_uuid_format(const uint8_t *u, char *out)
{
    snprintf(out, RK_UUID_STR_LEN,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    return out;
}
