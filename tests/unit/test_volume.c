/* Volumes: create refusals leave members untouched, assembly in any order, foreign / stale /
 * missing members, a failing raid1 member persisted in the survivor's superblock, clean close. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "meta/superblock.h"
#include "raidkit/volume.h"

#define MIB (1024u * 1024u)

static char tmpdir[64];

static int setup(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/rk-volume-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Path of a file in the test directory (static ring of buffers: several live at once). */
static const char *tpath(const char *name)
{
    static char bufs[16][256];
    static int next;
    char *b = bufs[next++ % 16];
    snprintf(b, 256, "%s/%s", tmpdir, name);
    return b;
}

/* A file of size bytes whose first 128 KiB hold a fixed pseudo-random pattern (seed) that
 * carries no signature. */
static void mkfile(const char *path, uint64_t size, uint32_t seed)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)size), 0);
    uint8_t buf[128 * 1024];
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < sizeof(buf); i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    buf[510] = 0; /* no MBR signature by chance */
    size_t len = size < sizeof(buf) ? (size_t)size : sizeof(buf);
    assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
    close(fd);
}

static void poke(const char *path, off_t off, const void *data, size_t len)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, data, len, off), (ssize_t)len);
    close(fd);
}

/* Whole file content (malloc'ed) and its size. */
static uint8_t *slurp(const char *path, size_t *len)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        *len = (size_t)-1;
        return NULL;
    }
    uint8_t *p = malloc((size_t)st.st_size + 1);
    assert_non_null(p);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return p;
}

static void read_sb(const char *path, struct rk_sb *sb)
{
    uint8_t buf[RK_SB_SIZE];
    char err[256] = "";
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
    close(fd);
    if (rk_sb_decode(buf, sb, err, sizeof(err)) != 0)
        fail_msg("%s: %s", path, err);
}

static void write_sb(const char *path, const struct rk_sb *sb)
{
    uint8_t buf[RK_SB_SIZE];
    rk_sb_encode(sb, buf);
    poke(path, 0, buf, sizeof(buf));
}

static void uuid_str(const char *path, char *out)
{
    struct rk_sb sb;
    read_sb(path, &sb);
    rk_uuid_format(sb.array_uuid, out);
}

static void create_wh(const char *const *paths, int n, int level, uint64_t size, int write_hole)
{
    struct rk_create_opts o = {
        .level = level, .chunk = 4096, .name = "t", .size = size, .write_hole = write_hole};
    char err[256] = "";
    int r = rk_volume_create(paths, n, &o, err, sizeof(err));
    if (r)
        fail_msg("create: %d %s", r, err);
}

static void create_ok(const char *const *paths, int n, int level, uint64_t size)
{
    create_wh(paths, n, level, size, RK_WRITE_HOLE_DEFAULT);
}

/* ---- create ---- */

struct snap {
    const char *path;
    uint8_t *data;
    size_t len;
};

static void snap_take(struct snap *s, int n, const char *const *paths)
{
    for (int i = 0; i < n; i++) {
        s[i].path = paths[i];
        s[i].data = slurp(paths[i], &s[i].len);
    }
}

static void snap_check(const struct snap *s, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        size_t len;
        uint8_t *d = slurp(s[i].path, &len);
        if (len != s[i].len || (d && memcmp(d, s[i].data, len) != 0))
            fail_msg("%s: member %s changed", what, s[i].path);
        free(d);
    }
}

static void snap_free(struct snap *s, int n)
{
    for (int i = 0; i < n; i++)
        free(s[i].data);
}

struct refusal {
    const char *what;
    int level;
    uint32_t chunk;
    const char *name;
    uint64_t size;
    int n;
    const char *members[4];
    int rc;
    const char *msg;
};

