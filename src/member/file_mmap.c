/* Memory-mapped data I/O of file members on a memory file system (tmpfs, ramfs): a read or
 * write of pages the file already holds is a memcpy to or from a shared mapping of the file,
 * with no system call, page-cache lookup or inode lock (docs/ARCHITECTURE.md "Which mechanism
 * per member"; measured in bench/RESULTS.md "Memory-mapped tmpfs members"). */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "raidkit/member.h"
#include "core/util.h"
#include "member/file_int.h"

/*
 * Why only allocated pages: the page cache of a tmpfs file IS its storage, so a store into a
 * MAP_SHARED mapping is exactly what pwrite would do, minus the system call. But a store into
 * a hole makes the kernel allocate a page in the fault handler, and when the file system is
 * full that is SIGBUS instead of -ENOSPC. So every 4 KiB page has a bit in `alloc` (set = the
 * file holds the page): a request whose pages are all set is a memcpy; any other goes through
 * pread/pwrite (which allocate or fail with -ENOSPC) and then sets the bits of the pages a
 * successful write covered. The bits start from SEEK_DATA/SEEK_HOLE at open; discard and
 * write-zeroes clear the bits of every whole page they may free before they punch
 * (mmap_punch_begin), under the write side of `punch`, while memcpy writers hold its read
 * side, so no copy can run into a page being freed. Reads of holes also take pread (a read
 * fault on a hole of a shared tmpfs mapping would allocate the page).
 *
 * Not covered: another process truncating or punching the member file while it is served
 * (a copy into a page gone that way refaults it, and SIGBUS only if the file system is also
 * full, or the file shrank below the mapping).
 */
#define FILE_MMAP_PAGE 4096ull

/* Are the bits of pages [first, last] all set? */
static bool mmap_all_set(const struct file_mmap *m, uint64_t first, uint64_t last)
{
    for (uint64_t i = first; i <= last;) {
        uint64_t w = i / 64, b = i % 64;
        uint64_t n = last - i + 1 < 64 - b ? last - i + 1 : 64 - b;
        uint64_t mask = (n == 64 ? ~0ull : ((1ull << n) - 1)) << b;
        if ((atomic_load_explicit(&m->alloc[w], memory_order_acquire) & mask) != mask)
            return false;
        i += n;
    }
    return true;
}

/* Set (or clear) the bits of pages [first, last]. */
static void mmap_mark(struct file_mmap *m, uint64_t first, uint64_t last, bool set)
{
    for (uint64_t i = first; i <= last;) {
        uint64_t w = i / 64, b = i % 64;
        uint64_t n = last - i + 1 < 64 - b ? last - i + 1 : 64 - b;
        uint64_t mask = (n == 64 ? ~0ull : ((1ull << n) - 1)) << b;
        if (set)
            atomic_fetch_or_explicit(&m->alloc[w], mask, memory_order_release);
        else
            atomic_fetch_and_explicit(&m->alloc[w], ~mask, memory_order_relaxed);
        i += n;
    }
}

/* Set the bits of every page the file holds data for (SEEK_DATA/SEEK_HOLE over [0, size));
 * then map what it holds in advance (MADV_POPULATE_WRITE: no first-touch faults on the data
 * path; holes are not touched). */
static void mmap_scan(struct file_mmap *m, int fd)
{
    off_t pos = 0;
    while ((uint64_t)pos < m->size) {
        off_t d = lseek(fd, pos, SEEK_DATA);
        if (d < 0 || (uint64_t)d >= m->size)
            break;
        off_t h = lseek(fd, d, SEEK_HOLE);
        if (h < 0 || (uint64_t)h > m->size)
            h = (off_t)m->size;
        /* Whole pages inside the data extent only: a partial page at either end stays clear
         * (pread/pwrite then, always safe). */
        uint64_t first = ((uint64_t)d + FILE_MMAP_PAGE - 1) / FILE_MMAP_PAGE;
        uint64_t end = (uint64_t)h / FILE_MMAP_PAGE;
        if (end > first) {
            mmap_mark(m, first, end - 1, true);
#ifdef MADV_POPULATE_WRITE
            (void)madvise(m->base + first * FILE_MMAP_PAGE, (end - first) * FILE_MMAP_PAGE,
                          MADV_POPULATE_WRITE);
#endif
        }
        if (h <= d)
            break;
        pos = h;
    }
}

