/* The write-intent bitmap's on-disk area (docs/FORMAT.md "Write-intent bitmap"): a 64-byte
 * header and one bit per region of the member data area, in one area per member at the
 * superblock's bitmap_offset, covered whole by one crc32c. The codec is pure (no I/O): the raid
 * engine encodes it on the write path, the metadata layer decodes it at assembly and encodes the
 * first one at create. */
#ifndef RK_RAID_BITMAP_DISK_H
#define RK_RAID_BITMAP_DISK_H

#include <stddef.h>
#include <stdint.h>

#define RK_BM_MAGIC      "RKBITMAP" /* 8 bytes, no NUL on disk */
#define RK_BM_VERSION    1u
#define RK_BM_HDR_SIZE   64u
#define RK_BM_OFFSET     (8u * 1024u)   /* area start on members created by this version */
#define RK_BM_AREA_END   (512u * 1024u) /* the area never reaches past this member offset */
#define RK_BM_REGION_MIN (64u * 1024u)  /* smallest region size, bytes */
/* Regions that fit one 4 KiB area (the default: one atomic block per bitmap write). */
#define RK_BM_ONE_BLOCK_REGIONS ((4096u - RK_BM_HDR_SIZE) * 8u)

/* The decoded header (bits stay in the caller's buffer, from byte RK_BM_HDR_SIZE). */
struct rk_bm_hdr {
    uint64_t region;   /* member data-area bytes per bit, power of two >= RK_BM_REGION_MIN */
    uint64_t nregions; /* bits in use: ceil(largest data size / region) */
    uint64_t events;   /* raised on every write of the area (newest copy wins ties) */
    uint8_t uuid[16];  /* the array UUID: a bitmap of another array is refused */
};

/* Area bytes for nregions bits: the header plus the bits, rounded up to 4 KiB. */
uint64_t rk_bm_area_size(uint64_t nregions);

/* Default region size for members of up to data_size data bytes and chunk-byte chunks: the
 * smallest power of two >= max(RK_BM_REGION_MIN, chunk) whose bits fit one 4 KiB area. */
uint64_t rk_bm_default_region(uint64_t data_size, uint32_t chunk);

/* Check a region size the user asked for: power of two, >= RK_BM_REGION_MIN and >= chunk, and
 * the area fits [RK_BM_OFFSET, RK_BM_AREA_END). 0 or -EINVAL with a reason in err. */
int rk_bm_check_region(uint64_t region, uint64_t data_size, uint32_t chunk, char *err,
                       size_t errlen);

/* Encode header h into area (size bytes, bits already at RK_BM_HDR_SIZE; bytes past the last
 * bit must be zero) and fill in the crc. */
void rk_bm_encode(const struct rk_bm_hdr *h, uint8_t *area, uint64_t size);

/* Decode and verify an area of size bytes read from a member: magic, version, header size,
 * crc32c over the whole area, region a power of two >= RK_BM_REGION_MIN, nregions matching
 * want_nregions (0: any), the area large enough for the bits, and no bit set past nregions.
 * Returns 0 and *h, or -EBADMSG (crc), -ENODATA (no magic), -EINVAL (a field) with err. */
int rk_bm_decode(const uint8_t *area, uint64_t size, uint64_t want_nregions, struct rk_bm_hdr *h,
                 char *err, size_t errlen);

/* Bit i of the area's bit field. */
static inline int rk_bm_test(const uint8_t *area, uint64_t i)
{
    return (area[RK_BM_HDR_SIZE + i / 8] >> (i % 8)) & 1;
}

#endif
