/* Superblock I/O on one member, new member UUIDs, and the classification of a set of members
 * (usable, stale, foreign, corrupt, ...) shared by assembly (volume.c) and info (info.c). */
#include "meta/meta_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "core/util.h"
#include "raidkit/member.h"
#include "raidkit/member_nbd.h"

/* The smallest member create accepts: the metadata area it writes before the data (the data
 * offset) plus one chunk of the smallest size, 4 KiB (docs/CLI.md "create"). */
#define META_MEMBER_MIN (RK_SB_DATA_OFFSET + 4096u)

int meta_read_sb(struct rk_dev *dev, struct rk_sb *sb, char *err, size_t errlen)
{
    if (dev->size < RK_SB_SIZE) {
        /* dev->size is rounded down to the block size: a regular file says its real size. */
        struct stat st;
        uint64_t real = dev->size;
        if (stat(dev->name, &st) == 0 && S_ISREG(st.st_mode))
            real = (uint64_t)st.st_size;
        char have[32], sbneed[32], need[32];
        rk_set_err(err, errlen,
                   "too small for a raidkit member: %" PRIu64 " bytes (%s); the superblock "
                   "alone needs %u bytes (%s), a member at least %u bytes (%s)",
                   real, rk_format_size(real, have, sizeof(have)), RK_SB_SIZE,
                   rk_format_size(RK_SB_SIZE, sbneed, sizeof(sbneed)), META_MEMBER_MIN,
                   rk_format_size(META_MEMBER_MIN, need, sizeof(need)));
        return RK_SB_ENOTOURS;
    }
    /* Aligned for members opened with O_DIRECT. */
    uint8_t *buf = rk_buf_alloc(RK_SB_SIZE);
    if (!buf) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int r = rk_dev_read(dev, buf, RK_SB_SIZE, 0);
    if (r < 0) {
        rk_set_err(err, errlen, "cannot read the superblock: %s", strerror(-r));
        goto out;
    }
    r = rk_sb_decode(buf, sb, err, errlen);
    /* Bounded against the member's real size: a data area that starts beyond the end of the
     * member is an absurd field (a member merely too small for its data area is the engine's
     * refusal, "cannot hold"). */
    if (r == 0 && sb->data_offset >= dev->size) {
        rk_set_err(err, errlen,
                   "data offset %" PRIu64 " is beyond the member's size %" PRIu64 " bytes",
                   sb->data_offset, dev->size);
        r = RK_SB_EFIELD;
    }
out:
    free(buf);
    return r;
}

int meta_write_sb(struct rk_dev *dev, const struct rk_sb *sb)
{
    /* Every raise of the event counter ends here: a counter past the bound is never written, so
     * it cannot wrap to 0 and brick the array (the decoder refuses it too). */
    if (sb->events == 0 || sb->events > RK_SB_EVENTS_MAX) {
        rk_err("superblock of %s: event counter %" PRIu64 " out of [1, 2^48]; not written",
               dev->name, sb->events);
        return -EOVERFLOW;
    }
    uint8_t *buf = rk_buf_alloc(RK_SB_SIZE);
    if (!buf)
        return -ENOMEM;
    rk_sb_encode(sb, buf);
    int r = rk_dev_write(dev, buf, RK_SB_SIZE, 0, RK_WRITE_FUA);
    if (r == 0)
        r = rk_dev_flush(dev);
    free(buf);
    return r;
}

void meta_sb_for_slot(struct rk_sb *sb, uint32_t slot)
{
    sb->slot = slot;
    memcpy(sb->member_uuid, sb->slots[slot].uuid, RK_UUID_LEN);
    sb->data_size = sb->slots[slot].data_size;
}

