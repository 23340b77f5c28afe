/* Superblock v1: round trip, the committed golden image (decode + byte-identical re-encode), and
 * every field out of bounds (or a bad magic/version/crc) refused with its own message. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "meta/superblock.h"
#include "sb_golden.h"

static void load_golden(uint8_t *buf)
{
    char path[4096];
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    if (src && *src) {
        snprintf(path, sizeof(path), "%s/tests/golden/sb_v1.bin", src);
    } else {
        /* Run by hand: find the image next to this source file. */
        snprintf(path, sizeof(path), "%s", __FILE__);
        char *slash = strrchr(path, '/');
        if (slash)
            snprintf(slash, sizeof(path) - (size_t)(slash - path), "/../golden/sb_v1.bin");
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open golden image %s", path);
    assert_int_equal(fread(buf, 1, RK_SB_SIZE, f), RK_SB_SIZE);
    assert_int_equal(fgetc(f), EOF); /* exactly 4096 bytes */
    fclose(f);
}

static void test_roundtrip(void **state)
{
    struct rk_sb a, b;
    uint8_t buf[RK_SB_SIZE], buf2[RK_SB_SIZE];
    char err[256] = "";
    golden_sb_v1(&a);
    /* A second geometry: raid1 of 2, clean, every slot active. */
    a.level = RK_LEVEL_RAID1;
    a.members = 2;
    memset(&a.slots[2], 0, sizeof(a.slots[2]) * 2);
    a.slots[0].data_size = a.slots[1].data_size = 16u << 20;
    a.data_size = 16u << 20;
    a.array_size = 16u << 20;
    a.dirty = RK_SB_CLEAN;
    a.events = 0x123456789abcULL;
    rk_sb_encode(&a, buf);
    assert_int_equal(rk_sb_decode(buf, &b, err, sizeof(err)), 0);
    assert_int_equal(b.level, RK_LEVEL_RAID1);
    assert_int_equal(b.members, 2);
    assert_int_equal(b.events, 0x123456789abcULL);
    assert_int_equal(b.dirty, RK_SB_CLEAN);
    assert_memory_equal(b.array_uuid, a.array_uuid, RK_UUID_LEN);
    assert_string_equal(b.name, "golden");
    rk_sb_encode(&b, buf2);
    assert_memory_equal(buf, buf2, RK_SB_SIZE);
    /* Little-endian at the documented offsets (docs/FORMAT.md). */
    assert_memory_equal(buf, "RAIDKTSB", 8);
    assert_int_equal(rk_get_le32(buf + 8), 1);
    assert_int_equal(rk_get_le32(buf + 12), 4096);
    assert_int_equal(rk_get_le32(buf + 60), 1);
    assert_int_equal(rk_get_le64(buf + 104), 0x123456789abcULL);
}

/* The bad-range table at 1792 round-trips, sits at its documented offsets, and a count of 0
 * leaves the block byte-identical to one written before the table existed. */
static void test_bad_ranges(void **state)
{
    struct rk_sb a, b;
    uint8_t buf[RK_SB_SIZE], buf2[RK_SB_SIZE];
    char err[256] = "";
    golden_sb_v1(&a);
    a.nbad = 3;
    a.bad[0] = (struct rk_sb_bad){.slot = 2, .offset = (1u << 20) + 512, .len = 4096};
    a.bad[1] = (struct rk_sb_bad){.slot = 3, .offset = (8u << 20) - 65536, .len = 65536};
    a.bad[2] = (struct rk_sb_bad){.slot = 0, .offset = 0, .len = 512};
    rk_sb_encode(&a, buf);
    assert_int_equal(rk_sb_decode(buf, &b, err, sizeof(err)), 0);
    assert_int_equal(b.nbad, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(b.bad[i].slot, a.bad[i].slot);
        assert_int_equal(b.bad[i].offset, a.bad[i].offset);
        assert_int_equal(b.bad[i].len, a.bad[i].len);
    }
    rk_sb_encode(&b, buf2);
    assert_memory_equal(buf, buf2, RK_SB_SIZE);
    assert_int_equal(rk_get_le32(buf + 1792), 3);
    assert_int_equal(rk_get_le32(buf + 1796), 0);
    assert_int_equal(rk_get_le32(buf + 1800 + 24), 3);
    assert_int_equal(rk_get_le64(buf + 1800 + 24 + 8), (8u << 20) - 65536);
    assert_int_equal(rk_get_le64(buf + 1800 + 24 + 16), 65536);
    for (size_t off = 1800 + 3 * 24; off < RK_SB_SIZE; off++)
        assert_int_equal(buf[off], 0);
    /* A full table decodes; stale entries past a lowered count are not encoded. */
    a.nbad = RK_SB_BAD_MAX;
    for (uint32_t i = 0; i < RK_SB_BAD_MAX; i++)
        a.bad[i] = (struct rk_sb_bad){.slot = i % 4, .offset = i * 4096ull, .len = 4096};
    rk_sb_encode(&a, buf);
    assert_int_equal(rk_sb_decode(buf, &b, err, sizeof(err)), 0);
    assert_int_equal(b.nbad, RK_SB_BAD_MAX);
    assert_int_equal(b.bad[63].offset, 63 * 4096);
    a.nbad = 0;
    rk_sb_encode(&a, buf);
    golden_sb_v1(&b);
    rk_sb_encode(&b, buf2);
    assert_memory_equal(buf, buf2, RK_SB_SIZE);
}

