/* Codec of the write-intent bitmap area (bitmap_disk.h, docs/FORMAT.md "Write-intent bitmap").
 *
 *   0 magic[8] "RKBITMAP"   8 version u32   12 crc32c u32 (whole area, this field zero)
 *  16 header_size u32 (64)  20 flags u32 (0)  24 region u64  32 nregions u64  40 events u64
 *  48 array_uuid[16]        64 bits: bit i = byte 64 + i/8, bit i%8; zero to the area's end
 */
#include "raid/bitmap_disk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define BM_OFF_VERSION  8
#define BM_OFF_CRC      12
#define BM_OFF_HDR_SIZE 16
#define BM_OFF_FLAGS    20
#define BM_OFF_REGION   24
#define BM_OFF_NREGIONS 32
#define BM_OFF_EVENTS   40
#define BM_OFF_UUID     48

uint64_t rk_bm_area_size(uint64_t nregions)
{
    uint64_t bytes = RK_BM_HDR_SIZE + (nregions + 7) / 8;
    return (bytes + 4095) / 4096 * 4096;
}

uint64_t rk_bm_default_region(uint64_t data_size, uint32_t chunk)
{
    uint64_t r = RK_BM_REGION_MIN > chunk ? RK_BM_REGION_MIN : chunk;
    while ((data_size + r - 1) / r > RK_BM_ONE_BLOCK_REGIONS)
        r *= 2;
    return r;
}

int rk_bm_check_region(uint64_t region, uint64_t data_size, uint32_t chunk, char *err,
                       size_t errlen)
{
    if (region < RK_BM_REGION_MIN || (region & (region - 1)) || region < chunk) {
        rk_set_err(err, errlen,
                   "bitmap region %" PRIu64 " must be a power of two >= 64 KiB and >= the "
                   "chunk (%" PRIu32 ")",
                   region, chunk);
        return -EINVAL;
    }
    uint64_t n = (data_size + region - 1) / region;
    if (rk_bm_area_size(n) > RK_BM_AREA_END - RK_BM_OFFSET) {
        rk_set_err(err, errlen,
                   "bitmap region %" PRIu64 " is too small: %" PRIu64 " regions need more than "
                   "the %u KiB bitmap area",
                   region, n, (RK_BM_AREA_END - RK_BM_OFFSET) / 1024);
        return -EINVAL;
    }
    return 0;
}

/* crc32c of the area with its crc field taken as zero; *nomem set when no copy could be made. */
static uint32_t bm_crc(const uint8_t *area, uint64_t size, int *nomem)
{
    uint8_t *tmp = malloc((size_t)size);
    if (!tmp) {
        *nomem = 1;
        return 0;
    }
    memcpy(tmp, area, (size_t)size);
    memset(tmp + BM_OFF_CRC, 0, 4);
    uint32_t c = rk_crc32c(tmp, (size_t)size);
    free(tmp);
    return c;
}

void rk_bm_encode(const struct rk_bm_hdr *h, uint8_t *area, uint64_t size)
{
    memset(area, 0, RK_BM_HDR_SIZE);
    memcpy(area, RK_BM_MAGIC, 8);
    rk_put_le32(area + BM_OFF_VERSION, RK_BM_VERSION);
    rk_put_le32(area + BM_OFF_HDR_SIZE, RK_BM_HDR_SIZE);
    rk_put_le32(area + BM_OFF_FLAGS, 0);
    rk_put_le64(area + BM_OFF_REGION, h->region);
    rk_put_le64(area + BM_OFF_NREGIONS, h->nregions);
    rk_put_le64(area + BM_OFF_EVENTS, h->events);
    memcpy(area + BM_OFF_UUID, h->uuid, 16);
    rk_put_le32(area + BM_OFF_CRC, 0);
    rk_put_le32(area + BM_OFF_CRC, rk_crc32c(area, (size_t)size));
}

int rk_bm_decode(const uint8_t *area, uint64_t size, uint64_t want_nregions, struct rk_bm_hdr *h,
                 char *err, size_t errlen)
{
    if (size < 4096 || size % 4096) {
        rk_set_err(err, errlen, "bitmap area size %" PRIu64 " is not a multiple of 4 KiB", size);
        return -EINVAL;
    }
    if (memcmp(area, RK_BM_MAGIC, 8) != 0) {
        rk_set_err(err, errlen, "no bitmap magic");
        return -ENODATA;
    }
    int nomem = 0;
    uint32_t stored = rk_get_le32(area + BM_OFF_CRC), computed = bm_crc(area, size, &nomem);
    if (nomem) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (stored != computed) {
        rk_set_err(err, errlen,
                   "bitmap checksum mismatch (stored %08" PRIx32 ", computed %08" PRIx32 ")",
                   stored, computed);
        return -EBADMSG;
    }
    uint32_t v = rk_get_le32(area + BM_OFF_VERSION), hs = rk_get_le32(area + BM_OFF_HDR_SIZE);
    if (v != RK_BM_VERSION || hs != RK_BM_HDR_SIZE || rk_get_le32(area + BM_OFF_FLAGS)) {
        rk_set_err(err, errlen,
                   "unknown bitmap version %" PRIu32 ", header size %" PRIu32 " or flags", v, hs);
        return -EINVAL;
    }
    h->region = rk_get_le64(area + BM_OFF_REGION);
    h->nregions = rk_get_le64(area + BM_OFF_NREGIONS);
    h->events = rk_get_le64(area + BM_OFF_EVENTS);
    memcpy(h->uuid, area + BM_OFF_UUID, 16);
    if (h->region < RK_BM_REGION_MIN || (h->region & (h->region - 1))) {
        rk_set_err(err, errlen, "bitmap region %" PRIu64 " is not a power of two >= 64 KiB",
                   h->region);
        return -EINVAL;
    }
    if (h->nregions == 0 || (want_nregions && h->nregions != want_nregions) ||
        rk_bm_area_size(h->nregions) > size) {
        rk_set_err(err, errlen,
                   "bitmap holds %" PRIu64 " regions (expected %" PRIu64 ", area %" PRIu64
                   " bytes)",
                   h->nregions, want_nregions, size);
        return -EINVAL;
    }
    for (uint64_t i = h->nregions; i < (size - RK_BM_HDR_SIZE) * 8; i++) {
        if (area[RK_BM_HDR_SIZE + i / 8] == 0 && i % 8 == 0) {
            i += 7;
            continue;
        }
        if (rk_bm_test(area, i)) {
            rk_set_err(err, errlen, "bitmap bit %" PRIu64 " set past its %" PRIu64 " regions", i,
                       h->nregions);
            return -EINVAL;
        }
    }
    return 0;
}
