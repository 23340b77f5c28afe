/* rk_dev_map_extent (include/raidkit/device.h, the zero-copy read path of src/nbd/splice.c)
 * through the raid levels: one member extent when the whole range is on one readable slot,
 * -ENOTSUP when it crosses to another slot, when the slot is failed (raid1 answers from the
 * other copy) or when the member has no map_extent (in-memory devices), and -EINVAL for a
 * range a read would refuse. The members are in-memory devices behind a thin wrapper whose
 * map_extent answers with a fake fd (100 + its index) at the same offset. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "raidkit/raid.h"

#define CHUNK   (64 * 1024u)
#define DATA_SZ (4 * 1024 * 1024u)
#define DOFF    (1024 * 1024u)

struct wrap {
    struct rk_dev *mem;
    int fd;
};

static int w_read(struct rk_dev *d, void *buf, uint64_t len, uint64_t off)
{
    return rk_dev_read(((struct wrap *)d->priv)->mem, buf, len, off);
}

static int w_write(struct rk_dev *d, const void *buf, uint64_t len, uint64_t off, uint32_t fl)
{
    return rk_dev_write(((struct wrap *)d->priv)->mem, buf, len, off, fl);
}

static int w_map_extent(struct rk_dev *d, uint64_t off, uint64_t len, int *fd, uint64_t *foff)
{
    (void)len;
    *fd = ((struct wrap *)d->priv)->fd;
    *foff = off;
    return 0;
}

static const struct rk_dev_ops wrap_ops = {
    .kind = "wrap", .read = w_read, .write = w_write, .map_extent = w_map_extent};

static struct wrap wraps[4];

/* Open a raid of level over n members (wrapped unless plain: bare in-memory devices). */
static struct rk_dev *open_raid(int level, uint32_t n, bool plain, struct rk_dev **m)
{
    struct rk_raid_geom g = {.level = level, .members = n, .chunk = CHUNK, .data_offset = DOFF};
    for (uint32_t i = 0; i < n; i++) {
        g.data_size[i] = DATA_SZ;
        struct rk_dev *mem;
        assert_int_equal(rk_mem_open(DOFF + DATA_SZ, 4096, &mem), 0);
        if (plain) {
            m[i] = mem;
            continue;
        }
        wraps[i] = (struct wrap){.mem = mem, .fd = 100 + (int)i};
        m[i] = rk_dev_alloc(&wrap_ops, &wraps[i], "wrap");
        assert_non_null(m[i]);
        m[i]->size = mem->size;
        m[i]->block_size = 4096;
    }
    struct rk_dev *raid;
    assert_int_equal(rk_raid_open(&g, m, NULL, &raid), 0);
    return raid;
}

static void close_raid(struct rk_dev *raid, struct rk_dev **m, uint32_t n, bool plain)
{
    rk_dev_close(raid);
    for (uint32_t i = 0; i < n; i++) {
        if (!plain)
            rk_dev_close(wraps[i].mem);
        rk_dev_close(m[i]);
    }
}

static void test_raid0(void **state)
{
    (void)state;
    struct rk_dev *m[2];
    struct rk_dev *raid = open_raid(RK_LEVEL_RAID0, 2, false, m);
    int fd = -1;
    uint64_t off = 0;
    /* Chunk 1 is slot 1's first chunk. */
    assert_int_equal(rk_dev_map_extent(raid, CHUNK, CHUNK, &fd, &off), 0);
    assert_int_equal(fd, 101);
    assert_int_equal(off, DOFF);
    /* Chunks 0 and 1: two slots. */
    assert_int_equal(rk_dev_map_extent(raid, 0, 2 * CHUNK, &fd, &off), -ENOTSUP);
    assert_int_equal(rk_dev_map_extent(raid, 512, 4096, &fd, &off), -EINVAL);
    assert_int_equal(rk_dev_map_extent(raid, raid->size, 4096, &fd, &off), -EINVAL);
    close_raid(raid, m, 2, false);
}

static void test_raid1_failed_copy(void **state)
{
    (void)state;
    struct rk_dev *m[2];
    struct rk_dev *raid = open_raid(RK_LEVEL_RAID1, 2, false, m);
    int fd = -1;
    uint64_t off = 0;
    /* Any copy, across chunks (raid1 keeps the whole array contiguous on every slot). */
    assert_int_equal(rk_dev_map_extent(raid, CHUNK / 2, 4 * CHUNK, &fd, &off), 0);
    assert_true(fd == 100 || fd == 101);
    assert_int_equal(off, DOFF + CHUNK / 2);
    assert_int_equal(rk_raid_fail_slot(raid, 0), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rk_dev_map_extent(raid, 0, CHUNK, &fd, &off), 0);
        assert_int_equal(fd, 101);
    }
    close_raid(raid, m, 2, false);
}

static void test_raid5(void **state)
{
    (void)state;
    struct rk_dev *m[3];
    struct rk_dev *raid = open_raid(RK_LEVEL_RAID5, 3, false, m);
    int fd = -1, fd2 = -1;
    uint64_t off = 0;
    assert_int_equal(rk_dev_map_extent(raid, 0, CHUNK, &fd, &off), 0);
    assert_int_equal(rk_dev_map_extent(raid, CHUNK, CHUNK, &fd2, &off), 0);
    assert_int_not_equal(fd, fd2); /* two data chunks of a stripe, two members */
    assert_int_equal(rk_dev_map_extent(raid, CHUNK / 2, CHUNK, &fd, &off), -ENOTSUP);
    /* A failed data slot: its chunks take the degraded read, the others still map. */
    assert_int_equal(rk_raid_fail_slot(raid, (uint32_t)(fd2 - 100)), 0);
    assert_int_equal(rk_dev_map_extent(raid, CHUNK, CHUNK, &fd, &off), -ENOTSUP);
    assert_int_equal(rk_dev_map_extent(raid, 0, CHUNK, &fd, &off), 0);
    close_raid(raid, m, 3, false);
}

static void test_plain_members(void **state)
{
    (void)state;
    struct rk_dev *m[1];
    struct rk_dev *raid = open_raid(RK_LEVEL_LINEAR, 1, true, m);
    int fd;
    uint64_t off;
    assert_int_equal(rk_dev_map_extent(raid, 0, CHUNK, &fd, &off), -ENOTSUP);
    assert_int_equal(rk_dev_map_extent(m[0], 0, 4096, &fd, &off), -ENOTSUP);
    close_raid(raid, m, 1, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raid0),
        cmocka_unit_test(test_raid1_failed_copy),
        cmocka_unit_test(test_raid5),
        cmocka_unit_test(test_plain_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
