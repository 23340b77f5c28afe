/* rk_volume_info: read the superblocks of member files without assembling and describe the array,
 * each member and every problem found, as text for people or JSON for scripts. */
#include "raidkit/member.h"
#include "raidkit/member_nbd.h"
#include "raidkit/volume.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/util.h"
#include "meta/info_cache.h"
#include "meta/meta_int.h"
#include "raid/bitmap_disk.h"
#include "raidkit/member.h"

/* A growing text buffer; on ENOMEM it stops growing and info returns NULL. */
struct info_buf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void info_printf(struct info_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void info_printf(struct info_buf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int need = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (need < 0) {
            b->failed = true;
            return;
        }
        if (b->p && b->len + (size_t)need < b->cap) {
            b->len += (size_t)need;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)need;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->failed = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

static void info_time(uint64_t t, char *out, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(out, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(out, len, "%" PRIu64, t);
}

/* Path of the member placed in slot i, or NULL. */
static const char *info_slot_path(const struct meta_scan *s, uint32_t i)
{
    return s->slot_member[i] >= 0 ? s->m[s->slot_member[i]].path : NULL;
}

/* Check member m's write-intent bitmap area (when its superblock names one): 0, or -errno with
 * the reason in err. Reads with pread only: info writes nothing. */
static int info_check_bitmap(const struct meta_member *m, char *err, size_t errlen)
{
    const struct rk_sb *sb = &m->sb;
    if (!sb->bitmap_offset || !sb->bitmap_size || sb->bitmap_size > (1u << 20))
        return 0;
    uint8_t *area = malloc(sb->bitmap_size);
    struct rk_dev *dev = NULL; /* a file or an NBD URI member (rk_member_open) */
    int r = area ? rk_member_open(m->path, RK_FILE_READ_ONLY | RK_FILE_BUFFERED, &dev) : -ENOMEM;
    if (r) {
        snprintf(err, errlen, "cannot read: %s", strerror(-r));
    } else if ((r = rk_dev_read(dev, area, sb->bitmap_size, sb->bitmap_offset)) != 0) {
        snprintf(err, errlen, "cannot read: %s", strerror(-r));
    } else {
        struct rk_bm_hdr h;
        r = rk_bm_decode(area, sb->bitmap_size, 0, &h, err, errlen);
        if (!r && (h.region != sb->bitmap_region || memcmp(h.uuid, sb->array_uuid, 16))) {
            snprintf(err, errlen, "region or array UUID differs from the superblock");
            r = -EINVAL;
        }
    }
    rk_dev_close(dev);
    free(area);
    return r;
}

/* Problems of the scan as lines, handed to emit one by one. */
static void info_problems(const struct meta_scan *s, void (*emit)(void *ctx, const char *line),
                          void *ctx)
{
    char line[512];
    for (int i = 0; i < s->n; i++) {
        char why[200] = "";
        if (s->m[i].cls == META_OK) {
            if (info_check_bitmap(&s->m[i], why, sizeof(why)) == 0)
                continue;
            snprintf(line, sizeof(line),
                     "member %s: write-intent bitmap refused (%s): serve will not trust this copy",
                     s->m[i].path, why);
        } else {
            snprintf(line, sizeof(line), "member %s %s", s->m[i].path, s->m[i].reason);
        }
        emit(ctx, line);
    }
    if (s->master < 0)
        return;
    const struct rk_sb *sb = &s->m[s->master].sb;
    for (uint32_t i = 0; i < sb->members; i++) {
        uint32_t st = sb->slots[i].state;
        if (st == RK_SLOT_ACTIVE && s->slot_member[i] < 0) {
            snprintf(line, sizeof(line), "slot %" PRIu32 " is active but no usable member holds it",
                     i);
            emit(ctx, line);
        } else if (st != RK_SLOT_ACTIVE) {
            snprintf(line, sizeof(line), "slot %" PRIu32 " is recorded %s", i,
                     rk_slot_state_name((int)st));
            emit(ctx, line);
        }
    }
    if (sb->dirty == RK_SB_DIRTY) {
        snprintf(line, sizeof(line),
                 "array is dirty: running now, or not shut down cleanly last time");
        emit(ctx, line);
    }
    if (sb->resync_flags & RK_SB_RESYNC_PENDING) {
        snprintf(line, sizeof(line), "a %s resync is pending (the next serve runs it)",
                 sb->resync_flags & RK_SB_RESYNC_FULL ? "full" : "bitmap");
        emit(ctx, line);
    }
}

static void info_emit_text(void *ctx, const char *line)
{
    info_printf(ctx, "  - %s\n", line);
}

static void info_emit_json(void *ctx, const char *line)
{
    cJSON_AddItemToArray(ctx, cJSON_CreateString(line));
}

/* The cache devices given, after the array (text). */
static void info_text_caches(struct info_buf *b, const struct info_cache *c, int nc,
                             const struct rk_sb *array)
{
    for (int i = 0; i < nc; i++) {
        char *t = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&t, &len);
        if (!f) {
            b->failed = true;
            return;
        }
        info_cache_text(f, &c[i], array);
        fclose(f);
        info_printf(b, "%s", t ? t : "");
        free(t);
    }
}

static char *info_text(const struct meta_scan *s, const struct info_cache *caches, int nc)
{
    struct info_buf b = {0};
    char uuid[RK_UUID_STR_LEN], t1[64], t2[64], sz[32], cb[96];
    if (!s) {
        info_text_caches(&b, caches, nc, NULL);
        return b.failed ? (free(b.p), NULL) : b.p;
    }
    if (s->master >= 0) {
        const struct rk_sb *sb = &s->m[s->master].sb;
        info_time(sb->ctime, t1, sizeof(t1));
        info_time(sb->utime, t2, sizeof(t2));
        info_printf(&b, "Array %s%s%s%s\n", rk_uuid_format(sb->array_uuid, uuid),
                    sb->name[0] ? " (name \"" : "", sb->name, sb->name[0] ? "\")" : "");
        info_printf(&b, "  level:        %s, %" PRIu32 " members, chunk %" PRIu32 " KiB\n",
                    rk_level_name(sb->level), sb->members, sb->chunk / 1024);
        info_printf(&b, "  array size:   %" PRIu64 " bytes (%s)\n", sb->array_size,
                    rk_format_size(sb->array_size, sz, sizeof(sz)));
        info_printf(&b, "  data offset:  %" PRIu64 " bytes\n", sb->data_offset);
        if (rk_level_write_hole(sb->level))
            info_printf(&b, "  write hole:   %s\n",
                        sb->write_hole == RK_SB_WH_PPL ? "closed (partial parity log)" : "open");
        info_printf(&b, "  event:        %" PRIu64 "\n", sb->events);
        info_printf(&b, "  state:        %s\n", sb->dirty == RK_SB_DIRTY ? "dirty" : "clean");
        if (sb->bitmap_offset)
            info_printf(&b, "  bitmap:       internal, %" PRIu64 " KiB regions\n",
                        sb->bitmap_region / 1024);
        else
            info_printf(&b, "  bitmap:       none\n");
        info_printf(&b, "  cache:        %s\n", info_cache_binding(sb, cb, sizeof(cb)));
        info_printf(&b, "  created:      %s\n  updated:      %s\n", t1, t2);
        info_printf(&b, "Slots:\n");
        for (uint32_t i = 0; i < sb->members; i++) {
            const char *p = info_slot_path(s, i);
            info_printf(&b, "  %2" PRIu32 "  %-10s  %s  data %" PRIu64 " bytes  %s\n", i,
                        rk_slot_state_name((int)sb->slots[i].state),
                        rk_uuid_format(sb->slots[i].uuid, uuid), sb->slots[i].data_size,
                        p ? p : "(no usable member given)");
        }
        if (sb->nbad) {
            info_printf(&b, "Unreadable ranges (data-area bytes; reads never use them):\n");
            for (uint32_t i = 0; i < sb->nbad && i < RK_SB_BAD_MAX; i++)
                info_printf(&b,
                            "  slot %" PRIu32 "  [%" PRIu64 ", %" PRIu64 ")  %" PRIu64 " bytes\n",
                            sb->bad[i].slot, sb->bad[i].offset, sb->bad[i].offset + sb->bad[i].len,
                            sb->bad[i].len);
        }
    } else {
        info_printf(&b, "No valid raidkit superblock found.\n");
    }
    info_printf(&b, "Members:\n");
    for (int i = 0; i < s->n; i++) {
        const struct meta_member *m = &s->m[i];
        if (m->cls == META_UNREADABLE || m->cls == META_NOTOURS || m->cls == META_CORRUPT) {
            char why[sizeof(m->reason) + 32];
            info_printf(&b, "  %s: %s\n", m->path,
                        meta_reason_show(why, sizeof(why), meta_class_name(m->cls), m->reason));
            continue;
        }
        info_printf(&b, "  %s: %s, slot %" PRIu32 ", event %" PRIu64 ", %s, array %s\n", m->path,
                    meta_class_name(m->cls), m->sb.slot, m->sb.events,
                    m->sb.dirty == RK_SB_DIRTY ? "dirty" : "clean",
                    rk_uuid_format(m->sb.array_uuid, uuid));
    }
    size_t before = b.len;
    info_printf(&b, "Problems:\n");
    size_t mark = b.len;
    info_problems(s, info_emit_text, &b);
    if (!b.failed && b.len == mark) {
        b.len = before;
        b.p[b.len] = '\0';
        info_printf(&b, "Problems: none\n");
    }
    info_text_caches(&b, caches, nc, s->master >= 0 ? &s->m[s->master].sb : NULL);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

static cJSON *info_sb_json(const struct rk_sb *sb)
{
    char uuid[RK_UUID_STR_LEN];
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "array_uuid", rk_uuid_format(sb->array_uuid, uuid));
    cJSON_AddStringToObject(o, "member_uuid", rk_uuid_format(sb->member_uuid, uuid));
    cJSON_AddNumberToObject(o, "slot", sb->slot);
    cJSON_AddNumberToObject(o, "event", (double)sb->events);
    cJSON_AddBoolToObject(o, "clean", sb->dirty == RK_SB_CLEAN);
    cJSON_AddNumberToObject(o, "data_size", (double)sb->data_size);
    return o;
}

/* "cache" of the array object: its binding. */
static void info_json_binding(cJSON *a, const struct rk_sb *sb)
{
    char uuid[RK_UUID_STR_LEN];
    cJSON *c = cJSON_AddObjectToObject(a, "cache");
    if (!c)
        return;
    bool bound = (sb->cache_flags & RK_SB_CACHE_BOUND) != 0;
    cJSON_AddBoolToObject(c, "bound", bound);
    if (bound)
        cJSON_AddStringToObject(c, "uuid", rk_uuid_format(sb->cache_uuid, uuid));
    else
        cJSON_AddNullToObject(c, "uuid");
    cJSON_AddBoolToObject(c, "may_be_dirty", (sb->cache_flags & RK_SB_CACHE_DIRTY) != 0);
}

static char *info_json(const struct meta_scan *s, const struct info_cache *caches, int nc)
{
    char uuid[RK_UUID_STR_LEN];
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    const struct rk_sb *master = s && s->master >= 0 ? &s->m[s->master].sb : NULL;
    cJSON *cj = cJSON_AddArrayToObject(root, "caches");
    for (int i = 0; cj && i < nc; i++) {
        cJSON *o = info_cache_json(&caches[i], master);
        if (o)
            cJSON_AddItemToArray(cj, o);
    }
    if (!s) {
        cJSON_AddNullToObject(root, "array");
        char *t = cJSON_Print(root);
        cJSON_Delete(root);
        return t;
    }
    if (s->master >= 0) {
        const struct rk_sb *sb = &s->m[s->master].sb;
        cJSON *a = cJSON_AddObjectToObject(root, "array");
        if (a) {
            cJSON_AddStringToObject(a, "uuid", rk_uuid_format(sb->array_uuid, uuid));
            cJSON_AddStringToObject(a, "name", sb->name);
            cJSON_AddStringToObject(a, "level", rk_level_name(sb->level));
            cJSON_AddNumberToObject(a, "chunk", sb->chunk);
            cJSON_AddNumberToObject(a, "members", sb->members);
            cJSON_AddNumberToObject(a, "size", (double)sb->array_size);
            cJSON_AddNumberToObject(a, "data_offset", (double)sb->data_offset);
            if (rk_level_write_hole(sb->level))
                cJSON_AddStringToObject(a, "write_hole",
                                        sb->write_hole == RK_SB_WH_PPL ? "ppl" : "none");
            cJSON_AddNumberToObject(a, "event", (double)sb->events);
            cJSON_AddBoolToObject(a, "clean", sb->dirty == RK_SB_CLEAN);
            cJSON_AddNumberToObject(a, "bitmap_region", (double)sb->bitmap_region);
            info_json_binding(a, sb);
            cJSON_AddBoolToObject(a, "resync_pending",
                                  (sb->resync_flags & RK_SB_RESYNC_PENDING) != 0);
            cJSON_AddNumberToObject(a, "created", (double)sb->ctime);
            cJSON_AddNumberToObject(a, "updated", (double)sb->utime);
            cJSON *slots = cJSON_AddArrayToObject(a, "slots");
            for (uint32_t i = 0; slots && i < sb->members; i++) {
                cJSON *o = cJSON_CreateObject();
                if (!o)
                    break;
                const char *p = info_slot_path(s, i);
                cJSON_AddNumberToObject(o, "slot", i);
                cJSON_AddStringToObject(o, "state", rk_slot_state_name((int)sb->slots[i].state));
                cJSON_AddStringToObject(o, "member_uuid", rk_uuid_format(sb->slots[i].uuid, uuid));
                cJSON_AddNumberToObject(o, "data_size", (double)sb->slots[i].data_size);
                cJSON_AddNumberToObject(o, "rebuild_offset", (double)sb->slots[i].rebuild_offset);
                if (p)
                    cJSON_AddStringToObject(o, "path", p);
                else
                    cJSON_AddNullToObject(o, "path");
                cJSON_AddItemToArray(slots, o);
            }
            cJSON *bad = cJSON_AddArrayToObject(a, "bad_ranges");
            for (uint32_t i = 0; bad && i < sb->nbad && i < RK_SB_BAD_MAX; i++) {
                cJSON *o = cJSON_CreateObject();
                if (!o)
                    break;
                cJSON_AddNumberToObject(o, "slot", sb->bad[i].slot);
                cJSON_AddNumberToObject(o, "offset", (double)sb->bad[i].offset);
                cJSON_AddNumberToObject(o, "len", (double)sb->bad[i].len);
                cJSON_AddItemToArray(bad, o);
            }
        }
    } else {
        cJSON_AddNullToObject(root, "array");
    }
    cJSON *mem = cJSON_AddArrayToObject(root, "members");
    for (int i = 0; mem && i < s->n; i++) {
        const struct meta_member *m = &s->m[i];
        cJSON *o = NULL;
        if (m->cls == META_UNREADABLE || m->cls == META_NOTOURS || m->cls == META_CORRUPT)
            o = cJSON_CreateObject();
        else
            o = info_sb_json(&m->sb);
        if (!o)
            break;
        cJSON_AddStringToObject(o, "path", m->path);
        cJSON_AddStringToObject(o, "status", meta_class_name(m->cls));
        if (m->cls != META_OK)
            cJSON_AddStringToObject(o, "reason", m->reason);
        cJSON_AddItemToArray(mem, o);
    }
    cJSON *probs = cJSON_AddArrayToObject(root, "problems");
    if (probs)
        info_problems(s, info_emit_json, probs);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

char *rk_volume_info(const char *const *paths, int n, bool json, char *err, size_t errlen)
{
    if (!paths || n <= 0 || n > RK_MAX_MEMBERS) {
        rk_set_err(err, errlen, "need 1..%d member paths, got %d", RK_MAX_MEMBERS, n);
        return NULL;
    }
    struct meta_scan *s = calloc(1, sizeof(*s));
    if (!s) {
        rk_set_err(err, errlen, "out of memory");
        return NULL;
    }
    char *text = NULL;
    /* Cache devices among the paths are described on their own (docs/CLI.md "info"). */
    const char *mp[RK_MAX_MEMBERS];
    struct info_cache *caches = calloc((size_t)n, sizeof(*caches));
    int nm = 0, nc = 0;
    if (!caches) {
        rk_set_err(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (info_cache_probe(paths[i]))
            info_cache_read(paths[i], &caches[nc++]);
        else
            mp[nm++] = paths[i];
    }
    if (nm) {
        meta_scan(s, mp, nm, RK_FILE_READ_ONLY | RK_FILE_BUFFERED, true);
        meta_scan_check_sizes(s);
        meta_scan_close(s);
    }
    bool any = nc > 0;
    for (int i = 0; i < nm; i++)
        if (s->m[i].cls != META_UNREADABLE)
            any = true;
    if (!any) {
        rk_set_err(err, errlen, "no member could be read: %s %s", s->m[0].path, s->m[0].reason);
        goto out;
    }
    text = json ? info_json(nm ? s : NULL, caches, nc) : info_text(nm ? s : NULL, caches, nc);
    if (!text)
        rk_set_err(err, errlen, "out of memory");
out:
    free(caches);
    free(s);
    return text;
}
