/* Cache device metadata: format, open (superblock, checkpoint, journal replay), close, the mode
 * and accessors (docs/FORMAT.md "Cache device"; interface and contract in meta.h).
 *
 * Format order (a re-initialisation cut anywhere loads as the old instance or is refused):
 * 1. the superblock with a new cache UUID and a new instance, FUA: before it completes the old
 *    superblock, checkpoints and journal still load as the old instance; after it, the old
 *    checkpoints and journal blocks carry the old instance and never count;
 * 2. an empty checkpoint in slot A, flush: until then the new instance has no checkpoint and
 *    the device is refused ("no valid checkpoint");
 * 3. journal block 0 of the first epoch, FUA: the empty cache.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cache/meta_int.h"
#include "core/util.h"

static const char *const mode_names[] = {"none", "writethrough", "writeback", "writearound"};

const char *rk_cache_mode_name(enum rk_cache_mode m)
{
    return (unsigned)m <= RK_CACHE_WRITEAROUND ? mode_names[m] : "?";
}

int rk_cache_mode_parse(const char *s, enum rk_cache_mode *out)
{
    for (unsigned i = 0; s && i <= RK_CACHE_WRITEAROUND; i++)
        if (!strcmp(s, mode_names[i])) {
            *out = (enum rk_cache_mode)i;
            return 0;
        }
    return -EINVAL;
}

static int random_bytes(void *p, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = getrandom((uint8_t *)p + got, n - got, 0);
        if (r < 0 && errno != EINTR)
            return -errno;
        got += r > 0 ? (size_t)r : 0;
    }
    return 0;
}

static struct rk_cache_meta *meta_new(struct rk_dev *dev, const char *name)
{
    struct rk_cache_meta *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->dev = dev;
    snprintf(m->name, sizeof(m->name), "%s", name ? name : dev->name);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    return m;
}

static void meta_free(struct rk_cache_meta *m)
{
    rkc_index_free(m);
    free(m->pend);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->cond);
    free(m);
}

/* The index geometry derived from the superblock. */
static void meta_geometry(struct rk_cache_meta *m)
{
    m->array_blocks = (m->sb.array_size + m->sb.block_size - 1) / m->sb.block_size;
    m->jblocks = m->sb.journal_size / RKC_BLK;
}

static int format_check(struct rk_dev *dev, const char *name,
                        const struct rk_cache_format_params *p, struct rkc_sb *sb, char *err,
                        size_t errlen)
{
    static const uint8_t zero[16];
    uint32_t bs = p->block_size ? p->block_size : 64 * 1024;
    if (bs < 4096 || bs > 1024 * 1024 || (bs & (bs - 1))) {
        rk_set_err(err, errlen, "cache block size %u: a power of two in [4 KiB, 1 MiB]", bs);
        return -EINVAL;
    }
    if ((unsigned)p->mode > RK_CACHE_WRITEAROUND || !memcmp(p->array_uuid, zero, 16) ||
        !p->array_size) {
        rk_set_err(err, errlen, "cache %s: invalid mode, array UUID or array size", name);
        return -EINVAL;
    }
    if (RKC_BLK % dev->block_size) {
        rk_set_err(err, errlen, "cache device %s: block size %u above 4 KiB", name,
                   dev->block_size);
        return -EINVAL;
    }
    *sb = (struct rkc_sb){.version = RKC_VERSION,
                          .mode = p->mode,
                          .array_size = p->array_size,
                          .block_size = bs,
                          .ctime = (uint64_t)time(NULL)};
    memcpy(sb->array_uuid, p->array_uuid, 16);
    char why[200];
    int r = rkc_layout(sb, dev->size, p->journal_size, why, sizeof(why));
    if (r) {
        rk_set_err(err, errlen, "cache device %s: %s", name, why);
        return r;
    }
    return 0;
}

int rk_cache_meta_format_check(struct rk_dev *dev, const char *name,
                               const struct rk_cache_format_params *p, char *err, size_t errlen)
{
    struct rkc_sb sb;
    return format_check(dev, name ? name : dev->name, p, &sb, err, errlen);
}