static void test_create_refusals(void **state)
{
    const char *a = tpath("a.img"), *b = tpath("b.img"), *c = tpath("c.img");
    const char *small = tpath("small.img"), *ext = tpath("ext4.img"), *xfs = tpath("xfs.img");
    const char *btr = tpath("btrfs.img"), *mbr = tpath("mbr.img"), *luks = tpath("luks.img");
    const char *old = tpath("old.img"), *old2 = tpath("old2.img"), *alink = tpath("a-link.img");
    const char *dir = tpath("dir"), *nope = tpath("nope.img"), *fresh = tpath("fresh.img");
    char fresh2[300];
    snprintf(fresh2, sizeof(fresh2), "%s/dir/../fresh.img", tmpdir);
    mkfile(a, 2 * MIB, 1);
    mkfile(b, 2 * MIB, 2);
    mkfile(c, 2 * MIB, 3);
    mkfile(small, MIB + 2048, 4);
    mkfile(ext, 2 * MIB, 5);
    poke(ext, 1080, "\x53\xef", 2);
    mkfile(xfs, 2 * MIB, 6);
    poke(xfs, 0, "XFSB", 4);
    mkfile(btr, 2 * MIB, 7);
    poke(btr, 65600, "_BHRfS_M", 8);
    mkfile(mbr, 2 * MIB, 8);
    poke(mbr, 510, "\x55\xaa", 2);
    mkfile(luks, 2 * MIB, 9);
    poke(luks, 0, "LUKS\xba\xbe", 6);
    mkfile(old, 2 * MIB, 10);
    mkfile(old2, 2 * MIB, 11);
    const char *olds[] = {old, old2};
    create_ok(olds, 2, RK_LEVEL_RAID1, 0);
    assert_int_equal(link(a, alink), 0);
    assert_int_equal(mkdir(dir, 0755), 0);

    const struct refusal cases[] = {
        {"unknown level", 7, 0, NULL, 0, 2, {a, b}, -EINVAL, "unknown RAID level 7"},
        {"bad chunk", RK_LEVEL_RAID0, 3000, NULL, 0, 2, {a, b}, -EINVAL, "chunk size 3000"},
        {"chunk too big", RK_LEVEL_RAID0, 128 * MIB, NULL, 0, 2, {a, b}, -EINVAL, "chunk size"},
        {"too few members",
         RK_LEVEL_RAID5,
         0,
         NULL,
         0,
         2,
         {a, b},
         -EINVAL,
         "raid5 needs 3..32 members, got 2"},
        {"too few raid1", RK_LEVEL_RAID1, 0, NULL, 0, 1, {a}, -EINVAL, "raid1 needs 2"},
        {"name too long",
         RK_LEVEL_RAID1,
         0,
         "0123456789012345678901234567890123",
         0,
         2,
         {a, b},
         -EINVAL,
         "longer than 31"},
        {"member too small",
         RK_LEVEL_RAID1,
         4096,
         NULL,
         0,
         2,
         {a, small},
         -ENOSPC,
         "small.img is too small"},
        {"missing member",
         RK_LEVEL_RAID1,
         0,
         NULL,
         0,
         2,
         {a, nope},
         -ENOENT,
         "nope.img does not exist"},
        {"directory", RK_LEVEL_RAID1, 0, NULL, 0, 2, {a, dir}, -EISDIR, "dir is a directory"},
        {"existing superblock",
         RK_LEVEL_RAID1,
         0,
         NULL,
         0,
         2,
         {a, old},
         -EEXIST,
         "old.img already holds a raidkit superblock"},
        {"ext4",
         RK_LEVEL_RAID1,
         0,
         NULL,
         0,
         2,
         {ext, a},
         -EEXIST,
         "ext4.img already holds an ext"}, /* libblkid: ext4dev; without it: ext2/3/4 */
        {"xfs", RK_LEVEL_RAID1, 0, NULL, 0, 2, {a, xfs}, -EEXIST, "XFS"},
        {"btrfs", RK_LEVEL_RAID1, 0, NULL, 0, 2, {a, btr}, -EEXIST, "btrfs"},
        {"mbr", RK_LEVEL_RAID1, 0, NULL, 0, 2, {a, mbr}, -EEXIST, "0x55AA"},
        {"luks", RK_LEVEL_RAID1, 0, NULL, 0, 2, {luks, a}, -EEXIST, "LUKS"},
        {"duplicate path",
         RK_LEVEL_RAID1,
         0,
         NULL,
         0,
         3,
         {a, b, a},
         -EINVAL,
         "a.img is given twice"},
        {"duplicate inode",
         RK_LEVEL_RAID1,
         0,
         NULL,
         0,
         2,
         {a, alink},
         -EINVAL,
         "a-link.img is given twice"},
        {"duplicate new file",
         RK_LEVEL_RAID1,
         0,
         NULL,
         2 * MIB,
         2,
         {fresh, fresh2},
         -EINVAL,
         "is given twice"},
        /* With a size, fresh.img would be created: the later bad member stops it. */
        {"create stopped",
         RK_LEVEL_RAID1,
         0,
         NULL,
         2 * MIB,
         3,
         {fresh, a, ext},
         -EEXIST,
         "ext4.img"},
    };
    const char *all[] = {a, b, c, small, ext, xfs, btr, mbr, luks, old, old2};
    const int nall = (int)(sizeof(all) / sizeof(all[0]));
    struct snap snaps[sizeof(all) / sizeof(all[0])];
    snap_take(snaps, nall, all);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct refusal *t = &cases[i];
        struct rk_create_opts o = {
            .level = t->level, .chunk = t->chunk, .name = t->name, .size = t->size};
        char err[512] = "";
        int r = rk_volume_create(t->members, t->n, &o, err, sizeof(err));
        if (r != t->rc || !strstr(err, t->msg))
            fail_msg("case '%s': rc %d '%s' (want %d '%s')", t->what, r, err, t->rc, t->msg);
        if (strchr(err, '\n'))
            fail_msg("case '%s': message is not one line", t->what);
        snap_check(snaps, nall, t->what);
        assert_int_equal(access(fresh, F_OK), -1);
        assert_int_equal(access(nope, F_OK), -1);
    }
    /* Unreadable: permissions do not stop root, so only check as a normal user. */
    if (geteuid() != 0) {
        assert_int_equal(chmod(c, 0), 0);
        const char *m[] = {a, c};
        struct rk_create_opts o = {.level = RK_LEVEL_RAID1};
        char err[512] = "";
        assert_int_equal(rk_volume_create(m, 2, &o, err, sizeof(err)), -EACCES);
        assert_non_null(strstr(err, "c.img is not readable and writable"));
        assert_int_equal(chmod(c, 0644), 0);
    }
    snap_check(snaps, nall, "after all refusals");
    snap_free(snaps, nall);

    /* force overwrites a file system and an old array; size creates a missing member. */
    const char *m[] = {ext, old, fresh};
    struct rk_create_opts o = {
        .level = RK_LEVEL_RAID5, .chunk = 65536, .name = "forced", .size = 3 * MIB, .force = true};
    char err[512] = "";
    assert_int_equal(rk_volume_create(m, 3, &o, err, sizeof(err)), 0);
    struct rk_sb sb0, sb2;
    read_sb(ext, &sb0);
    read_sb(fresh, &sb2);
    assert_int_equal(sb0.level, RK_LEVEL_RAID5);
    assert_int_equal(sb0.events, 1);
    assert_int_equal(sb0.dirty, RK_SB_CLEAN);
    assert_int_equal(sb0.slot, 0);
    assert_int_equal(sb2.slot, 2);
    assert_string_equal(sb0.name, "forced");
    assert_int_equal(sb0.data_size, 2 * MIB);
    assert_int_equal(sb0.array_size, 4 * MIB);
    assert_memory_equal(sb0.array_uuid, sb2.array_uuid, RK_UUID_LEN);
    assert_memory_not_equal(sb0.member_uuid, sb2.member_uuid, RK_UUID_LEN);
    uint8_t w[2];
    int fd = open(ext, O_RDONLY);
    assert_int_equal(pread(fd, w, 2, 1080), 2);
    close(fd);
    assert_false(w[0] == 0x53 && w[1] == 0xef); /* the old signature is gone */
}

