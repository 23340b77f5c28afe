/* The fixed superblock behind tests/golden/sb_v1.bin: shared by the generator (mkgolden.c) and
 * the test that decodes the committed image (test_superblock.c). Never change it: add a new one. */
#ifndef RK_TESTS_SB_GOLDEN_H
#define RK_TESTS_SB_GOLDEN_H

#include <string.h>

#include "meta/superblock.h"

/* raid5 over 4 members, chunk 64 KiB, slot 3 larger (unequal members), slot 2 rebuilding,
 * dirty, event 42, this copy is slot 1's. */
static inline void golden_sb_v1(struct rk_sb *sb)
{
    memset(sb, 0, sizeof(*sb));
    sb->version = RK_SB_VERSION;
    for (unsigned i = 0; i < RK_UUID_LEN; i++)
        sb->array_uuid[i] = (uint8_t)(0x10 + i);
    sb->level = RK_LEVEL_RAID5;
    sb->layout = 0;
    sb->chunk = 64 * 1024;
    sb->members = 4;
    sb->data_offset = 1024 * 1024;
    for (unsigned s = 0; s < 4; s++) {
        sb->slots[s].state = s == 2 ? RK_SLOT_REBUILDING : RK_SLOT_ACTIVE;
        sb->slots[s].data_size = s == 3 ? 8u << 20 : 4u << 20;
        sb->slots[s].rebuild_offset = s == 2 ? 1u << 20 : 0;
        for (unsigned i = 0; i < RK_UUID_LEN; i++)
            sb->slots[s].uuid[i] = (uint8_t)(0xa0 + 16 * s + i);
    }
    sb->slot = 1;
    memcpy(sb->member_uuid, sb->slots[1].uuid, RK_UUID_LEN);
    sb->data_size = sb->slots[1].data_size;
    sb->array_size = 3 * (4u << 20); /* raid5: (members - 1) * smallest data size */
    sb->events = 42;
    sb->dirty = RK_SB_DIRTY;
    sb->ctime = 1700000000;
    sb->utime = 1700000123;
    memcpy(sb->name, "golden", 6);
}

#endif
