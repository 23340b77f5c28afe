/* FUSE export of a volume: a libfuse3 low-level session with one regular file (see export.h). */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "fuse/export.h"
#include "raidkit/device.h"

#define FX_ROOT_INO 1 /* FUSE_ROOT_ID: the mountpoint itself */
#define FX_FILE_INO 2 /* the volume file inside a directory mountpoint */
#define FX_MAX_IO   (1u << 20)

/* State of one export, the session's userdata. */
struct fx {
    struct rk_dev *dev;
    bool file_root; /* the mountpoint is a regular file: inode 1 is the volume */
    bool read_only;
    const char *name;
    uint32_t max_io;
    uid_t uid;
    gid_t gid;
    struct timespec t0;       /* times shown for the file */
    pthread_mutex_t rmw_lock; /* serialises unaligned edges (read-modify-write) */
};

/* One aligned bounce buffer per worker thread (freed when the thread ends): an allocation of up
 * to 1 MiB per request would cost page faults on every request. */
static pthread_key_t fx_buf_key;
static pthread_once_t fx_buf_once = PTHREAD_ONCE_INIT;

struct fx_tbuf {
    void *p;
    size_t len;
};

static void fx_tbuf_free(void *v)
{
    struct fx_tbuf *b = v;
    free(b->p);
    free(b);
}

static void fx_tbuf_key(void)
{
    pthread_key_create(&fx_buf_key, fx_tbuf_free);
}

/* The calling thread's buffer of at least len bytes (4096-aligned), NULL when out of memory. */
static void *fx_tbuf_get(size_t len)
{
    pthread_once(&fx_buf_once, fx_tbuf_key);
    struct fx_tbuf *b = pthread_getspecific(fx_buf_key);
    if (!b) {
        if (!(b = calloc(1, sizeof(*b))))
            return NULL;
        pthread_setspecific(fx_buf_key, b);
    }
    if (b->len < len) {
        free(b->p);
        b->len = 0;
        if (!(b->p = rk_buf_alloc(len)))
            return NULL;
        b->len = len;
    }
    return b->p;
}

static bool fx_is_file(const struct fx *x, fuse_ino_t ino)
{
    return x->file_root ? ino == FX_ROOT_INO : ino == FX_FILE_INO;
}

/* The attributes of inode ino into *st; false when ino does not exist. */
static bool fx_stat(const struct fx *x, fuse_ino_t ino, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = ino;
    st->st_uid = x->uid;
    st->st_gid = x->gid;
    st->st_atim = st->st_mtim = st->st_ctim = x->t0;
    st->st_blksize = x->dev->opt_io_size ? x->dev->opt_io_size : x->dev->block_size;
    if (fx_is_file(x, ino)) {
        st->st_mode = S_IFREG | (x->read_only ? 0444 : 0644);
        st->st_nlink = 1;
        st->st_size = (off_t)x->dev->size;
        st->st_blocks = (blkcnt_t)(x->dev->size / 512);
        return true;
    }
    if (ino == FX_ROOT_INO && !x->file_root) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return true;
    }
    return false;
}

static void fx_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fx *x = fuse_req_userdata(req);
    struct fuse_entry_param e = {.ino = FX_FILE_INO, .attr_timeout = 3600, .entry_timeout = 3600};
    if (x->file_root || parent != FX_ROOT_INO || strcmp(name, x->name)) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    fx_stat(x, FX_FILE_INO, &e.attr);
    fuse_reply_entry(req, &e);
}

static void fx_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct fx *x = fuse_req_userdata(req);
    struct stat st;
    if (!fx_stat(x, ino, &st))
        fuse_reply_err(req, ENOENT);
    else
        fuse_reply_attr(req, &st, 3600);
}

/* Only a "truncate" to the array size itself is accepted (O_TRUNC opens are refused by open). */
static void fx_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    struct fx *x = fuse_req_userdata(req);
    struct stat st;
    if (!fx_stat(x, ino, &st)) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if ((to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size != x->dev->size) {
        fuse_reply_err(req, EPERM);
        return;
    }
    fuse_reply_attr(req, &st, 3600);
}

static void fx_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct fx *x = fuse_req_userdata(req);
    if (!fx_is_file(x, ino)) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    if (x->read_only && (fi->flags & O_ACCMODE) != O_RDONLY) {
        fuse_reply_err(req, EROFS);
        return;
    }
    if (fi->flags & O_TRUNC) {
        fuse_reply_err(req, EPERM);
        return;
    }
    fi->direct_io = 1;
    fi->keep_cache = 0;
    fuse_reply_open(req, fi);
}

/* Read len bytes at off (any alignment, inside the device) into dst through the covering
 * block-aligned range. 0 or -errno. */
static int fx_read_any(struct fx *x, char *dst, uint64_t len, uint64_t off)
{
    uint64_t bs = x->dev->block_size;
    uint64_t a = off / bs * bs, e = (off + len + bs - 1) / bs * bs;
    char *buf = rk_buf_alloc(e - a);
    if (!buf)
        return -ENOMEM;
    int r = rk_dev_read(x->dev, buf, e - a, a);
    if (!r)
        memcpy(dst, buf + (off - a), len);
    free(buf);
    return r;
}