int file_mmap_setup(struct file_priv *p, uint64_t size)
{
    struct file_mmap *m = &p->mm;
    uint64_t pages = size / FILE_MMAP_PAGE;
    if (!pages)
        return -EINVAL;
    m->alloc = calloc((pages + 63) / 64, sizeof(*m->alloc));
    if (!m->alloc)
        return -ENOMEM;
    m->size = pages * FILE_MMAP_PAGE;
    void *base = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (base == MAP_FAILED) {
        int r = -errno;
        free(m->alloc);
        m->alloc = NULL;
        return r;
    }
    m->base = base;
    /* A child of the server (serve --run) need not copy the page tables. */
    (void)madvise(m->base, m->size, MADV_DONTFORK);
    pthread_rwlock_init(&m->punch, NULL);
    mmap_scan(m, p->fd);
    p->mapped = true;
    return 0;
}

void file_mmap_teardown(struct file_priv *p)
{
    struct file_mmap *m = &p->mm;
    if (!p->mapped)
        return;
    munmap(m->base, m->size);
    free(m->alloc);
    pthread_rwlock_destroy(&m->punch);
    p->mapped = false;
}

int file_mmap_io(struct file_priv *p, bool write, void *buf, uint64_t len, uint64_t off)
{
    struct file_mmap *m = &p->mm;
    if (!len || off + len > m->size || off + len < off)
        return 1;
    uint64_t first = off / FILE_MMAP_PAGE, last = (off + len - 1) / FILE_MMAP_PAGE;
    if (!write) {
        /* A read racing a punch reads zeroes or old data either way, as pread would. */
        if (!mmap_all_set(m, first, last))
            return 1;
        memcpy(buf, m->base + off, len);
        return 0;
    }
    pthread_rwlock_rdlock(&m->punch);
    int r = 0;
    if (mmap_all_set(m, first, last)) {
        memcpy(m->base + off, buf, len);
    } else {
        r = file_pio(p, true, buf, len, off);
        if (r == 0)
            mmap_mark(m, first, last, true);
    }
    pthread_rwlock_unlock(&m->punch);
    return r;
}

/* Around a hole punch of [off, off+len): begin waits for the writes by memcpy in flight, holds
 * off new ones and forgets the whole pages of the range; end lets writes go on. */
static void mmap_punch_begin(struct file_priv *p, uint64_t len, uint64_t off)
{
    struct file_mmap *m = &p->mm;
    pthread_rwlock_wrlock(&m->punch);
    if (off >= m->size)
        return;
    if (len > m->size - off)
        len = m->size - off;
    /* Whole pages only: the kernel zeroes a partial page in place, it keeps it. */
    uint64_t first = (off + FILE_MMAP_PAGE - 1) / FILE_MMAP_PAGE;
    uint64_t end = (off + len) / FILE_MMAP_PAGE;
    if (end > first)
        mmap_mark(m, first, end - 1, false);
}

static void mmap_punch_end(struct file_priv *p)
{
    pthread_rwlock_unlock(&p->mm.punch);
}

int file_mmap_discard(struct file_priv *p, uint64_t len, uint64_t off)
{
    mmap_punch_begin(p, len, off);
    int r = fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len)
                ? -errno
                : 0;
    mmap_punch_end(p);
    return r;
}

int file_mmap_write_zeroes(struct file_priv *p, uint64_t len, uint64_t off, uint32_t flags)
{
    mmap_punch_begin(p, len, off);
    int r = file_zero_range(p, len, off, flags);
    mmap_punch_end(p);
    return r;
}

/* Does a member get memcpy I/O through a shared mapping? A writable regular file on tmpfs or
 * ramfs, unless RAIDKIT_MEMBER_IO names another path (=inline: pread/pwrite in the submitter's
 * thread, the path before mappings; measurements, tests). */
bool file_mmap_wanted(int fd, const struct stat *st, uint32_t flags)
{
    const char *env = getenv("RAIDKIT_MEMBER_IO");
    if ((env && *env && strcmp(env, "mmap")) || (flags & RK_FILE_READ_ONLY) ||
        !S_ISREG(st->st_mode))
        return false;
    struct statfs sf;
    return fstatfs(fd, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}
