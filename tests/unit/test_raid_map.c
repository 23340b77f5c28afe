/* Tests of the pure RAID layout functions: every level's chunk -> (slot, offset) mapping against
 * an independent reference that enumerates the layout chunk by chunk, plus the C02 golden map. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raidkit/raid.h"
#include "rk_test.h"

/* Reference layout: for each array chunk, its copies, filled by walking the layout's definition
 * (docs/FORMAT.md) one chunk at a time rather than by formula. */
#define REF_MAX_CHUNKS 1024
struct ref_layout {
    uint64_t nchunks;
    int ncopies;
    uint32_t slot[REF_MAX_CHUNKS][RK_MAX_MEMBERS];
    uint64_t off[REF_MAX_CHUNKS][RK_MAX_MEMBERS];
};

static void ref_build(const struct rk_raid_geom *g, struct ref_layout *ref)
{
    uint64_t ch = g->chunk, n = g->members, maxsz = 0, minsz = UINT64_MAX;
    memset(ref, 0, sizeof(*ref));
    for (uint32_t i = 0; i < n; i++) {
        maxsz = g->data_size[i] > maxsz ? g->data_size[i] : maxsz;
        minsz = g->data_size[i] < minsz ? g->data_size[i] : minsz;
    }
    switch (g->level) {
    case RK_LEVEL_LINEAR:
        ref->ncopies = 1;
        for (uint32_t s = 0; s < n; s++)
            for (uint64_t o = 0; o < g->data_size[s]; o += ch) {
                ref->slot[ref->nchunks][0] = s;
                ref->off[ref->nchunks++][0] = o;
            }
        break;
    case RK_LEVEL_RAID0:
        /* Row by row over the member offsets: each row takes the members still large enough. */
        ref->ncopies = 1;
        for (uint64_t o = 0; o < maxsz; o += ch)
            for (uint32_t s = 0; s < n; s++)
                if (g->data_size[s] > o) {
                    ref->slot[ref->nchunks][0] = s;
                    ref->off[ref->nchunks++][0] = o;
                }
        break;
    case RK_LEVEL_RAID1:
        ref->ncopies = (int)n;
        for (uint64_t o = 0; o < minsz; o += ch, ref->nchunks++)
            for (uint32_t s = 0; s < n; s++) {
                ref->slot[ref->nchunks][s] = s;
                ref->off[ref->nchunks][s] = o;
            }
        break;
    case RK_LEVEL_RAID10: {
        /* Walk positions; a chunk exists only when both of its positions fit in the rows. */
        ref->ncopies = 2;
        uint64_t rows = minsz / ch, p = 0;
        for (;;) {
            if ((p + 1) / n >= rows)
                break;
            for (int k = 0; k < 2; k++, p++) {
                ref->slot[ref->nchunks][k] = (uint32_t)(p % n);
                ref->off[ref->nchunks][k] = (p / n) * ch;
            }
            ref->nchunks++;
        }
        break;
    }
    case RK_LEVEL_RAID5:
    case RK_LEVEL_RAID6: {
        /* md's inverse map (compute_blocknr, ALGORITHM_LEFT_SYMMETRIC): walk every slot of every
         * stripe row and derive which data chunk of the stripe it holds. */
        uint64_t np = g->level == RK_LEVEL_RAID6 ? 2 : 1, nd = n - np, rows = minsz / ch;
        ref->ncopies = 1;
        for (uint64_t row = 0; row < rows; row++) {
            uint64_t pd = n - 1 - row % n, qd = (pd + 1) % n;
            for (uint32_t i = 0; i < n; i++) {
                if (i == pd || (np == 2 && i == qd))
                    continue;
                uint64_t d;
                if (np == 2 && pd == n - 1)
                    d = i - 1; /* Q wrapped to slot 0: data starts at slot 1 */
                else
                    d = (i < pd ? i + n : i) - (pd + np);
                assert_true(d < nd);
                ref->slot[row * nd + d][0] = i;
                ref->off[row * nd + d][0] = row * ch;
            }
            ref->nchunks += nd;
        }
        break;
    }
    default:
        fail();
    }
    assert_true(ref->nchunks <= REF_MAX_CHUNKS);
}

