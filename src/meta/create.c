/* rk_volume_create: validate every argument and every member (existence, access, size,
 * signatures, duplicates) first, then create/extend the files and write fresh superblocks. */
#include "raidkit/volume.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "raidkit/member_nbd.h"
#include "meta/create_size.h"
#include "meta/create_uri.h"
#include "meta/meta_int.h"
#include "meta/probe.h"
#include "raid/bitmap_disk.h"

/* Bytes read from each existing member to look for signatures (meta/probe.h). */
#define CREATE_PROBE_LEN RK_PROBE_LEN

/* What validation learnt about one member; the write phase uses nothing else. */
struct create_member {
    const char *path;
    bool exists;
    bool blockdev;
    bool uri; /* an NBD URI member (create_uri.c), exists is then true */
    struct stat st;
    uint64_t cur_size; /* current size (0 when it does not exist) */
    uint64_t size;     /* bytes the array uses (create_size_pick): created/extended to it */
    bool made;         /* create_prepare created the file (it did not exist) */
    char canon[PATH_MAX + NAME_MAX +
               2]; /* resolved directory + name of a member still to be created */
};

/* A member that does not exist yet: its directory must let us create it; c->canon is its
 * canonical path (two spellings of one new file count as one member). 0 or -errno with err. */
static int create_check_new(struct create_member *c, const struct rk_create_opts *o, char *err,
                            size_t errlen)
{
    int r = 0;
    /* It will be created: its directory must let us. */
    char *copy = strdup(c->path);
    if (!copy) {
        r = -ENOMEM;
        rk_set_err(err, errlen, "out of memory");
        return r;
    }
    const char *dir = dirname(copy);
    char real[PATH_MAX];
    if (access(dir, W_OK | X_OK) < 0 || !realpath(dir, real)) {
        r = -errno;
        rk_set_err(err, errlen, "member %s cannot be created in %s: %s", c->path, dir,
                   strerror(-r));
        free(copy);
        return r;
    }
    free(copy);
    /* Two spellings of one new file ("x", "./x") must count as the same member. */
    copy = strdup(c->path);
    if (!copy) {
        r = -ENOMEM;
        rk_set_err(err, errlen, "out of memory");
        return r;
    }
    snprintf(c->canon, sizeof(c->canon), "%s/%s", real, basename(copy));
    free(copy);
    c->exists = false;
    c->size = o->size;
    return 0;
}

/* An existing member: a regular file or block device, readable and writable, its size, and no
 * foreign signature unless --force. fd is opened here; the caller closes it. 0 or -errno. */
static int create_check_existing(struct create_member *c, const struct rk_create_opts *o, int *fd,
                                 char *err, size_t errlen)
{
    int r = 0;
    uint8_t *probe = NULL;
    c->exists = true;
    if (S_ISDIR(c->st.st_mode)) {
        r = -EISDIR;
        rk_set_err(err, errlen, "member %s is a directory", c->path);
        goto out;
    }
    c->blockdev = S_ISBLK(c->st.st_mode);
    if (!c->blockdev && !S_ISREG(c->st.st_mode)) {
        r = -EINVAL;
        rk_set_err(err, errlen, "member %s is not a regular file or block device", c->path);
        goto out;
    }
    *fd = open(c->path, O_RDWR | O_CLOEXEC);
    if (*fd < 0) {
        r = -errno;
        rk_set_err(err, errlen, "member %s is not readable and writable: %s", c->path,
                   strerror(-r));
        goto out;
    }
    /* A member a running server (or another create) holds is never overwritten, --force or
     * not: the lock is the one file members take (src/member/file.c). */
    if (flock(*fd, LOCK_EX | LOCK_NB) < 0) {
        r = errno == EWOULDBLOCK ? -EBUSY : -errno;
        rk_set_err(err, errlen, "member %s is in use%s", c->path,
                   r == -EBUSY ? " (locked by another process; --force does not override it)" : "");
        goto out;
    }
    if (c->blockdev) {
        if (ioctl(*fd, BLKGETSIZE64, &c->cur_size) < 0) {
            r = -errno;
            rk_set_err(err, errlen, "member %s: cannot get the device size: %s", c->path,
                       strerror(-r));
            goto out;
        }
    } else {
        c->cur_size = (uint64_t)c->st.st_size;
    }
    probe = calloc(1, CREATE_PROBE_LEN);
    if (!probe) {
        r = -ENOMEM;
        rk_set_err(err, errlen, "out of memory");
        goto out;
    }
    ssize_t got = pread(*fd, probe, CREATE_PROBE_LEN, 0);
    if (got < 0) {
        r = -errno;
        rk_set_err(err, errlen, "member %s is not readable: %s", c->path, strerror(-r));
        goto out;
    }
    const char *sig = rk_probe_fd_signature(*fd, c->cur_size, probe, (size_t)got);
    if (sig && !o->force) {
        r = -EEXIST;
        rk_set_err(err, errlen, "member %s already holds %s; use --force to overwrite it", c->path,
                   sig);
        goto out;
    }
out:
    free(probe);
    return r;
}