static void test_golden(void **state)
{
    uint8_t img[RK_SB_SIZE], re[RK_SB_SIZE];
    struct rk_sb sb, want;
    char err[256] = "";
    char uuid[RK_UUID_STR_LEN];
    load_golden(img);
    assert_int_equal(rk_sb_decode(img, &sb, err, sizeof(err)), 0);
    golden_sb_v1(&want);
    assert_int_equal(sb.version, 1);
    assert_int_equal(sb.level, RK_LEVEL_RAID5);
    assert_int_equal(sb.layout, 0);
    assert_int_equal(sb.chunk, 65536);
    assert_int_equal(sb.members, 4);
    assert_int_equal(sb.slot, 1);
    assert_int_equal(sb.data_offset, 1048576);
    assert_int_equal(sb.data_size, 4u << 20);
    assert_int_equal(sb.array_size, 12u << 20);
    assert_int_equal(sb.events, 42);
    assert_int_equal(sb.dirty, RK_SB_DIRTY);
    assert_int_equal(sb.ctime, 1700000000);
    assert_int_equal(sb.utime, 1700000123);
    assert_int_equal(sb.bitmap_offset, 0);
    assert_int_equal(sb.journal_size, 0);
    assert_string_equal(sb.name, "golden");
    assert_string_equal(rk_uuid_format(sb.array_uuid, uuid),
                        "10111213-1415-1617-1819-1a1b1c1d1e1f");
    assert_string_equal(rk_uuid_format(sb.member_uuid, uuid),
                        "b0b1b2b3-b4b5-b6b7-b8b9-babbbcbdbebf");
    assert_int_equal(sb.slots[2].state, RK_SLOT_REBUILDING);
    assert_int_equal(sb.slots[2].rebuild_offset, 1u << 20);
    assert_int_equal(sb.slots[3].data_size, 8u << 20);
    for (int s = 0; s < 4; s++)
        assert_memory_equal(sb.slots[s].uuid, want.slots[s].uuid, RK_UUID_LEN);
    rk_sb_encode(&sb, re);
    assert_memory_equal(img, re, RK_SB_SIZE);
    /* The generator's struct encodes to the committed bytes too (the format did not move). */
    rk_sb_encode(&want, re);
    assert_memory_equal(img, re, RK_SB_SIZE);
    /* The crc is crc32c over the block with the crc field zeroed. */
    memcpy(re, img, RK_SB_SIZE);
    memset(re + 16, 0, 4);
    assert_int_equal(rk_get_le32(img + 16), rk_crc32c(re, RK_SB_SIZE));
}

/* One corruption of the decoded struct, re-encoded with a valid crc. */
struct field_case {
    const char *what;
    void (*mutate)(struct rk_sb *sb);
    int rc;
    const char *msg;
};

#define MUT(name, body)                                                                            \
    static void mut_##name(struct rk_sb *sb)                                                       \
    {                                                                                              \
        body;                                                                                      \
    }