/* Expected run from off: linear runs to the end of the slot, the others to the chunk end. */
static uint64_t ref_run(const struct rk_raid_geom *g, const struct ref_layout *ref, uint64_t off)
{
    uint64_t ch = g->chunk, c = off / ch;
    if (g->level != RK_LEVEL_LINEAR)
        return ch - off % ch;
    uint64_t end = c + 1;
    while (end < ref->nchunks && ref->slot[end][0] == ref->slot[c][0])
        end++;
    return end * ch - off;
}

static void check_offset(const struct rk_raid_geom *g, const struct ref_layout *ref, uint64_t off)
{
    struct rk_raid_extent ext[RK_MAX_MEMBERS];
    uint64_t run = 0, c = off / g->chunk;
    int n = rk_raid_map(g, off, ext, RK_MAX_MEMBERS, &run);
    assert_int_equal(n, ref->ncopies);
    for (int k = 0; k < n; k++) {
        assert_int_equal(ext[k].slot, ref->slot[c][k]);
        assert_int_equal(ext[k].member_off, ref->off[c][k] + off % g->chunk);
    }
    assert_int_equal(run, ref_run(g, ref, off));
}

static struct ref_layout ref_storage;

static void check_geom(const struct rk_raid_geom *g, unsigned *seed)
{
    struct ref_layout *ref = &ref_storage;
    char err[200];
    assert_int_equal(rk_raid_geom_check(g, err, sizeof(err)), 0);
    ref_build(g, ref);
    uint64_t size = rk_raid_array_size(g);
    assert_int_equal(size, ref->nchunks * g->chunk);
    for (uint64_t c = 0; c < ref->nchunks; c++)
        check_offset(g, ref, c * g->chunk);
    for (int i = 0; i < 64; i++) {
        uint64_t off = ((uint64_t)rand_r(seed) << 31 ^ (uint64_t)rand_r(seed)) % size;
        check_offset(g, ref, off & ~511ull);
        check_offset(g, ref, off);
    }
    struct rk_raid_extent ext[RK_MAX_MEMBERS];
    uint64_t run;
    assert_int_equal(rk_raid_map(g, size, ext, RK_MAX_MEMBERS, &run), -EINVAL);
    /* max limits what is filled, not the count returned. */
    ext[1].slot = 99;
    assert_int_equal(rk_raid_map(g, 0, ext, 1, &run), ref->ncopies);
    assert_int_equal(ext[1].slot, 99);
}

static void test_all_layouts(void **state)
{
    static const int levels[] = {RK_LEVEL_LINEAR, RK_LEVEL_RAID0, RK_LEVEL_RAID1,
                                 RK_LEVEL_RAID10, RK_LEVEL_RAID5, RK_LEVEL_RAID6};
    static const uint32_t chunks[] = {4 * KiB, 64 * KiB, 1 * MiB};
    unsigned seed = 12345;
    int configs = 0;
    for (size_t li = 0; li < sizeof(levels) / sizeof(levels[0]); li++) {
        for (uint32_t n = 1; n <= 8; n++) {
            if ((int)n < rk_level_min_members(levels[li]))
                continue;
            for (size_t ci = 0; ci < 3; ci++) {
                for (int unequal = 0; unequal < 2; unequal++) {
                    struct rk_raid_geom g = {.level = levels[li],
                                             .members = n,
                                             .chunk = chunks[ci],
                                             .data_offset = 1 * MiB};
                    for (uint32_t i = 0; i < n; i++) {
                        uint64_t k = unequal ? 1 + (uint64_t)(rand_r(&seed) % 9) : 5;
                        g.data_size[i] = k * chunks[ci];
                    }
                    check_geom(&g, &seed);
                    configs++;
                }
            }
        }
    }
    assert_true(configs > 100);
}