/* ---- assembly ---- */

static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed;
    for (size_t i = 0; i < len; i++) {
        x = x * 1664525u + 1013904223u;
        buf[i] = (uint8_t)(x >> 24);
    }
}

static struct rk_volume *open_ok(const char *const *paths, int n, const struct rk_open_opts *o)
{
    struct rk_volume *v = NULL;
    char err[512] = "";
    int r = rk_volume_open(paths, n, o, &v, err, sizeof(err));
    if (r)
        fail_msg("open: %d %s", r, err);
    return v;
}

static void test_shuffled(void **state)
{
    const char *p[4] = {tpath("s0.img"), tpath("s1.img"), tpath("s2.img"), tpath("s3.img")};
    create_ok(p, 4, RK_LEVEL_RAID0, 2 * MIB);
    const size_t len = 256 * 1024;
    uint8_t *wbuf = rk_buf_alloc(len), *rbuf = rk_buf_alloc(len);
    assert_non_null(wbuf);
    assert_non_null(rbuf);
    fill(wbuf, len, 42);

    struct rk_volume *v = open_ok(p, 4, NULL);
    struct rk_dev *d = rk_volume_dev(v);
    assert_int_equal(d->size, 4 * MIB);
    assert_int_equal(rk_dev_write(d, wbuf, len, 512 * 1024, 0), 0);
    assert_int_equal(rk_volume_close(v), 0);

    static const int orders[][4] = {{2, 0, 3, 1}, {3, 2, 1, 0}, {1, 3, 0, 2}};
    for (size_t k = 0; k < 3; k++) {
        const char *q[4];
        for (int i = 0; i < 4; i++)
            q[i] = p[orders[k][i]];
        v = open_ok(q, 4, NULL);
        d = rk_volume_dev(v);
        assert_int_equal(d->size, 4 * MIB);
        memset(rbuf, 0, len);
        assert_int_equal(rk_dev_read(d, rbuf, len, 512 * 1024), 0);
        assert_memory_equal(rbuf, wbuf, len);
        char *js = rk_volume_status_json(v);
        assert_non_null(js);
        /* Slot 0 is s0.img whatever the order given. */
        char *slot0 = strstr(js, "\"slot\":\t0");
        assert_non_null(slot0);
        assert_non_null(strstr(slot0, "s0.img"));
        assert_true(strstr(slot0, "s0.img") < strstr(slot0, "s1.img"));
        free(js);
        assert_int_equal(rk_volume_close(v), 0);
    }
    free(wbuf);
    free(rbuf);
}

