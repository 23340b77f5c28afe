/* Writes the golden superblock image (tests/golden/sb_v1.bin) from tests/lib/sb_golden.h.
 * Usage: mkgolden OUT.bin — run only when adding a new golden image, never to "fix" a test. */
#include <stdio.h>

#include "meta/superblock.h"
#include "sb_golden.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mkgolden OUT.bin\n");
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
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(buf, 1, sizeof(buf), f) != sizeof(buf) || fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