/* Validate one member: fills c, or returns -errno with err. Touches nothing. */
static int create_check_member(struct create_member *c, const struct rk_create_opts *o,
                               uint32_t chunk, char *err, size_t errlen)
{
    int fd = -1, r = 0;

    if (rk_member_is_uri(c->path)) {
        c->uri = c->exists = true;
        r = create_uri_check(c->path, o->force, CREATE_PROBE_LEN, rk_probe_signature, &c->cur_size,
                             err, errlen);
    } else if (stat(c->path, &c->st) < 0) {
        r = -errno;
        if (r != -ENOENT) {
            rk_set_err(err, errlen, "member %s: cannot access: %s", c->path, strerror(-r));
            return r;
        }
        if (o->size == 0) {
            rk_set_err(err, errlen, "member %s does not exist (give a size to create it)", c->path);
            return r;
        }
        r = create_check_new(c, o, err, errlen);
    } else {
        r = create_check_existing(c, o, &fd, err, errlen);
    }
    if (fd >= 0)
        close(fd);
    if (!r) /* --size: what the array uses of each member (create_size.h) */
        r = create_size_pick(c->path, !c->uri && !c->blockdev, c->cur_size, o->size, &c->size, err,
                             errlen);
    if (r)
        return r;
    uint64_t need = (uint64_t)RK_SB_DATA_OFFSET + chunk;
    if (c->size < need) {
        r = -ENOSPC;
        rk_set_err(err, errlen,
                   "member %s is too small: %" PRIu64 " bytes, needs at least %" PRIu64
                   " (1 MiB superblock area + one %" PRIu32 "-byte chunk)",
                   c->path, c->size, need, chunk);
        return r;
    }
    return 0;
}

static int create_random_uuid(uint8_t *u, char *err, size_t errlen)
{
    int r = meta_random_uuid(u);
    if (r)
        rk_set_err(err, errlen, "getrandom failed: %s", strerror(-r));
    return r;
}

/* Write everything to one validated, prepared member: zeroed metadata area, superblock,
 * fsync. */
