/* Test helper until `raidkit cache create` is in the tree: format a cache device for the array of
 * MEMBER (array UUID and size from its superblock at offset 0), unbound in the array superblock.
 * Usage: rk_mkcache CACHEDEV SIZE BLOCK MODE MEMBER (SIZE/BLOCK with K/M suffixes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/meta.h"
#include "core/util.h"
#include "meta/superblock.h"
#include "raidkit/member.h"

int main(int argc, char **argv)
{
    uint64_t size, block;
    enum rk_cache_mode mode;
    if (argc != 6 || rk_parse_size(argv[2], &size) || rk_parse_size(argv[3], &block) ||
        rk_cache_mode_parse(argv[4], &mode)) {
        fprintf(stderr, "usage: rk_mkcache CACHEDEV SIZE BLOCK MODE MEMBER\n");
        return 2;
    }
    struct rk_dev *m = NULL, *c = NULL;
    uint8_t *buf = rk_buf_alloc(RK_SB_SIZE);
    struct rk_sb sb;
    char err[300] = "";
    if (rk_file_open(argv[5], RK_FILE_READ_ONLY | RK_FILE_BUFFERED, &m) ||
        rk_dev_read(m, buf, RK_SB_SIZE, 0) || rk_sb_decode(buf, &sb, err, sizeof(err))) {
        fprintf(stderr, "rk_mkcache: %s: cannot read the superblock %s\n", argv[5], err);
        return 1;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f || ftruncate(fileno(f), (off_t)size)) {
        fprintf(stderr, "rk_mkcache: %s: cannot create\n", argv[1]);
        return 1;
    }
    fclose(f);
    struct rk_cache_format_params p = {.array_size = sb.array_size,
                                       .block_size = (uint32_t)block,
                                       .mode = mode};
    memcpy(p.array_uuid, sb.array_uuid, 16);
    int r = rk_file_open(argv[1], RK_FILE_BUFFERED, &c);
    if (!r)
        r = rk_cache_meta_format(c, argv[1], &p, err, sizeof(err));
    if (r) {
        fprintf(stderr, "rk_mkcache: %s\n", err);
        return 1;
    }
    rk_dev_close(c);
    rk_dev_close(m);
    free(buf);
    return 0;
}