int rk_cache_meta_format(struct rk_dev *dev, const char *name,
                         const struct rk_cache_format_params *p, char *err, size_t errlen)
{
    struct rkc_sb sb;
    name = name ? name : dev->name;
    int r = format_check(dev, name, p, &sb, err, errlen);
    if (r)
        return r;
    struct rk_cache_meta *m = meta_new(dev, name);
    uint8_t *blk = rk_buf_alloc(RKC_BLK);
    if (!m || !blk) {
        r = -ENOMEM;
        goto out;
    }
    do {
        r = random_bytes(sb.cache_uuid, 16);
        if (!r)
            r = random_bytes(&sb.instance, sizeof(sb.instance));
    } while (!r && !sb.instance);
    if (r)
        goto out;
    sb.cache_uuid[6] = (uint8_t)((sb.cache_uuid[6] & 0x0f) | 0x40); /* RFC 4122 v4 */
    sb.cache_uuid[8] = (uint8_t)((sb.cache_uuid[8] & 0x3f) | 0x80);
    m->sb = sb;
    meta_geometry(m);
    r = rkc_index_init(m);
    if (r)
        goto out;
    rkc_sb_encode(&sb, blk);
    r = rk_dev_write(dev, blk, RKC_BLK, 0, RK_WRITE_FUA);
    if (!r) {
        m->ck_slot = 1; /* the first checkpoint goes to slot A */
        m->mode = p->mode;
        pthread_mutex_lock(&m->lock);
        r = rkc_ckpt_write_locked(m);
        pthread_mutex_unlock(&m->lock);
    }
out:
    if (r == -ENOMEM)
        rk_set_err(err, errlen, "cache device %s: out of memory", name);
    else if (r)
        rk_set_err(err, errlen, "cache device %s: cannot write the metadata: %s", name,
                   strerror(-r));
    free(blk);
    if (m)
        meta_free(m);
    return r;
}

/* Read and check the superblock against the expected array. */
static int open_sb(struct rk_cache_meta *m, const uint8_t *array_uuid, uint64_t array_size,
                   char *err, size_t errlen)
{
    uint8_t *blk = rk_buf_alloc(RKC_BLK);
    if (!blk)
        return -ENOMEM;
    char why[200];
    int r = m->dev->size < RKC_BLK ? -ENODATA : rk_dev_read(m->dev, blk, RKC_BLK, 0);
    if (r == -ENODATA)
        rk_set_err(why, sizeof(why), "not a raidkit cache device (too small)");
    else if (r)
        rk_set_err(why, sizeof(why), "cannot read the superblock: %s", strerror(-r));
    else
        r = rkc_sb_decode(blk, &m->sb, why, sizeof(why));
    free(blk);
    if (r) {
        rk_set_err(err, errlen, "cache device %s: %s", m->name, why);
        return r;
    }
    char a[RK_CACHE_UUID_STR], b[RK_CACHE_UUID_STR];
    if (array_uuid && memcmp(array_uuid, m->sb.array_uuid, 16)) {
        rk_set_err(err, errlen, "cache device %s is bound to array %s, not to array %s", m->name,
                   rk_cache_uuid_format(m->sb.array_uuid, a), rk_cache_uuid_format(array_uuid, b));
        return -EXDEV;
    }
    if (array_size && array_size != m->sb.array_size) {
        rk_set_err(err, errlen, "cache device %s was made for an array of %llu bytes, not %llu",
                   m->name, (unsigned long long)m->sb.array_size, (unsigned long long)array_size);
        return -EXDEV;
    }
    uint64_t need = m->sb.data_off + m->sb.nblocks * m->sb.block_size;
    if (m->dev->size < need) {
        rk_set_err(err, errlen, "cache device %s: %llu bytes, its superblock needs %llu", m->name,
                   (unsigned long long)m->dev->size, (unsigned long long)need);
        return -EINVAL;
    }
    meta_geometry(m);
    return 0;
}