static int create_write_member(const struct create_member *c, const struct rk_sb *sb, char *err,
                               size_t errlen)
{
    int r = 0;
    uint8_t *zero = NULL;
    if (c->uri) {
        uint8_t sbuf[RK_SB_SIZE];
        rk_sb_encode(sb, sbuf);
        r = create_uri_zero(c->path, sb->data_offset - RK_SB_SIZE, RK_SB_SIZE);
        if (r) {
            rk_set_err(err, errlen, "member %s: cannot clear the metadata area: %s", c->path,
                       strerror(-r));
            return r;
        }
        return create_uri_write(c->path, sbuf, sizeof(sbuf), 0, "the superblock", err, errlen);
    }
    /* create_prepare made the file and gave it its size */
    int fd = open(c->path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        r = -errno;
        rk_set_err(err, errlen, "member %s: cannot open for writing: %s", c->path, strerror(-r));
        goto out;
    }
    /* Old signatures (file systems, an earlier array) must not survive in the metadata area;
     * a new or extended part of a file is already zero. */
    if (c->cur_size > RK_SB_SIZE) {
        uint64_t end = c->cur_size < sb->data_offset ? c->cur_size : sb->data_offset;
        zero = calloc(1, (size_t)(end - RK_SB_SIZE));
        if (!zero) {
            r = -ENOMEM;
            rk_set_err(err, errlen, "out of memory");
            goto out;
        }
        if (pwrite(fd, zero, (size_t)(end - RK_SB_SIZE), RK_SB_SIZE) !=
            (ssize_t)(end - RK_SB_SIZE)) {
            r = errno ? -errno : -EIO;
            rk_set_err(err, errlen, "member %s: cannot clear the metadata area: %s", c->path,
                       strerror(-r));
            goto out;
        }
    }
    uint8_t buf[RK_SB_SIZE];
    rk_sb_encode(sb, buf);
    if (pwrite(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) {
        r = errno ? -errno : -EIO;
        rk_set_err(err, errlen, "member %s: cannot write the superblock: %s", c->path,
                   strerror(-r));
        goto out;
    }
    if (fsync(fd) < 0) {
        r = -errno;
        rk_set_err(err, errlen, "member %s: fsync failed: %s", c->path, strerror(-r));
        goto out;
    }
out:
    free(zero);
    if (fd >= 0)
        close(fd);
    return r;
}

/*
 * Initial consistency (docs/CLI.md "create"): make the data area of one member
 * read back zeroes, so mirrors agree and parity (P and Q of zero data are zero) is valid before
 * the array holds data. Only for levels with redundancy, and not with assume_clean (the user's
 * promise that the members already agree). A regular file gets a hole punched over the part
 * that existed before (new and extended parts are holes already); a block device gets
 * BLKZEROOUT. When neither works the array is created anyway, with a warning, and recorded as
 * needing a full resync (the first serve's initial sync). Returns true when the member's data
 * area now reads back zeroes (or needs nothing).
 */
static bool create_zero_data(const struct create_member *c, const struct rk_create_opts *o,
                             const struct rk_sb *sb, uint32_t slot)
{
    if (o->assume_clean || o->level == RK_LEVEL_LINEAR || o->level == RK_LEVEL_RAID0)
        return true;
    uint64_t start = sb->data_offset, end = start + sb->slots[slot].data_size;
    if (!c->blockdev)
        end = end < c->cur_size ? end : c->cur_size; /* beyond: holes from ftruncate */
    if (!c->exists || end <= start)
        return true;
    if (c->uri) {
        int ur = create_uri_zero(c->path, end - start, start);
        if (ur)
            rk_warn("member %s: cannot zero its data area (%s): the first serve runs an initial "
                    "sync",
                    c->path, strerror(-ur));
        return ur == 0;
    }
    int fd = open(c->path, O_RDWR | O_CLOEXEC), r = 0;
    /* Tests only (docs/CLI.md "create"): behave as if the member could not be zeroed. */
    const char *nz = getenv("RAIDKIT_TEST_NO_ZERO");
    if (fd >= 0 && nz && !strcmp(nz, "1")) {
        r = -EOPNOTSUPP;
    } else if (fd < 0) {
        r = -errno;
    } else if (c->blockdev) {
        uint64_t range[2] = {start, end - start};
        r = ioctl(fd, BLKZEROOUT, range) < 0 ? -errno : 0;
    } else {
        r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)start,
                      (off_t)(end - start)) < 0
                ? -errno
                : 0;
    }
    if (fd >= 0 && r == 0 && fsync(fd) < 0)
        r = -errno;
    if (fd >= 0)
        close(fd);
    if (r) {
        rk_warn("member %s: cannot zero its data area (%s: %s): the first serve runs an "
                "initial sync (mirrors or parity disagree with the data until it ends)",
                c->path, c->blockdev ? "BLKZEROOUT failed" : "hole punch failed", strerror(-r));
    }
    return r == 0;
}