static void fx_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    struct fx *x = fuse_req_userdata(req);
    uint64_t o = (uint64_t)off, n = size;
    if (off < 0) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    if (o >= x->dev->size) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    if (n > x->dev->size - o)
        n = x->dev->size - o;
    uint64_t bs = x->dev->block_size;
    int r;
    char *buf = fx_tbuf_get(n ? n : bs);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (o % bs == 0 && n % bs == 0)
        r = rk_dev_read(x->dev, buf, n, o);
    else
        r = fx_read_any(x, buf, n, o);
    if (r)
        fuse_reply_err(req, -r);
    else
        fuse_reply_buf(req, buf, n);
}

/* Write len bytes of src at off; unaligned head/tail blocks are read, patched and written back
 * under rmw_lock. 0 or -errno. */
static int fx_write_any(struct fx *x, const char *src, uint64_t len, uint64_t off)
{
    uint64_t bs = x->dev->block_size;
    uint64_t a = off / bs * bs, e = (off + len + bs - 1) / bs * bs;
    if (a == off && e == off + len) {
        char *buf = fx_tbuf_get(len);
        if (!buf)
            return -ENOMEM;
        memcpy(buf, src, len);
        return rk_dev_write(x->dev, buf, len, off, 0);
    }
    char *buf = rk_buf_alloc(e - a);
    if (!buf)
        return -ENOMEM;
    pthread_mutex_lock(&x->rmw_lock);
    int r = 0;
    if (a != off)
        r = rk_dev_read(x->dev, buf, bs, a);
    if (!r && e != off + len && (e - bs > a || a == off))
        r = rk_dev_read(x->dev, buf + (e - bs - a), bs, e - bs);
    if (!r) {
        memcpy(buf + (off - a), src, len);
        r = rk_dev_write(x->dev, buf, e - a, a, 0);
    }
    pthread_mutex_unlock(&x->rmw_lock);
    free(buf);
    return r;
}

static void fx_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    struct fx *x = fuse_req_userdata(req);
    if (x->read_only) {
        fuse_reply_err(req, EROFS);
        return;
    }
    if (off < 0 || (uint64_t)off >= x->dev->size || size > x->dev->size - (uint64_t)off) {
        fuse_reply_err(req, size == 0 ? 0 : ENOSPC);
        return;
    }
    int r = size ? fx_write_any(x, data, size, (uint64_t)off) : 0;
    if (r)
        fuse_reply_err(req, -r);
    else
        fuse_reply_write(req, size);
}

static void fx_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    struct fx *x = fuse_req_userdata(req);
    fuse_reply_err(req, x->read_only ? 0 : -rk_dev_flush(x->dev));
}

/* Zero len bytes at off: whole blocks through write-zeroes (flags), partial edge blocks as
 * written zeroes. 0 or -errno. */
static int fx_zero(struct fx *x, uint64_t len, uint64_t off, uint32_t flags)
{
    uint64_t bs = x->dev->block_size;
    uint64_t a = (off + bs - 1) / bs * bs, e = (off + len) / bs * bs;
    int r = 0;
    if (a >= e) { /* inside one block or across one boundary: written zeroes */
        char *z = calloc(1, len);
        if (!z)
            return -ENOMEM;
        r = fx_write_any(x, z, len, off);
        free(z);
        return r;
    }
    if (a > off) {
        char z[4096] = {0};
        r = fx_write_any(x, z, a - off, off);
    }
    if (!r)
        r = rk_dev_write_zeroes(x->dev, e - a, a, flags);
    if (!r && off + len > e) {
        char z[4096] = {0};
        r = fx_write_any(x, z, off + len - e, e);
    }
    return r;
}

static void fx_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                         struct fuse_file_info *fi)
{
    struct fx *x = fuse_req_userdata(req);
    uint64_t o = (uint64_t)off, n = (uint64_t)len;
    if (x->read_only) {
        fuse_reply_err(req, EROFS);
        return;
    }
    if (off < 0 || len <= 0 || o > x->dev->size || n > x->dev->size - o) {
        fuse_reply_err(req, (off < 0 || len <= 0) ? EINVAL : (mode ? EINVAL : EFBIG));
        return;
    }
    int r;
    if (mode == 0 || mode == FALLOC_FL_KEEP_SIZE)
        r = 0; /* every byte of the file exists already */
    else if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
        r = fx_zero(x, n, o, 0);
    else if ((mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE)
        r = fx_zero(x, n, o, RK_ZERO_NO_HOLE);
    else
        r = -EOPNOTSUPP;
    fuse_reply_err(req, -r);
}

static void fx_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    struct fx *x = fuse_req_userdata(req);
    if (x->file_root || ino != FX_ROOT_INO) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    char buf[1024];
    size_t pos = 0;
    const char *names[3] = {".", "..", x->name};
    fuse_ino_t inos[3] = {FX_ROOT_INO, FX_ROOT_INO, FX_FILE_INO};
    for (off_t i = off; i < 3; i++) {
        struct stat st = {.st_ino = inos[i], .st_mode = i < 2 ? S_IFDIR : S_IFREG};
        size_t l = fuse_add_direntry(req, buf + pos, sizeof(buf) - pos, names[i], &st, i + 1);
        if (l > sizeof(buf) - pos || pos + l > size)
            break;
        pos += l;
    }
    fuse_reply_buf(req, buf, pos);
}

