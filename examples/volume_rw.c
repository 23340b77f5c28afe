/* Example: the raidkit C API (the headers in include/raidkit, pkg-config raidkit) end to end.
 *
 *   cc volume_rw.c $(pkg-config --cflags --libs raidkit) -o volume_rw
 *   ./volume_rw DIR        # makes DIR/m0.img .. DIR/m2.img (8 MiB each, sparse)
 *
 * Creates a raid5 array over three member files, assembles it (the members in reverse order:
 * slots come from the superblocks), writes a pattern through the volume's device, flushes,
 * reads it back, closes the array cleanly, opens it again with one member missing (degraded)
 * and checks the pattern once more, now rebuilt from parity. Exit 0 when every byte matched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <raidkit/device.h>
#include <raidkit/raid.h>
#include <raidkit/version.h>
#include <raidkit/volume.h>

#define LEN (256u * 1024u)

/* Read LEN bytes at off from dev and compare with want; 0 when equal. */
static int check(struct rk_dev *dev, const unsigned char *want, uint64_t off, const char *what)
{
    unsigned char *got = rk_buf_alloc(LEN);
    int r = got ? rk_dev_read(dev, got, LEN, off) : -1;
    if (!r && memcmp(got, want, LEN))
        r = -1;
    printf("%s: %s\n", what, r ? "MISMATCH" : "ok");
    free(got);
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    char p[3][4096];
    const char *paths[3], *rev[3], *degraded[2];
    for (int i = 0; i < 3; i++) {
        snprintf(p[i], sizeof(p[i]), "%s/m%d.img", argv[1], i);
        paths[i] = p[i];
        rev[2 - i] = p[i];
    }
    degraded[0] = p[0];
    degraded[1] = p[2];
    char err[512] = "";
    struct rk_create_opts co = {.level = RK_LEVEL_RAID5, .size = 8u << 20, .force = true};
    if (rk_volume_create(paths, 3, &co, err, sizeof(err))) {
        fprintf(stderr, "create: %s\n", err);
        return 1;
    }
    struct rk_open_opts oo = {0};
    struct rk_volume *vol;
    if (rk_volume_open(rev, 3, &oo, &vol, err, sizeof(err))) {
        fprintf(stderr, "open: %s\n", err);
        return 1;
    }
    struct rk_dev *dev = rk_volume_dev(vol);
    printf("raidkit %s: %s, %llu bytes\n", RK_VERSION_STRING, dev->name,
           (unsigned long long)dev->size);
    unsigned char *buf = rk_buf_alloc(LEN);
    for (unsigned i = 0; buf && i < LEN; i++)
        buf[i] = (unsigned char)(i * 7 + i / 4096);
    uint64_t off = dev->size / 2 / LEN * LEN; /* block-aligned, inside the volume */
    int r = buf ? rk_dev_write(dev, buf, LEN, off, 0) : -1;
    if (!r)
        r = rk_dev_flush(dev);
    if (!r)
        r = check(dev, buf, off, "read back");
    if (rk_volume_close(vol) || r) {
        free(buf);
        return 1;
    }
    oo.degraded = true;
    if (rk_volume_open(degraded, 2, &oo, &vol, err, sizeof(err))) {
        fprintf(stderr, "degraded open: %s\n", err);
        free(buf);
        return 1;
    }
    r = check(rk_volume_dev(vol), buf, off, "degraded read (slot 1 missing)");
    free(buf);
    return rk_volume_close(vol) || r ? 1 : 0;
}