static uint64_t create_max_data(const struct rk_sb *sb)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < sb->members; i++)
        if (sb->slots[i].data_size > m)
            m = sb->slots[i].data_size;
    return m;
}

/* The write-intent bitmap fields (levels with redundancy, unless no_bitmap): area at
 * RK_BM_OFFSET sized for the region count. 0 or -EINVAL with err (a bad region size). */
static int create_bitmap_fields(struct rk_sb *sb, const struct rk_create_opts *o, char *err,
                                size_t errlen)
{
    if (o->no_bitmap || rk_level_max_failed(o->level, sb->members) == 0)
        return 0;
    uint64_t maxd = create_max_data(sb);
    uint64_t region = o->bitmap_region ? o->bitmap_region : rk_bm_default_region(maxd, sb->chunk);
    char berr[200] = "";
    if (rk_bm_check_region(region, maxd, sb->chunk, berr, sizeof(berr))) {
        rk_set_err(err, errlen, "%s", berr);
        return -EINVAL;
    }
    sb->bitmap_offset = RK_BM_OFFSET;
    sb->bitmap_size = rk_bm_area_size((maxd + region - 1) / region);
    sb->bitmap_region = region;
    return 0;
}

/* Write an empty bitmap area (no region marked) to one member, fsync'd. */
static int create_write_bitmap(const struct create_member *c, const struct rk_sb *sb, char *err,
                               size_t errlen)
{
    if (!sb->bitmap_offset)
        return 0;
    uint8_t *area = calloc(1, (size_t)sb->bitmap_size);
    if (!area) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    uint64_t maxd = create_max_data(sb);
    struct rk_bm_hdr h = {.region = sb->bitmap_region,
                          .nregions = (maxd + sb->bitmap_region - 1) / sb->bitmap_region,
                          .events = 1};
    memcpy(h.uuid, sb->array_uuid, RK_UUID_LEN);
    rk_bm_encode(&h, area, sb->bitmap_size);
    if (c->uri) {
        int ur = create_uri_write(c->path, area, sb->bitmap_size, sb->bitmap_offset,
                                  "the write-intent bitmap", err, errlen);
        free(area);
        return ur;
    }
    int r = 0, fd = open(c->path, O_RDWR | O_CLOEXEC);
    if (fd < 0 ||
        pwrite(fd, area, (size_t)sb->bitmap_size, (off_t)sb->bitmap_offset) !=
            (ssize_t)sb->bitmap_size ||
        fsync(fd) < 0) {
        r = errno ? -errno : -EIO;
        rk_set_err(err, errlen, "member %s: cannot write the write-intent bitmap: %s", c->path,
                   strerror(-r));
    }
    if (fd >= 0)
        close(fd);
    free(area);
    return r;
}

/* Write-hole protection: raid5/raid6 get a partial parity log in [512 KiB, data_offset) of
 * every member unless o says none (the metadata area is zeroed below, so the log starts empty);
 * its generation comes from the array UUID, so entries of an earlier array never count. */
static int create_write_hole(struct rk_sb *sb, const struct rk_create_opts *o, char *err,
                             size_t errlen)
{
    bool hole = rk_level_write_hole(o->level);
    if (o->write_hole == RK_WRITE_HOLE_PPL && !hole) {
        rk_set_err(err, errlen, "--write-hole ppl: %s has no parity (raid5 and raid6 only)",
                   rk_level_name(o->level));
        return -EINVAL;
    }
    if (!hole || o->write_hole == RK_WRITE_HOLE_NONE)
        return 0;
    sb->write_hole = RK_SB_WH_PPL;
    sb->journal_offset = RK_SB_PPL_OFFSET;
    sb->journal_size = sb->data_offset - RK_SB_PPL_OFFSET;
    sb->ppl_id = rk_get_le64(sb->array_uuid) | 1;
    return 0;
}

/* Validate every member (create_check_member) and refuse one given twice (same path, same new
 * canonical path, or same inode). Fills cm[0..n-1]; 0 or -errno with err. Touches nothing. */