static void fx_init(void *userdata, struct fuse_conn_info *conn)
{
    struct fx *x = userdata;
    conn->max_write = x->max_io;
    conn->max_read = x->max_io;
    conn->max_readahead = x->max_io;
    conn->max_background = 128;
    conn->congestion_threshold = 96;
    if (conn->capable & FUSE_CAP_ASYNC_DIO)
        conn->want |= FUSE_CAP_ASYNC_DIO;
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

static const struct fuse_lowlevel_ops fx_ops = {
    .init = fx_init,
    .lookup = fx_lookup,
    .getattr = fx_getattr,
    .setattr = fx_setattr,
    .open = fx_open,
    .read = fx_read,
    .write = fx_write,
    .fsync = fx_fsync,
    .fallocate = fx_fallocate,
    .readdir = fx_readdir,
};

/* Check o and fill x. 0 or -errno with a message. */
static int fx_setup(struct fx *x, struct rk_dev *dev, const struct rk_fuse_opts *o, char *err,
                    size_t errlen)
{
    struct stat st;
    if (!o->mountpoint || !*o->mountpoint) {
        snprintf(err, errlen, "no mountpoint given");
        return -EINVAL;
    }
    if (stat(o->mountpoint, &st)) {
        int e = errno;
        snprintf(err, errlen, "mountpoint %s: %s", o->mountpoint, strerror(e));
        return -e;
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "mountpoint %s: neither a regular file nor a directory",
                 o->mountpoint);
        return -ENOTDIR;
    }
    if (o->max_io && (o->max_io < 4096 || o->max_io > FX_MAX_IO || o->max_io % 4096)) {
        snprintf(err, errlen, "max I/O %u: not a multiple of 4 KiB in 4 KiB..1 MiB", o->max_io);
        return -EINVAL;
    }
    *x = (struct fx){.dev = dev,
                     .file_root = S_ISREG(st.st_mode),
                     .read_only = o->read_only,
                     .name = o->name && *o->name ? o->name : "volume",
                     .max_io = o->max_io ? o->max_io : FX_MAX_IO,
                     .uid = getuid(),
                     .gid = getgid()};
    clock_gettime(CLOCK_REALTIME, &x->t0);
    pthread_mutex_init(&x->rmw_lock, NULL);
    return 0;
}

int rk_fuse_export_run(struct rk_dev *dev, const struct rk_fuse_opts *o, char *err, size_t errlen)
{
    struct fx x;
    int r = fx_setup(&x, dev, o, err, errlen);
    if (r)
        return r;
    char mopts[160];
    snprintf(mopts, sizeof(mopts), "fsname=raidkit,subtype=raidkit,max_read=%u%s%s", x.max_io,
             o->allow_other ? ",allow_other" : "", x.read_only ? ",ro" : "");
    char *argv[] = {"raidkit", "-o", mopts, NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, argv);
    struct fuse_session *se = fuse_session_new(&args, &fx_ops, sizeof(fx_ops), &x);
    fuse_opt_free_args(&args); /* libfuse may have copied and extended argv */
    r = -EIO;
    if (!se) {
        snprintf(err, errlen, "cannot start the FUSE session (options %s)", mopts);
        goto out;
    }
    if (fuse_set_signal_handlers(se)) {
        snprintf(err, errlen, "cannot install the signal handlers");
        goto destroy;
    }
    if (fuse_session_mount(se, o->mountpoint)) {
        snprintf(err, errlen, "cannot mount on %s (is /dev/fuse usable?)", o->mountpoint);
        goto signals;
    }
    rk_info("FUSE export of %s on %s%s%s", dev->name, o->mountpoint, x.file_root ? "" : "/",
            x.file_root ? "" : x.name);
    struct fuse_loop_config *cfg = fuse_loop_cfg_create();
    if (!cfg) {
        snprintf(err, errlen, "out of memory");
        r = -ENOMEM;
        goto unmount;
    }
    fuse_loop_cfg_set_max_threads(cfg, o->threads > 0 ? (unsigned)o->threads : 16);
    fuse_loop_cfg_set_idle_threads(cfg, o->threads > 0 ? (unsigned)o->threads : 16);
    int lr = fuse_session_loop_mt(se, cfg);
    fuse_loop_cfg_destroy(cfg);
    r = lr < 0 ? lr : 0;
    if (r)
        snprintf(err, errlen, "FUSE session: %s", strerror(-r));
unmount:
    fuse_session_unmount(se);
  signals:
    fuse_remove_signal_handlers(se);
destroy:
    fuse_session_destroy(se);
out:
    if (!x.read_only) {
        int fr = rk_dev_flush(dev);
        if (fr && !r) {
            snprintf(err, errlen, "flush at stop: %s", strerror(-fr));
            r = fr;
        }
    }
    pthread_mutex_destroy(&x.rmw_lock);
    return r;
}