static void test_foreign(void **state)
{
    const char *a[2] = {tpath("fa0.img"), tpath("fa1.img")};
    const char *b[2] = {tpath("fb0.img"), tpath("fb1.img")};
    create_ok(a, 2, RK_LEVEL_RAID1, 2 * MIB);
    create_ok(b, 2, RK_LEVEL_RAID1, 2 * MIB);
    char ua[RK_UUID_STR_LEN], ub[RK_UUID_STR_LEN];
    uuid_str(a[0], ua);
    uuid_str(b[0], ub);
    const char *mix[3] = {a[0], b[1], a[1]};
    struct rk_volume *v = NULL;
    char err[512] = "";
    assert_int_equal(rk_volume_open(mix, 3, NULL, &v, err, sizeof(err)), -EXDEV);
    assert_null(v);
    assert_non_null(strstr(err, b[1]));
    assert_non_null(strstr(err, ua));
    assert_non_null(strstr(err, ub));

    /* A corrupt member is named with the reason. */
    const char *junk = tpath("junk.img");
    mkfile(junk, 2 * MIB, 99);
    const char *withjunk[2] = {a[0], junk};
    assert_int_equal(rk_volume_open(withjunk, 2, NULL, &v, err, sizeof(err)), -ENODEV);
    assert_non_null(strstr(err, "junk.img is not a raidkit member"));
    assert_non_null(strstr(err, "slot 1"));

    /* info describes all of it without failing. */
    const char *all[4] = {a[0], a[1], b[0], junk};
    char *text = rk_volume_info(all, 4, false, err, sizeof(err));
    assert_non_null(text);
    assert_non_null(strstr(text, "junk.img: not a raidkit member"));
    assert_non_null(strstr(text, ub));
    assert_non_null(strstr(text, "foreign"));
    assert_non_null(strstr(text, "level:        raid1, 2 members"));
    free(text);
    text = rk_volume_info(all, 4, true, err, sizeof(err));
    assert_non_null(text);
    assert_non_null(strstr(text, "\"status\":\t\"not-raidkit\""));
    assert_non_null(strstr(text, "\"problems\":\t["));
    free(text);
}