static int create_check_members(struct create_member *cm, const char *const *paths, int n,
                                const struct rk_create_opts *o, uint32_t chunk, char *err,
                                size_t errlen)
{
    int r;
    for (int i = 0; i < n; i++) {
        cm[i].path = paths[i];
        if (!paths[i] || !paths[i][0]) {
            r = -EINVAL;
            rk_set_err(err, errlen, "member %d: empty path", i);
            return r;
        }
        r = create_check_member(&cm[i], o, chunk, err, errlen);
        if (r)
            return r;
        for (int j = 0; j < i; j++) {
            bool same = strcmp(cm[i].path, cm[j].path) == 0 ||
                        (!cm[i].exists && !cm[j].exists && !strcmp(cm[i].canon, cm[j].canon)) ||
                        (cm[i].exists && cm[j].exists && !cm[i].uri && !cm[j].uri &&
                         cm[i].st.st_dev == cm[j].st.st_dev && cm[i].st.st_ino == cm[j].st.st_ino);
            if (same) {
                r = -EINVAL;
                rk_set_err(err, errlen, "member %s is given twice (as member %d and %d)",
                           cm[i].path, j, i);
                return r;
            }
        }
    }
    return 0;
}

/* Fill *sb (slot 0's superblock; the others differ only in the per-member fields) for the
 * checked members cm[0..n-1], and check every slot's superblock. 0 or -errno with err. */
static int create_fill_sb(struct rk_sb *sb, const struct create_member *cm, int n,
                          const struct rk_create_opts *o, uint32_t chunk, const char *name,
                          char *err, size_t errlen)
{
    struct rk_raid_geom g;
    int r;
    sb->version = RK_SB_VERSION;
    sb->level = o->level;
    sb->layout = 0;
    sb->chunk = chunk;
    sb->members = (uint32_t)n;
    sb->data_offset = RK_SB_DATA_OFFSET;
    sb->events = 1;
    sb->events_cleared = 1; /* re-add: the bitmap records every write from the start */
    sb->dirty = RK_SB_CLEAN;
    sb->ctime = sb->utime = (uint64_t)time(NULL);
    memcpy(sb->name, name, strlen(name));
    r = create_random_uuid(sb->array_uuid, err, errlen);
    if (r)
        return r;
    r = create_write_hole(sb, o, err, errlen);
    if (r)
        return r;
    for (int i = 0; i < n; i++) {
        sb->slots[i].state = RK_SLOT_ACTIVE;
        sb->slots[i].data_size = (cm[i].size - RK_SB_DATA_OFFSET) / chunk * chunk;
        r = create_random_uuid(sb->slots[i].uuid, err, errlen);
        if (r)
            return r;
    }
    rk_sb_geom(sb, &g);
    char gerr[200] = "";
    if (rk_raid_geom_check(&g, gerr, sizeof(gerr)) != 0) {
        r = -EINVAL;
        rk_set_err(err, errlen, "invalid geometry: %s", gerr);
        return r;
    }
    sb->array_size = rk_raid_array_size(&g);
    r = create_bitmap_fields(sb, o, err, errlen);
    if (r)
        return r;
    for (int i = 0; i < n; i++) {
        meta_sb_for_slot(sb, (uint32_t)i);
        char cerr[200] = "";
        if (rk_sb_check(sb, cerr, sizeof(cerr)) != 0) {
            r = -EINVAL;
            rk_set_err(err, errlen, "member %s: internal error, superblock invalid: %s", cm[i].path,
                       cerr);
            return r;
        }
    }
    return 0;
}

/* Bytes of [0, len) of fd that are holes (SEEK_DATA / SEEK_HOLE; all of it counts as data
 * where the file system cannot tell). */
static uint64_t create_hole_bytes(int fd, uint64_t len)
{
    uint64_t holes = 0;
    off_t pos = 0;
    while ((uint64_t)pos < len) {
        off_t data = lseek(fd, pos, SEEK_DATA);
        if (data < 0)
            return errno == ENXIO ? holes + (len - (uint64_t)pos) : holes;
        if ((uint64_t)data >= len)
            return holes + (len - (uint64_t)pos);
        holes += (uint64_t)(data - pos);
        off_t hole = lseek(fd, data, SEEK_HOLE);
        if (hole < 0)
            return holes;
        pos = hole;
    }
    return holes;
}

