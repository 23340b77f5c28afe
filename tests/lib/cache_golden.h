/* The fixed cache superblock behind tests/golden/cache_sb_v1.bin: shared by the generator
 * (mkgolden.c --cache) and the test that decodes the committed image (test_cache_meta_sb.c).
 * Never change it: add a new one. */
#ifndef RK_TESTS_CACHE_GOLDEN_H
#define RK_TESTS_CACHE_GOLDEN_H

#include <string.h>

#include "cache/meta_int.h"

/* A writeback cache of a 256 MiB device with 64 KiB blocks (4064 blocks, default 1 MiB journal)
 * bound to a 1 GiB array. */
static inline void golden_cache_sb_v1(struct rkc_sb *sb)
{
    memset(sb, 0, sizeof(*sb));
    sb->version = 1;
    sb->mode = 2; /* writeback */
    for (unsigned i = 0; i < 16; i++) {
        sb->cache_uuid[i] = (uint8_t)(0xc0 + i);
        sb->array_uuid[i] = (uint8_t)(0x10 + i);
    }
    sb->array_size = 1024ull * 1024 * 1024;
    sb->block_size = 65536;
    sb->nblocks = 4064;
    sb->instance = 0x1122334455667788ull;
    sb->ckpt_off[0] = 4096;
    sb->ckpt_off[1] = 40960;
    sb->ckpt_size = 36864;
    sb->journal_off = 77824;
    sb->journal_size = 1048576;
    sb->data_off = 2097152;
    sb->ctime = 1764547200; /* 2025-12-01 00:00:00 UTC */
}

#endif