static void test_stale_and_missing(void **state)
{
    const char *p[2] = {tpath("m0.img"), tpath("m1.img")};
    create_ok(p, 2, RK_LEVEL_RAID1, 2 * MIB);
    size_t oldlen;
    uint8_t *old1 = slurp(p[1], &oldlen); /* m1 as of event 1 */
    struct rk_volume *v = open_ok(p, 2, NULL);
    assert_int_equal(rk_volume_close(v), 0);
    struct rk_sb sb;
    read_sb(p[0], &sb);
    assert_int_equal(sb.events, 3); /* create, dirty, clean */
    assert_int_equal(sb.dirty, RK_SB_CLEAN);
    poke(p[1], 0, old1, RK_SB_SIZE); /* m1 goes back to event 1: stale */
    free(old1);

    char err[512] = "";
    assert_int_equal(rk_volume_open(p, 2, NULL, &v, err, sizeof(err)), -ENODEV);
    if (!strstr(err, "slot 1")) /* seen once under ASan at load: keep the message for a diagnosis */
        print_message("stale open refused with: %s\n", err);
    assert_non_null(strstr(err, "slot 1"));
    assert_non_null(strstr(err, "m1.img is stale"));
    assert_non_null(strstr(err, "--degraded"));

    /* Missing entirely: refused the same way without --degraded. */
    const char *only0[1] = {p[0]};
    assert_int_equal(rk_volume_open(only0, 1, NULL, &v, err, sizeof(err)), -ENODEV);
    assert_non_null(strstr(err, "slot 1"));

    /* With --degraded: the stale member is ignored, slot 1 marked failed in m0. */
    struct rk_open_opts o = {.degraded = true};
    v = open_ok(p, 2, &o);
    char *js = rk_volume_status_json(v);
    assert_non_null(strstr(js, "\"degraded\":\ttrue"));
    free(js);
    read_sb(p[0], &sb);
    assert_int_equal(sb.slots[1].state, RK_SLOT_FAILED);
    assert_int_equal(sb.events, 5); /* failed + dirty */
    assert_int_equal(rk_volume_close(v), 0);
    read_sb(p[0], &sb);
    assert_int_equal(sb.events, 6);
    assert_int_equal(sb.dirty, RK_SB_CLEAN);
    read_sb(p[1], &sb);
    assert_int_equal(sb.events, 1); /* the stale member was never written */

    /* The array already runs degraded: no --degraded needed now. */
    v = open_ok(only0, 1, NULL);
    assert_int_equal(rk_volume_close(v), 0);

    /* info names the stale member and the failed slot. */
    char *text = rk_volume_info(p, 2, false, err, sizeof(err));
    assert_non_null(text);
    assert_non_null(strstr(text, "m1.img is stale"));
    assert_non_null(strstr(text, "slot 1 is recorded failed"));
    free(text);
    text = rk_volume_info(p, 2, true, err, sizeof(err));
    assert_non_null(text);
    assert_non_null(strstr(text, "\"status\":\t\"stale\""));
    free(text);
}

static void test_fail_all_member(void **state)
{
    const char *p[2] = {tpath("f0.img"), tpath("f1.img")};
    create_ok(p, 2, RK_LEVEL_RAID1, 2 * MIB);
    struct rk_open_opts o = {.nfaults = 1};
    o.fault_slot[0] = 1;
    o.fault_spec[0] = "fail-all";
    struct rk_volume *v = open_ok(p, 2, &o);
    struct rk_sb before;
    read_sb(p[0], &before);
    assert_int_equal(before.dirty, RK_SB_DIRTY);
    assert_int_equal(before.slots[1].state, RK_SLOT_ACTIVE);

    uint8_t *buf = rk_buf_alloc(65536);
    fill(buf, 65536, 7);
    assert_int_equal(rk_dev_write(rk_volume_dev(v), buf, 65536, 0, 0), 0);
    struct rk_sb sb;
    read_sb(p[0], &sb);
    assert_int_equal(sb.slots[1].state, RK_SLOT_FAILED);
    assert_true(sb.events > before.events);
    char *js = rk_volume_status_json(v);
    assert_non_null(strstr(js, "\"failed\""));
    free(js);
    assert_int_equal(rk_volume_close(v), 0);
    struct rk_sb after;
    read_sb(p[0], &after);
    assert_int_equal(after.dirty, RK_SB_CLEAN);
    assert_int_equal(after.events, sb.events + 1);

    /* Reassembled: m1 is stale and its slot stays failed; data comes from m0. */
    v = open_ok(p, 2, NULL);
    uint8_t *rbuf = rk_buf_alloc(65536);
    assert_int_equal(rk_dev_read(rk_volume_dev(v), rbuf, 65536, 0), 0);
    assert_memory_equal(rbuf, buf, 65536);
    assert_int_equal(rk_volume_close(v), 0);
    free(buf);
    free(rbuf);
}