MUT(level, sb->level = 7)
MUT(layout, sb->layout = 1)
MUT(members_big, sb->members = RK_MAX_MEMBERS + 1)
MUT(members_zero, sb->members = 0)
MUT(members_min, sb->members = 2)
MUT(slot, sb->slot = 4)
MUT(chunk_npot, sb->chunk = 3 * 4096)
MUT(chunk_small, sb->chunk = 2048)
MUT(chunk_big, sb->chunk = 128u << 20)
MUT(doff_align, sb->data_offset = 512 * 1024)
MUT(doff_zero, sb->data_offset = 0)
MUT(events, sb->events = 0)
MUT(dirty, sb->dirty = 2)
MUT(auuid, memset(sb->array_uuid, 0, RK_UUID_LEN))
MUT(muuid, memset(sb->member_uuid, 0, RK_UUID_LEN))
MUT(name, memset(sb->name, 'x', RK_SB_NAME_LEN))
MUT(bitmap, sb->bitmap_offset = 100; sb->bitmap_size = 4096)
MUT(journal, sb->journal_offset = 8192; sb->journal_size = 2u << 20)
MUT(unused_slot, sb->slots[5].state = RK_SLOT_FAILED)
MUT(state, sb->slots[0].state = 9)
MUT(slot_size, sb->slots[0].data_size = 1000)
MUT(slot_size_zero, sb->slots[3].data_size = 0)
MUT(rebuild, sb->slots[2].rebuild_offset = (4u << 20) + 65536)
MUT(slot_uuid, memset(sb->slots[0].uuid, 0, RK_UUID_LEN))
MUT(data_size, sb->data_size = 8u << 20)
MUT(member_uuid_mismatch, sb->member_uuid[0] ^= 1)
MUT(array_size, sb->array_size += 65536)
MUT(bad_count, sb->nbad = RK_SB_BAD_MAX + 1)
MUT(bad_slot, sb->nbad = 1; sb->bad[0].slot = 4; sb->bad[0].len = 4096)
MUT(bad_align, sb->nbad = 2; sb->bad[0].slot = 0; sb->bad[0].len = 4096; sb->bad[1].slot = 1;
    sb->bad[1].offset = 1000; sb->bad[1].len = 4096)
MUT(bad_empty, sb->nbad = 1; sb->bad[0].slot = 0)
MUT(bad_beyond, sb->nbad = 1; sb->bad[0].slot = 1; sb->bad[0].offset = (4u << 20) - 4096;
    sb->bad[0].len = 8192)

static const struct field_case field_cases[] = {
    {"level", mut_level, -EINVAL, "unknown RAID level 7"},
    {"layout", mut_layout, -EINVAL, "unknown layout 1"},
    {"members > max", mut_members_big, -EINVAL, "needs 3..32 members, got 33"},
    {"members 0", mut_members_zero, -EINVAL, "needs 3..32 members, got 0"},
    {"members < level minimum", mut_members_min, -EINVAL, "raid5 needs 3..32 members, got 2"},
    {"slot >= members", mut_slot, -EINVAL, "slot 4 out of range (the array has 4 members)"},
    {"chunk not power of two", mut_chunk_npot, -EINVAL, "chunk size 12288 is not a power of two"},
    {"chunk too small", mut_chunk_small, -EINVAL, "chunk size 2048 is not a power of two in"},
    {"chunk too big", mut_chunk_big, -EINVAL, "chunk size 134217728 is not"},
    {"data offset unaligned", mut_doff_align, -EINVAL, "data offset 524288 is not a non-zero"},
    {"data offset 0", mut_doff_zero, -EINVAL, "data offset 0 is not"},
    {"event 0", mut_events, -EINVAL, "event counter is 0"},
    {"dirty flag", mut_dirty, -EINVAL, "unknown clean/dirty flag 2"},
    {"array uuid", mut_auuid, -EINVAL, "array UUID is all zeros"},
    {"member uuid", mut_muuid, -EINVAL, "member UUID is all zeros"},
    {"name", mut_name, -EINVAL, "array name is not NUL-terminated"},
    {"bitmap region", mut_bitmap, -EINVAL, "write-intent bitmap region"},
    {"journal region", mut_journal, -EINVAL, "journal region"},
    {"unused slot entry", mut_unused_slot, -EINVAL, "slot table entry 5 is not empty"},
    {"slot state", mut_state, -EINVAL, "slot 0 has unknown state 9"},
    {"slot data size", mut_slot_size, -EINVAL, "data size 1000 of slot 0 is not a non-zero"},
    {"slot data size 0", mut_slot_size_zero, -EINVAL, "data size 0 of slot 3"},
    {"rebuild offset", mut_rebuild, -EINVAL, "rebuild offset 4259840 of slot 2 is beyond"},
    {"slot uuid", mut_slot_uuid, -EINVAL, "member UUID of slot 0 is all zeros"},
    {"member data size", mut_data_size, -EINVAL, "member data size 8388608 differs from slot 1"},
    {"member uuid vs slot", mut_member_uuid_mismatch, -EINVAL,
     "member UUID differs from the one recorded for slot 1"},
    {"array size", mut_array_size, -EINVAL, "array size 12648448 does not match the geometry"},
    {"bad-range count", mut_bad_count, -EINVAL, "bad-range count 65 exceeds the table's 64"},
    {"bad-range slot", mut_bad_slot, -EINVAL, "bad range 0 names slot 4 (the array has 4"},
    {"bad-range alignment", mut_bad_align, -EINVAL,
     "bad range 1 [1000, +4096) is empty or not 512-byte aligned"},
    {"bad-range empty", mut_bad_empty, -EINVAL, "bad range 0 [0, +0) is empty"},
    {"bad-range beyond slot", mut_bad_beyond, -EINVAL,
     "bad range 0 [4190208, +8192) ends beyond slot 1's data size 4194304"},
};

