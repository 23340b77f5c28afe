/* Writes the golden superblock image (tests/golden/sb_v1.bin) from tests/lib/sb_golden.h, or
 * with --bitmap the golden bitmap area (tests/golden/bitmap_v1.bin) from tests/lib/bm_golden.h,
 * or with --cache the golden cache superblock (tests/golden/cache_sb_v1.bin) from
 * tests/lib/cache_golden.h.
 * Usage: mkgolden [--bitmap|--cache] OUT.bin — run only when adding a new golden image, never to
 * "fix" a test. */
#include <stdio.h>

#include "meta/superblock.h"
#include <string.h>

#include "bm_golden.h"
#include "cache_golden.h"
#include "sb_golden.h"

static int write_file(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--bitmap")) {
        struct rk_bm_hdr h;
        static uint8_t area[GOLDEN_BM_SIZE];
        golden_bm_v1(&h, area);
        return write_file(argv[2], area, sizeof(area));
    }
    if (argc == 3 && !strcmp(argv[1], "--cache")) {
        struct rkc_sb csb, back;
        static uint8_t blk[RKC_BLK];
        char err[256];
        golden_cache_sb_v1(&csb);
        rkc_sb_encode(&csb, blk);
        if (rkc_sb_decode(blk, &back, err, sizeof(err))) {
            fprintf(stderr, "mkgolden: golden cache superblock invalid: %s\n", err);
            return 1;
        }
        return write_file(argv[2], blk, sizeof(blk));
    }
    if (argc != 2) {
        fprintf(stderr, "usage: mkgolden [--bitmap|--cache] OUT.bin\n");
        return 2;
    }
    struct rk_sb sb;
    uint8_t buf[RK_SB_SIZE];
    char err[256];
    golden_sb_v1(&sb);
    if (rk_sb_check(&sb, err, sizeof(err))) {
        fprintf(stderr, "mkgolden: golden superblock invalid: %s\n", err);
        return 1;
    }
    rk_sb_encode(&sb, buf);
    return write_file(argv[1], buf, sizeof(buf));
}