/* Will the metadata writes fit? The holes in what create_write_member and create_write_bitmap
 * write of each file member (the superblock, the bitmap area, and the rest of the metadata
 * area as far as the file existed) need new blocks, summed per file system, against what it
 * has free (statvfs). Reads only. 0, or -ENOSPC with err naming a member of a file system that
 * is short. */
static int create_check_space(const struct create_member *cm, int n, const struct rk_sb *sb,
                              char *err, size_t errlen)
{
    uint64_t need[RK_MAX_MEMBERS] = {0};
    dev_t dev[RK_MAX_MEMBERS];
    for (int i = 0; i < n; i++) {
        int fd;
        struct stat st;
        if (cm[i].uri || cm[i].blockdev || (fd = open(cm[i].path, O_RDONLY | O_CLOEXEC)) < 0)
            continue;
        uint64_t end = cm[i].cur_size < sb->data_offset ? cm[i].cur_size : sb->data_offset;
        if (sb->bitmap_offset && end < sb->bitmap_offset + sb->bitmap_size)
            end = sb->bitmap_offset + sb->bitmap_size;
        if (end < RK_SB_SIZE)
            end = RK_SB_SIZE;
        if (fstat(fd, &st) == 0) {
            dev[i] = st.st_dev;
            need[i] = create_hole_bytes(fd, end);
        }
        close(fd);
    }
    for (int i = 0; i < n; i++) {
        uint64_t sum = 0;
        struct statvfs vf;
        if (!need[i] || statvfs(cm[i].path, &vf) < 0)
            continue;
        for (int j = 0; j < n; j++)
            sum += need[j] && dev[j] == dev[i] ? need[j] : 0;
        uint64_t avail = (uint64_t)vf.f_bavail * vf.f_frsize;
        if (sum > avail) {
            rk_set_err(err, errlen,
                       "member %s: its file system has %" PRIu64 " bytes free, the metadata "
                       "areas of the members on it need %" PRIu64,
                       cm[i].path, avail, sum);
            return -ENOSPC;
        }
    }
    return 0;
}

/*
 * Prepare every local member before anything in it is overwritten (docs/CLI.md "create":
 * nothing that existed is lost when create fails). Each step keeps the member's content:
 * create a missing file (it goes again on failure: cli_remove_created), extend a file to its
 * size and check the size took (a file system's size limit, a pseudo-file), then check that
 * the metadata writes fit in the free space (create_check_space). On a failure the extended
 * files get their old size back. 0 or -errno with err.
 */
static int create_prepare(struct create_member *cm, int n, const struct rk_sb *sb, char *err,
                          size_t errlen)
{
    int i, r = 0;
    for (i = 0; i < n && !r; i++) {
        struct create_member *c = &cm[i];
        if (c->uri || c->blockdev)
            continue;
        int fd = open(c->path, O_RDWR | O_CLOEXEC | (c->exists ? 0 : O_CREAT | O_EXCL), 0644);
        if (fd < 0) {
            r = -errno;
            rk_set_err(err, errlen, "member %s: cannot open for writing: %s", c->path,
                       strerror(-r));
            break;
        }
        c->made = !c->exists; /* a new file goes again on failure (cli_remove_created) */
        c->exists = true;
        struct stat st;
        if (c->size > c->cur_size && ftruncate(fd, (off_t)c->size) < 0) {
            r = -errno;
            rk_set_err(err, errlen, "member %s: cannot extend to %" PRIu64 " bytes: %s", c->path,
                       c->size, strerror(-r));
        } else if (fstat(fd, &st) < 0 ||
                   (uint64_t)st.st_size != (c->size > c->cur_size ? c->size : c->cur_size)) {
            r = -EINVAL;
            rk_set_err(err, errlen,
                       "member %s: its size does not take (%" PRIu64 " bytes asked): not a "
                       "regular file on a file system that raidkit can use",
                       c->path, c->size);
        }
        close(fd);
    }
    if (!r)
        r = create_check_space(cm, n, sb, err, errlen);
    if (!r)
        return 0;
    for (int j = 0; j < i; j++) /* give the files their old size back (the rest were holes) */
        if (!cm[j].uri && !cm[j].blockdev && !cm[j].made && cm[j].size > cm[j].cur_size &&
            truncate(cm[j].path, (off_t)cm[j].cur_size) < 0)
            rk_warn("member %s: cannot give it back its size of %" PRIu64 " bytes: %s", cm[j].path,
                    cm[j].cur_size, strerror(errno));
    return r;
}