int meta_random_uuid(uint8_t *u)
{
    size_t got = 0;
    while (got < RK_UUID_LEN) {
        ssize_t r = getrandom(u + got, RK_UUID_LEN - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        got += (size_t)r;
    }
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* RFC 4122 version 4 */
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
    return 0;
}

const char *meta_class_name(enum meta_class c)
{
    static const char *const names[] = {
        [META_OK] = "ok",
        [META_UNREADABLE] = "unreadable",
        [META_NOTOURS] = "not-raidkit",
        [META_CORRUPT] = "corrupt",
        [META_FOREIGN] = "foreign",
        [META_STALE] = "stale",
        [META_REPLACED] = "replaced",
        [META_DUPLICATE] = "duplicate",
        [META_CONFLICT] = "conflict",
        [META_TRUNCATED] = "truncated",
    };
    return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "unknown";
}

/* Fields every member of one array must agree on (per-member fields excluded). */
static bool scan_same_geometry(const struct rk_sb *a, const struct rk_sb *b)
{
    if (a->level != b->level || a->layout != b->layout || a->chunk != b->chunk ||
        a->members != b->members || a->data_offset != b->data_offset ||
        a->array_size != b->array_size)
        return false;
    for (uint32_t i = 0; i < a->members; i++)
        if (a->slots[i].data_size != b->slots[i].data_size)
            return false;
    return true;
}

/* A member one event behind the newest superblock ms, which records its slot active and held by
 * this very member, only missed the last superblock round: a round is written member by member,
 * and no data write waits on a round that did not finish on every member, so a power cut in the
 * middle of one leaves some members one event behind with nothing else missing (docs/FORMAT.md
 * "Update protocol"). Such a member is in sync; a stale member (failed, replaced, away for
 * writes) never is: the newest superblock records its slot failed or held by another member. */
static bool scan_cut_round(const struct meta_member *m, const struct rk_sb *ms)
{
    return m->sb.events + 1 == ms->events && m->sb.slot < ms->members &&
           ms->slots[m->sb.slot].state == RK_SLOT_ACTIVE &&
           memcmp(m->sb.member_uuid, ms->slots[m->sb.slot].uuid, RK_UUID_LEN) == 0 &&
           scan_same_geometry(&m->sb, ms);
}

static void scan_classify(struct meta_scan *s)
{
    char ua[RK_UUID_STR_LEN], ub[RK_UUID_STR_LEN];
    int ref = -1;
    s->master = -1;
    for (int i = 0; i < RK_MAX_MEMBERS; i++)
        s->slot_member[i] = -1;
    /* The array is the one of the first valid member given; others are foreign. */
    for (int i = 0; i < s->n; i++) {
        struct meta_member *m = &s->m[i];
        if (m->cls != META_OK)
            continue;
        if (ref < 0) {
            ref = i;
            continue;
        }
        if (memcmp(m->sb.array_uuid, s->m[ref].sb.array_uuid, RK_UUID_LEN) != 0) {
            m->cls = META_FOREIGN;
            m->rc = -EXDEV;
            snprintf(m->reason, sizeof(m->reason), "belongs to array %s, not to array %s of %s",
                     rk_uuid_format(m->sb.array_uuid, ua),
                     rk_uuid_format(s->m[ref].sb.array_uuid, ub), s->m[ref].path);
        }
    }
    if (ref < 0)
        return;
    for (int i = 0; i < s->n; i++)
        if (s->m[i].cls == META_OK &&
            (s->master < 0 || s->m[i].sb.events > s->m[s->master].sb.events))
            s->master = i;
    const struct rk_sb *ms = &s->m[s->master].sb;
    for (int i = 0; i < s->n; i++) {
        struct meta_member *m = &s->m[i];
        if (m->cls != META_OK)
            continue;
        if (m->sb.events < ms->events && scan_cut_round(m, ms)) {
            rk_warn("%s is one event behind %s (%" PRIu64 " < %" PRIu64
                    "): a superblock update was cut; the newest superblock records it active, "
                    "so it is used",
                    m->path, s->m[s->master].path, m->sb.events, ms->events);
            m->sb.events = ms->events;
        }
        if (m->sb.events < ms->events) {
            m->cls = META_STALE;
            m->rc = -ESTALE;
            snprintf(m->reason, sizeof(m->reason),
                     "is stale (slot %" PRIu32 ", event %" PRIu64 " < newest %" PRIu64
                     " of %s); not used",
                     m->sb.slot, m->sb.events, ms->events, s->m[s->master].path);
        } else if (!scan_same_geometry(&m->sb, ms)) {
            m->cls = META_CONFLICT;
            m->rc = -EINVAL;
            snprintf(m->reason, sizeof(m->reason),
                     "has event %" PRIu64 " like %s but a different geometry", m->sb.events,
                     s->m[s->master].path);
        } else if (memcmp(m->sb.member_uuid, ms->slots[m->sb.slot].uuid, RK_UUID_LEN) != 0) {
            m->cls = META_REPLACED;
            m->rc = -ESTALE;
            snprintf(m->reason, sizeof(m->reason),
                     "claims slot %" PRIu32 " but is not the member recorded there (member %s)",
                     m->sb.slot, rk_uuid_format(m->sb.member_uuid, ua));
        } else if (s->slot_member[m->sb.slot] >= 0) {
            m->cls = META_DUPLICATE;
            m->rc = -EEXIST;
            snprintf(m->reason, sizeof(m->reason), "claims slot %" PRIu32 ", already held by %s",
                     m->sb.slot, s->m[s->slot_member[m->sb.slot]].path);
        } else {
            s->slot_member[m->sb.slot] = i;
        }
    }
}

void meta_scan(struct meta_scan *s, const char *const *paths, int n, uint32_t flags, bool keep_open)
{
    memset(s, 0, sizeof(*s));
    s->n = n;
    for (int i = 0; i < n; i++) {
        struct meta_member *m = &s->m[i];
        m->path = paths[i];
        int r = rk_member_open(paths[i], flags, &m->dev);
        if (r < 0) {
            m->dev = NULL;
            m->rc = r;
            m->cls = META_UNREADABLE;
            snprintf(m->reason, sizeof(m->reason), "cannot open: %s",
                     rk_member_is_uri(paths[i]) ? rk_nbd_last_error() : strerror(-r));
            continue;
        }
        r = meta_read_sb(m->dev, &m->sb, m->reason, sizeof(m->reason));
        m->rc = r;
        /* No magic means "not ours"; magic with a bad version, header, checksum or field is a
         * damaged member (docs/CLI.md "Exit status": info exits 1 resp. 6). */
        if (r == RK_SB_ENOTOURS)
            m->cls = META_NOTOURS;
        else if (r == RK_SB_EVERSION || r == RK_SB_ECRC || r == RK_SB_EFIELD)
            m->cls = META_CORRUPT;
        else if (r < 0)
            m->cls = META_UNREADABLE;
        if (m->cls == META_CORRUPT || m->cls == META_NOTOURS) {
            /* A reason reads after "member PATH" like every other class's ("is stale ..."):
             * damaged (checksum-valid but absurd): which check failed, the member set aside. */
            char why[sizeof(m->reason)];
            memcpy(why, m->reason, sizeof(why));
            snprintf(m->reason, sizeof(m->reason), "is %s%.280s",
                     m->cls == META_CORRUPT ? "set aside: corrupt superblock: " : "", why);
        }
        if (!keep_open || m->cls != META_OK) {
            rk_dev_close(m->dev);
            m->dev = NULL;
        }
    }
    scan_classify(s);
}

void meta_scan_check_sizes(struct meta_scan *s)
{
    for (int i = 0; i < s->n; i++) {
        struct meta_member *m = &s->m[i];
        uint64_t need = m->sb.data_offset + m->sb.data_size;
        if (m->cls != META_OK || !m->dev || m->dev->size >= need)
            continue;
        m->cls = META_TRUNCATED;
        m->rc = -ENOSPC;
        snprintf(m->reason, sizeof(m->reason),
                 "is truncated: %" PRIu64 " bytes, its superblock needs %" PRIu64
                 " (data offset %" PRIu64 " + data size %" PRIu64 "); set aside, not used",
                 m->dev->size, need, m->sb.data_offset, m->sb.data_size);
        if (m->sb.slot < RK_MAX_MEMBERS && s->slot_member[m->sb.slot] == i)
            s->slot_member[m->sb.slot] = -1;
    }
}

void meta_scan_close(struct meta_scan *s)
{
    for (int i = 0; i < s->n; i++) {
        rk_dev_close(s->m[i].dev);
        s->m[i].dev = NULL;
    }
}