static void test_dirty_and_readonly(void **state)
{
    const char *p[2] = {tpath("d0.img"), tpath("d1.img")};
    create_ok(p, 2, RK_LEVEL_RAID1, 2 * MIB);
    /* Simulate an unclean shutdown: both superblocks dirty. */
    for (int i = 0; i < 2; i++) {
        struct rk_sb sb;
        read_sb(p[i], &sb);
        sb.dirty = RK_SB_DIRTY;
        sb.events = 5;
        write_sb(p[i], &sb);
    }
    struct rk_volume *v = open_ok(p, 2, NULL);
    char *js = rk_volume_status_json(v);
    assert_non_null(strstr(js, "\"was_dirty\":\ttrue"));
    free(js);
    assert_int_equal(rk_volume_close(v), 0);
    struct rk_sb sb;
    read_sb(p[1], &sb);
    assert_int_equal(sb.dirty, RK_SB_CLEAN);
    assert_int_equal(sb.events, 7);

    /* Read-only: nothing written, writes refused. */
    size_t l0, l1;
    uint8_t *s0 = slurp(p[0], &l0);
    struct rk_open_opts o = {.read_only = true};
    v = open_ok(p, 2, &o);
    uint8_t *buf = rk_buf_alloc(4096);
    memset(buf, 1, 4096);
    assert_true(rk_dev_write(rk_volume_dev(v), buf, 4096, 0, 0) < 0);
    assert_int_equal(rk_volume_close(v), 0);
    uint8_t *s1 = slurp(p[0], &l1);
    assert_int_equal(l0, l1);
    assert_memory_equal(s0, s1, l0);
    free(s0);
    free(s1);
    free(buf);
}

static void copy_file(const char *from, const char *to)
{
    size_t len;
    uint8_t *d = slurp(from, &len);
    int fd = open(to, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, d, len), (ssize_t)len);
    close(fd);
    free(d);
}

static void test_refusals(void **state)
{
    const char *p[3] = {tpath("r0.img"), tpath("r1.img"), tpath("r2.img")};
    const char *dup = tpath("r0-copy.img");
    /* Without a partial parity log: the write hole is open (an array of the earlier format). */
    create_wh(p, 3, RK_LEVEL_RAID5, 2 * MIB, RK_WRITE_HOLE_NONE);
    copy_file(p[0], dup);
    struct rk_volume *v = NULL;
    char err[512] = "";

    /* Two members claiming slot 0. */
    const char *twice[4] = {p[0], p[1], p[2], dup};
    assert_int_equal(rk_volume_open(twice, 4, NULL, &v, err, sizeof(err)), -EEXIST);
    assert_non_null(strstr(err, "r0-copy.img claims slot 0, already held by"));
    assert_null(v);

    /* Dirty (unclean shutdown) and degraded raid5: the write hole needs --force. */
    for (int i = 0; i < 3; i++) {
        struct rk_sb sb;
        read_sb(p[i], &sb);
        sb.dirty = RK_SB_DIRTY;
        write_sb(p[i], &sb);
    }
    const char *two[2] = {p[2], p[0]};
    struct rk_open_opts o = {.degraded = true};
    assert_int_equal(rk_volume_open(two, 2, &o, &v, err, sizeof(err)), -EUCLEAN);
    assert_non_null(strstr(err, "write hole"));
    assert_non_null(strstr(err, "--force"));

    /* Too many missing for the level, even with --degraded. */
    const char *one[1] = {p[1]};
    assert_int_equal(rk_volume_open(one, 1, &o, &v, err, sizeof(err)), -ENODEV);
    assert_non_null(strstr(err, "2 of 3 members unavailable, raid5 survives at most 1"));

    /* Nothing readable at all. */
    const char *none[1] = {tpath("absent.img")};
    assert_int_equal(rk_volume_open(none, 1, NULL, &v, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "absent.img cannot open"));
    assert_null(rk_volume_info(none, 1, false, err, sizeof(err)));
    assert_non_null(strstr(err, "absent.img"));
}