/* Sizes of the documented examples (docs/FORMAT.md). */
static void test_sizes(void **state)
{
    struct rk_raid_geom g = {.level = RK_LEVEL_RAID0,
                             .members = 4,
                             .chunk = 64 * KiB,
                             .data_size = {1 * MiB, 1 * MiB, 2 * MiB, 2 * MiB}};
    assert_int_equal(rk_raid_array_size(&g), 6 * MiB);
    g.level = RK_LEVEL_LINEAR;
    assert_int_equal(rk_raid_array_size(&g), 6 * MiB);
    g.level = RK_LEVEL_RAID1;
    assert_int_equal(rk_raid_array_size(&g), 1 * MiB);
    g.level = RK_LEVEL_RAID10;
    assert_int_equal(rk_raid_array_size(&g), 2 * MiB);
    g.members = 3; /* floor(1 MiB * 3 / 2 / 64K) = 24 chunks */
    assert_int_equal(rk_raid_array_size(&g), 24 * 64 * KiB);
    g.data_size[0] = g.data_size[1] = g.data_size[2] = 64 * KiB;
    assert_int_equal(rk_raid_array_size(&g), 64 * KiB);
    g.level = RK_LEVEL_RAID5;
    assert_int_equal(rk_raid_array_size(&g), 128 * KiB);
    g.level = RK_LEVEL_RAID6;
    g.members = 5;
    g.data_size[3] = 64 * KiB;
    g.data_size[4] = 128 * KiB; /* the smallest member decides: 3 * 64K */
    assert_int_equal(rk_raid_array_size(&g), 192 * KiB);
}

/* The documented raid5/raid6 examples (docs/FORMAT.md): stripe by stripe, which slot holds
 * which data chunk, written out by hand. */
static void test_parity_layout_examples(void **state)
{
    /* raid5, 3 members: D0 m0, D1 m1, P m2 | D2 m2, D3 m0, P m1 | D4 m1, D5 m2, P m0 | D6 m0 */
    static const uint32_t r5[] = {0, 1, 2, 0, 1, 2, 0, 1};
    /* raid6, 4 members: stripe 0: P m3, Q m0, D0 m1, D1 m2; stripe 1: P m2, Q m3, D2 m0, D3 m1;
     * stripe 2: P m1, Q m2, D4 m3, D5 m0; stripe 3: P m0, Q m1, D6 m2, D7 m3 */
    static const uint32_t r6[] = {1, 2, 0, 1, 3, 0, 2, 3, 1, 2};
    struct rk_raid_geom g = {.level = RK_LEVEL_RAID5,
                             .members = 3,
                             .chunk = 4 * KiB,
                             .data_size = {64 * KiB, 64 * KiB, 64 * KiB, 64 * KiB}};
    struct rk_raid_extent e;
    uint64_t run;
    for (uint64_t c = 0; c < sizeof(r5) / sizeof(r5[0]); c++) {
        assert_int_equal(rk_raid_map(&g, c * 4 * KiB + 512, &e, 1, &run), 1);
        assert_int_equal(e.slot, r5[c]);
        assert_int_equal(e.member_off, c / 2 * 4 * KiB + 512);
        assert_int_equal(run, 4 * KiB - 512);
    }
    g.level = RK_LEVEL_RAID6;
    g.members = 4;
    for (uint64_t c = 0; c < sizeof(r6) / sizeof(r6[0]); c++) {
        assert_int_equal(rk_raid_map(&g, c * 4 * KiB, &e, 1, &run), 1);
        assert_int_equal(e.slot, r6[c]);
        assert_int_equal(e.member_off, c / 2 * 4 * KiB);
    }
}

static void test_geom_check(void **state)
{
    char err[200];
    struct rk_raid_geom ok = {
        .level = RK_LEVEL_RAID1, .members = 2, .chunk = 64 * KiB, .data_size = {1 * MiB, 1 * MiB}};
    struct rk_raid_geom g = ok;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), 0);
    g.members = 1;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), -EINVAL);
    assert_true(strlen(err) > 0);
    assert_int_equal(rk_raid_array_size(&g), 0);
    g = ok;
    g.members = RK_MAX_MEMBERS + 1;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), -EINVAL);
    g = ok;
    g.level = 7;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), -EINVAL);
    g = ok;
    g.chunk = 2048;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), -EINVAL);
    g.chunk = 96 * KiB;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), -EINVAL);
    g.chunk = 128 * MiB;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), -EINVAL);
    g = ok;
    g.data_size[1] = 1 * MiB + 4096;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), -EINVAL);
    g.data_size[1] = 0;
    assert_int_equal(rk_raid_geom_check(&g, NULL, 0), -EINVAL);
    g = ok;
    g.level = RK_LEVEL_RAID6;
    g.members = 3;
    g.data_size[2] = 1 * MiB;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), -EINVAL);
    g.members = 4;
    g.data_size[3] = 1 * MiB;
    assert_int_equal(rk_raid_geom_check(&g, err, sizeof(err)), 0);
    assert_int_equal(rk_raid_geom_check(NULL, err, sizeof(err)), -EINVAL);
}