static int open_common(struct rk_dev *dev, const char *name, const uint8_t *array_uuid,
                       uint64_t array_size, bool readonly, struct rk_cache_meta **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    struct rk_cache_meta *m = meta_new(dev, name);
    if (!m) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    m->readonly = readonly;
    char why[400];
    struct rkc_ck ck;
    int r = open_sb(m, array_uuid, array_size, err, errlen);
    if (r)
        goto fail;
    r = rkc_index_init(m);
    if (!r)
        r = rkc_ckpt_load(m, &ck, why, sizeof(why));
    if (!r)
        r = rkc_journal_replay(m, &ck, why, sizeof(why));
    if (r == -ENOMEM)
        rk_set_err(why, sizeof(why), "out of memory");
    if (r) {
        rk_set_err(err, errlen, "cache device %s: %s", m->name, why);
        goto fail;
    }
    rkc_index_build_free(m);
    if (!readonly) {
        /* A new epoch above every sequence on disk: whatever follows the commit point (a torn or
         * unfinished commit) can never be read as a continuation of what is written next. */
        pthread_mutex_lock(&m->lock);
        r = rkc_ckpt_write_locked(m);
        pthread_mutex_unlock(&m->lock);
        if (r) {
            rk_set_err(err, errlen, "cache device %s: cannot write a checkpoint: %s", m->name,
                       strerror(-r));
            goto fail;
        }
    }
    *out = m;
    return 0;
fail:
    meta_free(m);
    return r;
}

int rk_cache_meta_open(struct rk_dev *dev, const char *name, const uint8_t array_uuid[16],
                       uint64_t array_size, struct rk_cache_meta **out, char *err, size_t errlen)
{
    return open_common(dev, name, array_uuid, array_size, false, out, err, errlen);
}

int rk_cache_meta_open_ro(struct rk_dev *dev, const char *name, const uint8_t *array_uuid,
                          uint64_t array_size, struct rk_cache_meta **out, char *err, size_t errlen)
{
    return open_common(dev, name, array_uuid, array_size, true, out, err, errlen);
}

int rk_cache_meta_close(struct rk_cache_meta *m)
{
    if (!m)
        return 0;
    int r = 0;
    if (!m->readonly) {
        r = rk_cache_meta_commit(m);
        pthread_mutex_lock(&m->lock);
        while (m->committing)
            pthread_cond_wait(&m->cond, &m->lock);
        if (!r && !m->failed) {
            m->committing = true;
            r = rkc_ckpt_write_locked(m);
            m->committing = false;
            if (r)
                rk_err("cache %s: final checkpoint failed: %s", m->name, strerror(-r));
        }
        pthread_mutex_unlock(&m->lock);
    }
    meta_free(m);
    return r;
}

uint32_t rk_cache_meta_block_size(const struct rk_cache_meta *m)
{
    return m->sb.block_size;
}

uint64_t rk_cache_meta_blocks(const struct rk_cache_meta *m)
{
    return m->sb.nblocks;
}

uint64_t rk_cache_meta_data_offset(const struct rk_cache_meta *m)
{
    return m->sb.data_off;
}

enum rk_cache_mode rk_cache_meta_mode(const struct rk_cache_meta *m)
{
    struct rk_cache_meta *mm = (struct rk_cache_meta *)m;
    pthread_mutex_lock(&mm->lock);
    enum rk_cache_mode mode = m->mode;
    pthread_mutex_unlock(&mm->lock);
    return mode;
}

int rk_cache_meta_set_mode(struct rk_cache_meta *m, enum rk_cache_mode mode)
{
    if ((unsigned)mode > RK_CACHE_WRITEAROUND)
        return -EINVAL;
    pthread_mutex_lock(&m->lock);
    if (m->mode != mode) {
        m->mode = mode;
        rkc_queue(m, RKC_OP_MODE, 0, mode);
    }
    pthread_mutex_unlock(&m->lock);
    return rk_cache_meta_commit(m);
}

const uint8_t *rk_cache_meta_uuid(const struct rk_cache_meta *m)
{
    return m->sb.cache_uuid;
}

const uint8_t *rk_cache_meta_array_uuid(const struct rk_cache_meta *m)
{
    return m->sb.array_uuid;
}

uint64_t rk_cache_meta_array_size(const struct rk_cache_meta *m)
{
    return m->sb.array_size;
}

bool rk_cache_meta_has_magic(const uint8_t *buf)
{
    return !memcmp(buf, RKC_SB_MAGIC, 8);
}

char *rk_cache_uuid_format(const uint8_t *u, char *out)
{
    static const int dash[] = {4, 6, 8, 10};
    char *p = out;
    for (int i = 0, d = 0; i < 16; i++) {
        if (d < 4 && i == dash[d]) {
            *p++ = '-';
            d++;
        }
        p += sprintf(p, "%02x", u[i]);
    }
    *p = 0;
    return out;
}