/* With the partial parity log (the default), a dirty and degraded raid5 or raid6 starts without
 * --force: the log is replayed first. A read-only open cannot replay; here the log holds no live
 * entry (the dirty mark was set by hand), so it needs no --force either (writes in flight at a
 * crash: readonly_dirty_degraded_ppl). */
static void test_dirty_degraded_ppl(void **state)
{
    (void)state;
    for (int level = RK_LEVEL_RAID5; level <= RK_LEVEL_RAID6; level++) {
        int n = level == RK_LEVEL_RAID5 ? 3 : 4;
        const char *p[4] = {tpath("d0.img"), tpath("d1.img"), tpath("d2.img"), tpath("d3.img")};
        for (int i = 0; i < n; i++)
            unlink(p[i]);
        create_ok(p, n, level, 2 * MIB);
        struct rk_sb sb;
        read_sb(p[0], &sb);
        assert_int_equal(sb.write_hole, RK_SB_WH_PPL);
        assert_int_equal(sb.journal_offset, 512 * 1024);
        assert_int_equal(sb.journal_size, sb.data_offset - 512 * 1024);
        for (int i = 0; i < n; i++) {
            read_sb(p[i], &sb);
            sb.dirty = RK_SB_DIRTY;
            write_sb(p[i], &sb);
        }
        struct rk_volume *v = NULL;
        char err[512] = "";
        struct rk_open_opts ro = {.degraded = true, .read_only = true};
        assert_int_equal(rk_volume_open(p + 1, n - 1, &ro, &v, err, sizeof(err)), 0);
        assert_int_equal(rk_volume_close(v), 0);
        struct rk_open_opts o = {.degraded = true};
        assert_int_equal(rk_volume_open(p + 1, n - 1, &o, &v, err, sizeof(err)), 0);
        assert_int_equal(rk_volume_close(v), 0);

        /* The read-only refusal names its cause: a pending resync (a bitmap resync, not a
         * full one), then a log head that cannot be trusted (it could have held a write in
         * flight). */
        for (int i = 1; i < n; i++) {
            read_sb(p[i], &sb);
            sb.dirty = RK_SB_DIRTY;
            sb.resync_flags = RK_SB_RESYNC_PENDING;
            write_sb(p[i], &sb);
        }
        assert_int_equal(rk_volume_open(p + 1, n - 1, &ro, &v, err, sizeof(err)), -EUCLEAN);
        assert_non_null(strstr(err, "a resync that an earlier start left unfinished"));
        assert_non_null(strstr(err, "--force"));
        for (int i = 1; i < n; i++) {
            read_sb(p[i], &sb);
            sb.resync_flags = 0;
            write_sb(p[i], &sb);
        }
        int fd = open(p[1], O_WRONLY);
        assert_true(fd >= 0);
        char junk[64];
        memset(junk, 0xa5, sizeof(junk));
        assert_int_equal(pwrite(fd, junk, sizeof(junk), (off_t)sb.journal_offset + 100), 64);
        close(fd);
        assert_int_equal(rk_volume_open(p + 1, n - 1, &ro, &v, err, sizeof(err)), -EUCLEAN);
        assert_non_null(strstr(err, "cannot be read or trusted"));
        assert_null(strstr(err, "in flight:"));
    }
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dirty_degraded_ppl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shuffled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_and_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_all_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dirty_and_readonly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