static void test_level_names(void **state)
{
    static const struct {
        const char *s;
        int level;
    } cases[] = {{"linear", RK_LEVEL_LINEAR}, {"0", RK_LEVEL_RAID0},     {"raid0", RK_LEVEL_RAID0},
                 {"1", RK_LEVEL_RAID1},       {"raid1", RK_LEVEL_RAID1}, {"10", RK_LEVEL_RAID10},
                 {"raid10", RK_LEVEL_RAID10}, {"5", RK_LEVEL_RAID5},     {"raid5", RK_LEVEL_RAID5},
                 {"6", RK_LEVEL_RAID6},       {"raid6", RK_LEVEL_RAID6}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int level = 99;
        assert_int_equal(rk_level_parse(cases[i].s, &level), 0);
        assert_int_equal(level, cases[i].level);
        int back = 99;
        assert_int_equal(rk_level_parse(rk_level_name(level), &back), 0);
        assert_int_equal(back, level);
    }
    int level;
    assert_int_equal(rk_level_parse("raid4", &level), -EINVAL);
    assert_int_equal(rk_level_parse("", &level), -EINVAL);
    assert_int_equal(rk_level_parse("RAID1x", &level), -EINVAL);
    assert_string_equal(rk_level_name(42), "unknown");
    assert_int_equal(rk_level_min_members(RK_LEVEL_LINEAR), 1);
    assert_int_equal(rk_level_min_members(RK_LEVEL_RAID0), 1);
    assert_int_equal(rk_level_min_members(RK_LEVEL_RAID1), 2);
    assert_int_equal(rk_level_min_members(RK_LEVEL_RAID10), 2);
    assert_int_equal(rk_level_min_members(RK_LEVEL_RAID5), 3);
    assert_int_equal(rk_level_min_members(RK_LEVEL_RAID6), 4);
    assert_int_equal(rk_level_min_members(3), -EINVAL);
    assert_int_equal(rk_level_max_failed(RK_LEVEL_LINEAR, 4), 0);
    assert_int_equal(rk_level_max_failed(RK_LEVEL_RAID0, 4), 0);
    assert_int_equal(rk_level_max_failed(RK_LEVEL_RAID1, 3), 2);
    assert_int_equal(rk_level_max_failed(RK_LEVEL_RAID10, 4), 1);
    assert_int_equal(rk_level_max_failed(RK_LEVEL_RAID5, 4), 1);
    assert_int_equal(rk_level_max_failed(RK_LEVEL_RAID6, 5), 2);
    assert_int_equal(rk_level_max_failed(3, 5), -EINVAL);
}

/* Case C02: the raid0 layout over unequal members is pinned by a committed golden table. */
static void test_C02_unequal_members(void **state)
{
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/golden/raid0_C02_map.txt", src ? src : ".");
    FILE *f = fopen(path, "r");
    if (!f) {
        print_error("cannot open %s (set RAIDKIT_SOURCE_DIR)\n", path);
        fail();
    }
    struct rk_raid_geom g = {.level = RK_LEVEL_RAID0,
                             .members = 4,
                             .chunk = 64 * KiB,
                             .data_offset = 64 * KiB,
                             .data_size = {1 * MiB, 1 * MiB, 2 * MiB, 2 * MiB}};
    char line[256];
    uint64_t size = 0, expect_off = 0;
    int rows = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long a, o;
        unsigned s;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "size %llu", &a) == 1) {
            size = a;
            continue;
        }
        assert_int_equal(sscanf(line, "%llu %u %llu", &a, &s, &o), 3);
        assert_int_equal(a, expect_off);
        struct rk_raid_extent ext;
        uint64_t run;
        assert_int_equal(rk_raid_map(&g, a, &ext, 1, &run), 1);
        assert_int_equal(ext.slot, s);
        assert_int_equal(ext.member_off, o);
        assert_int_equal(run, 64 * KiB);
        expect_off += 64 * KiB;
        rows++;
    }
    fclose(f);
    assert_int_equal(size, 6 * MiB);
    assert_int_equal(rk_raid_array_size(&g), size);
    assert_int_equal(rows, 96);
    assert_int_equal(expect_off, size);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_layouts),         cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_geom_check),          cmocka_unit_test(test_level_names),
        cmocka_unit_test(test_C02_unequal_members), cmocka_unit_test(test_parity_layout_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
