/* libFuzzer harness: the member superblock decoder (src/meta/superblock.c) on arbitrary 4 KiB
 * blocks. Input byte 0 bit 0 set: the harness stamps the magic and version and recomputes the
 * crc32c, so the field checks behind the checksum are reached too. A block that decodes must
 * encode to a block that decodes and encodes to the same bytes again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "meta/superblock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t buf[RK_SB_SIZE], again[RK_SB_SIZE];
    if (size < 1)
        return 0;
    bool fix = data[0] & 1;
    memset(buf, 0, sizeof(buf));
    memcpy(buf, data + 1, size - 1 < RK_SB_SIZE ? size - 1 : RK_SB_SIZE);
    if (fix) {
        memcpy(buf, RK_SB_MAGIC, 8);
        rk_put_le32(buf + 8, RK_SB_VERSION);
        rk_put_le32(buf + 12, RK_SB_SIZE);
        rk_put_le32(buf + 16, 0);
        rk_put_le32(buf + 16, rk_crc32c(buf, RK_SB_SIZE));
    }
    struct rk_sb sb, sb2;
    char err[512];
    if (rk_sb_decode(buf, &sb, err, sizeof(err)) != 0)
        return 0;
    /* A valid superblock must survive a round trip: its encoding decodes, and encodes to the
     * same bytes (bytes the decoder ignores, e.g. after the name's NUL, are not compared). */
    static uint8_t third[RK_SB_SIZE];
    rk_sb_encode(&sb, again);
    if (rk_sb_decode(again, &sb2, err, sizeof(err)) != 0)
        abort();
    rk_sb_encode(&sb2, third);
    if (memcmp(again, third, RK_SB_SIZE) != 0)
        abort();
    struct rk_raid_geom g;
    rk_sb_geom(&sb, &g);
    (void)rk_raid_array_size(&g);
    return 0;
}