/* Write the validated array: zero every data area first (one that cannot be zeroed makes the
 * whole array need its initial sync), then each member's superblock area and bitmap. */
static int create_write_all(const struct create_member *cm, int n, const struct rk_create_opts *o,
                            struct rk_sb *sb, char *err, size_t errlen)
{
    int r;
    bool zeroed = true;
    for (int i = 0; i < n; i++) {
        meta_sb_for_slot(sb, (uint32_t)i);
        zeroed &= create_zero_data(&cm[i], o, sb, (uint32_t)i);
    }
    if (!zeroed) {
        sb->resync_flags = RK_SB_RESYNC_PENDING | RK_SB_RESYNC_FULL;
        sb->resync_offset = 0;
    }
    for (int i = 0; i < n; i++) {
        meta_sb_for_slot(sb, (uint32_t)i);
        r = create_write_member(&cm[i], sb, err, errlen);
        if (!r)
            r = create_write_bitmap(&cm[i], sb, err, errlen);
        if (r)
            return r;
    }
    return 0;
}

int rk_volume_create(const char *const *paths, int n, const struct rk_create_opts *o, char *err,
                     size_t errlen)
{
    struct create_member *cm = NULL;
    struct rk_sb *sb = NULL;
    int r;

    if (!o) {
        rk_set_err(err, errlen, "no create options");
        return -EINVAL;
    }
    /* The level, member-count and chunk rules of the one geometry check, before any member is
     * opened: with data sizes of one chunk, nothing else can fail. */
    uint32_t chunk = o->chunk ? o->chunk : RK_CHUNK_DEFAULT;
    struct rk_raid_geom g = {.level = o->level, .members = n > 0 ? (uint32_t)n : 0, .chunk = chunk};
    for (int i = 0; i < n && i < RK_MAX_MEMBERS; i++)
        g.data_size[i] = chunk;
    r = rk_raid_geom_check(&g, err, errlen);
    if (r)
        return r;
    if (!paths) {
        rk_set_err(err, errlen, "no member paths");
        return -EINVAL;
    }
    const char *name = o->name ? o->name : "";
    if (strlen(name) >= RK_SB_NAME_LEN) {
        rk_set_err(err, errlen, "array name '%s' is longer than %u bytes", name,
                   RK_SB_NAME_LEN - 1);
        return -EINVAL;
    }
    cm = calloc((size_t)n, sizeof(*cm));
    sb = calloc(1, sizeof(*sb));
    if (!cm || !sb) {
        r = -ENOMEM;
        rk_set_err(err, errlen, "out of memory");
        goto out;
    }
    r = create_check_members(cm, paths, n, o, chunk, err, errlen);
    if (!r)
        r = create_fill_sb(sb, cm, n, o, chunk, name, err, errlen);
    if (!r)
        r = create_prepare(cm, n, sb, err, errlen);
    /* Everything is validated and every member takes its size and metadata area: from here on
     * members are overwritten. */
    if (!r)
        r = create_write_all(cm, n, o, sb, err, errlen);
    if (!r) {
        uint64_t cur[RK_MAX_MEMBERS];
        for (int i = 0; i < n; i++)
            cur[i] = cm[i].cur_size;
        create_size_report(paths, n, cur, sb, o->size);
    }
out:
    free(sb);
    free(cm);
    return r;
}