static void test_fields(void **state)
{
    const size_t n = sizeof(field_cases) / sizeof(field_cases[0]);
    char seen[sizeof(field_cases) / sizeof(field_cases[0])][256];
    for (size_t i = 0; i < n; i++) {
        const struct field_case *c = &field_cases[i];
        struct rk_sb sb, out;
        uint8_t buf[RK_SB_SIZE];
        char err[256] = "";
        golden_sb_v1(&sb);
        c->mutate(&sb);
        rk_sb_encode(&sb, buf);
        int r = rk_sb_decode(buf, &out, err, sizeof(err));
        if (r != c->rc || !strstr(err, c->msg))
            fail_msg("case '%s': rc %d, message '%s' (want %d, '%s')", c->what, r, err, c->rc,
                     c->msg);
        snprintf(seen[i], sizeof(seen[i]), "%s", err);
    }
    /* Every case has its own message. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (!strcmp(seen[i], seen[j]))
                fail_msg("cases '%s' and '%s' share a message: %s", field_cases[i].what,
                         field_cases[j].what, seen[i]);
}

static void reseal(uint8_t *buf)
{
    memset(buf + 16, 0, 4);
    rk_put_le32(buf + 16, rk_crc32c(buf, RK_SB_SIZE));
}

static void test_raw(void **state)
{
    uint8_t img[RK_SB_SIZE], buf[RK_SB_SIZE];
    struct rk_sb sb;
    char err[256];
    load_golden(img);

    memcpy(buf, img, RK_SB_SIZE);
    buf[3] ^= 0x20;
    reseal(buf);
    assert_int_equal(rk_sb_decode(buf, &sb, err, sizeof(err)), RK_SB_ENOTOURS);
    assert_non_null(strstr(err, "not a raidkit member"));
    memset(buf, 0, RK_SB_SIZE);
    assert_int_equal(rk_sb_decode(buf, &sb, err, sizeof(err)), RK_SB_ENOTOURS);

    memcpy(buf, img, RK_SB_SIZE);
    rk_put_le32(buf + 8, 2);
    reseal(buf);
    assert_int_equal(rk_sb_decode(buf, &sb, err, sizeof(err)), RK_SB_EVERSION);
    assert_non_null(strstr(err, "unsupported superblock version 2"));

    memcpy(buf, img, RK_SB_SIZE);
    rk_put_le32(buf + 12, 512);
    reseal(buf);
    assert_int_equal(rk_sb_decode(buf, &sb, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "bad superblock header size 512"));

    memcpy(buf, img, RK_SB_SIZE);
    buf[16] ^= 1; /* the crc itself */
    assert_int_equal(rk_sb_decode(buf, &sb, err, sizeof(err)), RK_SB_ECRC);
    assert_non_null(strstr(err, "superblock checksum mismatch"));

    /* Any single bit flip after the version/size words is caught (by crc or a field check). */
    for (size_t off = 16; off < RK_SB_SIZE; off++) {
        memcpy(buf, img, RK_SB_SIZE);
        buf[off] ^= (uint8_t)(1u << (off % 8));
        int r = rk_sb_decode(buf, &sb, err, sizeof(err));
        if (r != RK_SB_ECRC)
            fail_msg("bit flip at %zu: rc %d (%s)", off, r, err);
    }
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),  cmocka_unit_test(test_golden),
        cmocka_unit_test(test_bad_ranges), cmocka_unit_test(test_fields),
        cmocka_unit_test(test_raw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
