/* Volume assembly: members in any order -> validated superblocks -> raid device, plus the state
 * changes that must reach the superblocks (member failed, dirty on open, clean on close). */
#include "raidkit/volume.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/util.h"
#include "meta/meta_int.h"
#include "raidkit/emul.h"
#include "raidkit/member.h"

struct rk_volume {
    /* Protects sb and every superblock write. Taken by the member_failed callback (an I/O
     * thread of the raid engine, outside engine locks) and by close/status; never held while
     * calling into the raid engine's data path. */
    pthread_mutex_t lock;
    struct rk_sb sb; /* newest state; per-member fields are filled per write */
    struct rk_raid_geom geom;
    char *paths[RK_MAX_MEMBERS];         /* path of the member in each slot, NULL when none */
    struct rk_dev *file[RK_MAX_MEMBERS]; /* rk_file_open device of each slot */
    struct rk_dev *emu[RK_MAX_MEMBERS];  /* device model over file (opts->emul), else NULL */
    struct rk_dev *top[RK_MAX_MEMBERS];  /* fault wrapper over emu/file, or emu, or file */
    struct rk_dev *raid;
    struct rk_dev *ro; /* read-only face over raid (read_only volumes), else NULL */
    bool read_only;
    bool was_dirty; /* dirty at open: the last shutdown was unclean */
    /* Online replace: devices that held a replaced slot stay open until the raid device is
     * closed (I/O to them may be in flight); file flags for new members. */
    struct rk_dev *retired[RK_MAX_MEMBERS][3];
    uint32_t file_flags;
    bool bad_overflow; /* warned that the engine holds more bad ranges than the table */
};

struct rk_dev *rk_volume_dev(struct rk_volume *v)
{
    if (!v)
        return NULL;
    return v->ro ? v->ro : v->raid;
}

/* Read-only face: members opened read-only would fail writes with EPERM, and the raid engine
 * would take that for failing members; refusing at the top keeps them healthy. */
static int vol_ro_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    return rk_dev_read(dev->priv, buf, len, off);
}

static int vol_ro_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                        uint32_t flags)
{
    return -EPERM;
}

static int vol_ro_flush(struct rk_dev *dev)
{
    return 0; /* nothing was written */
}

static int vol_ro_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    return -EPERM;
}

static int vol_ro_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    return -EPERM;
}

static const struct rk_dev_ops vol_ro_ops = {
    .kind = "read-only",
    .read = vol_ro_read,
    .write = vol_ro_write,
    .flush = vol_ro_flush,
    .discard = vol_ro_discard,
    .write_zeroes = vol_ro_write_zeroes,
};

static int vol_ro_open(struct rk_volume *v)
{
    v->ro = rk_dev_alloc(&vol_ro_ops, v->raid, v->raid->name);
    if (!v->ro)
        return -ENOMEM;
    v->ro->size = v->raid->size;
    v->ro->block_size = v->raid->block_size;
    v->ro->opt_io_size = v->raid->opt_io_size;
    v->ro->direct = v->raid->direct;
    return 0;
}

/*
 * Write the in-memory superblock to every slot that is active and has a device, raising
 * utime; raw bypasses fault wrappers. Caller holds v->lock (or owns v alone). Returns 0 or the
 * first -errno; a member whose write fails is logged, and the others are still written.
 */
static int vol_write_sbs(struct rk_volume *v, bool raw)
{
    int first = 0;
    v->sb.utime = (uint64_t)time(NULL);
    for (uint32_t i = 0; i < v->sb.members; i++) {
        /* A member being rebuilt carries the array state too (and its rebuild checkpoint). */
        if ((v->sb.slots[i].state != RK_SLOT_ACTIVE &&
             v->sb.slots[i].state != RK_SLOT_REBUILDING) ||
            !v->top[i])
            continue;
        struct rk_sb copy = v->sb;
        meta_sb_for_slot(&copy, i);
        int r = meta_write_sb(raw ? v->file[i] : v->top[i], &copy);
        if (r < 0) {
            rk_err("member %s (slot %" PRIu32 "): superblock write failed: %s", v->paths[i], i,
                   strerror(-r));
            if (!first)
                first = r;
        }
    }
    return first;
}

/*
 * Copy the engine's bad ranges (rk_raid_bad_ranges) into the superblock's bad-range table,
 * raising the event counter when the table changed. Caller holds v->lock. Returns true when it
 * changed (the caller writes the superblocks).
 */
static bool vol_sync_bad(struct rk_volume *v)
{
    struct rk_raid_bad_range br[RK_SB_BAD_MAX];
    if (!v->raid)
        return false;
    int n = rk_raid_bad_ranges(v->raid, br, RK_SB_BAD_MAX);
    if (n < 0)
        return false;
    if (n > (int)RK_SB_BAD_MAX) {
        if (!v->bad_overflow)
            rk_err("%d unreadable ranges, the superblock holds %u: the rest are not remembered "
                   "across a restart",
                   n, RK_SB_BAD_MAX);
        v->bad_overflow = true;
        n = RK_SB_BAD_MAX;
    }
    struct rk_sb_bad nb[RK_SB_BAD_MAX];
    uint32_t k = 0;
    for (int i = 0; i < n; i++) {
        /* The engine records chunk-aligned ranges; anything else could not be decoded. */
        if (br[i].slot >= v->sb.members || br[i].member_off % 512 || br[i].len % 512 || !br[i].len)
            continue;
        nb[k++] =
            (struct rk_sb_bad){.slot = br[i].slot, .offset = br[i].member_off, .len = br[i].len};
    }
    bool same = k == v->sb.nbad;
    for (uint32_t i = 0; same && i < k; i++)
        same = nb[i].slot == v->sb.bad[i].slot && nb[i].offset == v->sb.bad[i].offset &&
               nb[i].len == v->sb.bad[i].len;
    if (same)
        return false;
    memset(v->sb.bad, 0, sizeof(v->sb.bad));
    memcpy(v->sb.bad, nb, k * sizeof(nb[0]));
    v->sb.nbad = k;
    v->sb.events++;
    rk_info("bad-range table: %" PRIu32 " entr%s, event %" PRIu64, k, k == 1 ? "y" : "ies",
            v->sb.events);
    return true;
}

/* Remove slot's entries from the superblock's bad-range table (the slot is replaced). */
static void vol_drop_bad(struct rk_volume *v, uint32_t slot)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < v->sb.nbad; i++)
        if (v->sb.bad[i].slot != slot)
            v->sb.bad[k++] = v->sb.bad[i];
    for (uint32_t i = k; i < v->sb.nbad; i++)
        memset(&v->sb.bad[i], 0, sizeof(v->sb.bad[i]));
    v->sb.nbad = k;
}

/* Give the engine the bad ranges of the superblock (assembly, before any I/O). */
static void vol_load_bad(struct rk_volume *v)
{
    for (uint32_t i = 0; i < v->sb.nbad; i++) {
        const struct rk_sb_bad *b = &v->sb.bad[i];
        int r = rk_raid_add_bad_range(v->raid, b->slot, b->offset, b->len);
        if (r < 0)
            rk_err("slot %" PRIu32 ": cannot load unreadable range [%" PRIu64 ", +%" PRIu64 "): %s",
                   b->slot, b->offset, b->len, strerror(-r));
    }
}

/* rk_raid_events.member_failed: persist the failure so a restart never trusts the member. */
static void vol_member_failed(void *ctx, uint32_t slot, int error)
{
    struct rk_volume *v = ctx;
    if (slot >= v->sb.members)
        return;
    pthread_mutex_lock(&v->lock);
    if (v->sb.slots[slot].state != RK_SLOT_FAILED) {
        v->sb.slots[slot].state = RK_SLOT_FAILED;
        v->sb.events++;
        rk_warn("member %s (slot %" PRIu32 ") failed (%s); marked failed, event %" PRIu64,
                v->paths[slot] ? v->paths[slot] : "(missing)", slot,
                error ? strerror(error < 0 ? -error : error) : "on request", v->sb.events);
        vol_sync_bad(v); /* a failed slot's unreadable ranges no longer matter */
        if (!v->read_only)
            vol_write_sbs(v, false);
    }
    pthread_mutex_unlock(&v->lock);
}

/* rk_raid_events.rebuild_checkpoint: [0, offset) of slot's data area is in sync and durable. */
static void vol_rebuild_checkpoint(void *ctx, uint32_t slot, uint64_t offset)
{
    struct rk_volume *v = ctx;
    pthread_mutex_lock(&v->lock);
    if (slot < v->sb.members && v->sb.slots[slot].state == RK_SLOT_REBUILDING) {
        v->sb.slots[slot].rebuild_offset = offset;
        /* Ranges found unreadable before offset must survive a restart that resumes there. */
        vol_sync_bad(v);
        vol_write_sbs(v, false);
    }
    pthread_mutex_unlock(&v->lock);
}

/* rk_raid_events.rebuild_done: a complete rebuild makes the slot active on disk too. */
static void vol_rebuild_done(void *ctx, uint32_t slot, int result)
{
    struct rk_volume *v = ctx;
    pthread_mutex_lock(&v->lock);
    /* The ranges go to disk with (or before) the active state: never a rebuilt member whose
     * holes a restart would forget. */
    bool changed = vol_sync_bad(v);
    if (slot < v->sb.members && v->sb.slots[slot].state == RK_SLOT_REBUILDING && result == 0) {
        v->sb.slots[slot].state = RK_SLOT_ACTIVE;
        v->sb.slots[slot].rebuild_offset = 0;
        v->sb.events++;
        rk_info("member %s (slot %" PRIu32 ") rebuilt; active, event %" PRIu64, v->paths[slot],
                slot, v->sb.events);
        vol_write_sbs(v, false);
    } else if (changed && !v->read_only) {
        vol_write_sbs(v, false);
    }
    pthread_mutex_unlock(&v->lock);
}

/* Free everything of a half-built or finished volume (no superblock writes). */
static void vol_destroy(struct rk_volume *v)
{
    if (!v)
        return;
    rk_dev_close(v->ro);
    rk_dev_close(v->raid);
    for (int i = 0; i < RK_MAX_MEMBERS; i++)
        for (int k = 0; k < 3; k++)
            rk_dev_close(v->retired[i][k]);
    for (int i = 0; i < RK_MAX_MEMBERS; i++) {
        if (v->top[i] && v->top[i] != v->file[i] && v->top[i] != v->emu[i])
            rk_dev_close(v->top[i]);
        rk_dev_close(v->emu[i]);
        rk_dev_close(v->file[i]);
        free(v->paths[i]);
    }
    pthread_mutex_destroy(&v->lock);
    free(v);
}

/* Append ", item" (or "item" when empty) to a message buffer, truncating quietly. */
static void vol_append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void vol_append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* Check the scan for refusals (foreign, duplicate, conflicting members). 0 or -errno + err. */
static int vol_check_scan(const struct meta_scan *s, char *err, size_t errlen)
{
    if (s->master < 0) {
        for (int i = 0; i < s->n; i++)
            if (s->m[i].cls != META_OK) {
                rk_set_err(err, errlen, "no usable raidkit member: %s %s", s->m[i].path,
                           s->m[i].reason);
                return s->m[i].rc < 0 ? s->m[i].rc : -ENODEV;
            }
        rk_set_err(err, errlen, "no members given");
        return -EINVAL;
    }
    for (int i = 0; i < s->n; i++) {
        const struct meta_member *m = &s->m[i];
        if (m->cls == META_FOREIGN || m->cls == META_DUPLICATE || m->cls == META_CONFLICT) {
            rk_set_err(err, errlen, "member %s %s; refusing to assemble", m->path, m->reason);
            return m->rc;
        }
    }
    return 0;
}

static int vol_apply_faults(struct rk_volume *v, const struct rk_open_opts *o, char *err,
                            size_t errlen)
{
    for (int k = 0; k < o->nfaults && k < RK_MAX_MEMBERS; k++) {
        uint32_t slot = o->fault_slot[k];
        if (slot >= v->sb.members || !v->file[slot]) {
            rk_set_err(err, errlen, "fault injection: slot %" PRIu32 " has no member", slot);
            return -EINVAL;
        }
        struct rk_dev *base = v->emu[slot] ? v->emu[slot] : v->file[slot];
        if (v->top[slot] == base) {
            int r = rk_fault_open(base, false, &v->top[slot]);
            if (r < 0) {
                v->top[slot] = base;
                rk_set_err(err, errlen, "fault injection on %s: %s", v->paths[slot], strerror(-r));
                return r;
            }
        }
        char ferr[200] = "";
        const char *spec = o->fault_spec[k] ? o->fault_spec[k] : "";
        int r = rk_fault_apply_spec(v->top[slot], spec, ferr, sizeof(ferr));
        if (r < 0) {
            rk_set_err(err, errlen, "fault spec '%s' for slot %" PRIu32 ": %s", spec, slot, ferr);
            return r;
        }
    }
    return 0;
}

int rk_volume_open(const char *const *paths, int n, const struct rk_open_opts *opts,
                   struct rk_volume **out, char *err, size_t errlen)
{
    static const struct rk_open_opts defaults;
    const struct rk_open_opts *o = opts ? opts : &defaults;
    struct meta_scan *s = NULL;
    struct rk_volume *v = NULL;
    int r;
    char uuid[RK_UUID_STR_LEN];

    *out = NULL;
    if (!paths || n <= 0 || n > RK_MAX_MEMBERS) {
        rk_set_err(err, errlen, "need 1..%d member paths, got %d", RK_MAX_MEMBERS, n);
        return -EINVAL;
    }
    s = calloc(1, sizeof(*s));
    v = calloc(1, sizeof(*v));
    if (!s || !v) {
        free(v);
        v = NULL;
        r = -ENOMEM;
        rk_set_err(err, errlen, "out of memory");
        goto out;
    }
    pthread_mutex_init(&v->lock, NULL);
    v->read_only = o->read_only;
    uint32_t flags = o->file_flags | (o->read_only ? RK_FILE_READ_ONLY : 0);
    v->file_flags = flags;
    meta_scan(s, paths, n, flags, true);
    r = vol_check_scan(s, err, errlen);
    if (r)
        goto out;
    v->sb = s->m[s->master].sb;
    rk_uuid_format(v->sb.array_uuid, uuid);

    /* Members never used (stale, replaced, unreadable, corrupt) are named, then closed. */
    char unusable[512] = "";
    for (int i = 0; i < s->n; i++) {
        struct meta_member *m = &s->m[i];
        if (m->cls == META_OK)
            continue;
        rk_warn("member %s %s", m->path, m->reason);
        vol_append(unusable, sizeof(unusable), "%s%s %s", unusable[0] ? "; " : "", m->path,
                   m->reason);
        rk_dev_close(m->dev);
        m->dev = NULL;
    }

    /* Place members by slot; find active slots without a usable member. */
    char missing[160] = "";
    uint32_t nmissing = 0, nout = 0, alive = 0;
    for (uint32_t i = 0; i < v->sb.members; i++) {
        int idx = s->slot_member[i];
        uint32_t state = v->sb.slots[i].state;
        /* A member being rebuilt is kept: its rebuild resumes from the checkpoint once the
         * array runs (it serves no reads until complete). Counted as out for redundancy. */
        bool resume = state == RK_SLOT_REBUILDING && idx >= 0 && !o->read_only;
        if (state != RK_SLOT_ACTIVE && !resume) {
            /* Failed stays failed (the array already ran without it); spare and rebuilding
             * slots hold no complete data, so the engine gets no device for them. */
            nout++;
            if (idx >= 0)
                rk_warn("member %s holds slot %" PRIu32 ", recorded %s; not used", s->m[idx].path,
                        i, rk_slot_state_name((int)state));
            continue;
        }
        if (resume)
            nout++;
        if (idx < 0) {
            nmissing++;
            nout++;
            vol_append(missing, sizeof(missing), "%s%" PRIu32, missing[0] ? ", " : "", i);
            continue;
        }
        if (!resume)
            alive |= 1u << i;
        v->file[i] = v->top[i] = s->m[idx].dev;
        s->m[idx].dev = NULL; /* owned by the volume now */
        v->paths[i] = strdup(s->m[idx].path);
        if (!v->paths[i]) {
            r = -ENOMEM;
            rk_set_err(err, errlen, "out of memory");
            goto out;
        }
    }
    int maxf = rk_level_max_failed(v->sb.level, v->sb.members);
    /* The level decides which losses it survives (raid10: losses on different mirrors). */
    rk_sb_geom(&v->sb, &v->geom);
    if (rk_raid_geom_survives(&v->geom, alive) != 1) {
        rk_set_err(err, errlen,
                   "array %s: %" PRIu32 " of %" PRIu32 " members unavailable, %s survives at most "
                   "%d%s%s%s",
                   uuid, nout, v->sb.members, rk_level_name(v->sb.level), maxf,
                   unusable[0] ? " (" : "", unusable, unusable[0] ? ")" : "");
        r = -ENODEV;
        goto out;
    }
    if (nmissing && !o->degraded) {
        rk_set_err(err, errlen,
                   "array %s: slot%s %s %s active but %s no usable member%s%s%s; start with "
                   "--degraded to run without %s",
                   uuid, nmissing > 1 ? "s" : "", missing, nmissing > 1 ? "are" : "is",
                   nmissing > 1 ? "have" : "has", unusable[0] ? " (" : "", unusable,
                   unusable[0] ? ")" : "", nmissing > 1 ? "them" : "it");
        r = -ENODEV;
        goto out;
    }
    /* A crash may have left parity out of date; without the member, that block cannot be
     * recomputed (write hole), so a dirty degraded parity array needs --force. */
    if (v->sb.dirty == RK_SB_DIRTY && nout > 0 && !o->force && rk_level_write_hole(v->sb.level)) {
        rk_set_err(err, errlen,
                   "array %s was not shut down cleanly and is degraded: parity may be stale "
                   "(write hole); start with --force to accept that",
                   uuid);
        r = -EUCLEAN;
        goto out;
    }
    v->was_dirty = v->sb.dirty == RK_SB_DIRTY;
    if (v->was_dirty)
        rk_warn("array %s was not shut down cleanly (superblock dirty)", uuid);
    /* Missing from now on means failed: a member that comes back later is stale. */
    for (uint32_t i = 0; i < v->sb.members; i++)
        if (v->sb.slots[i].state == RK_SLOT_ACTIVE && !v->file[i])
            v->sb.slots[i].state = RK_SLOT_FAILED;
    /* Fault specs are checked (and wrappers built) before anything is written, so a bad spec
     * changes no member. */
    /* Device models sit on the files, below fault wrappers; superblocks keep going to the
     * files raw, so only the data path is timed. */
    for (uint32_t i = 0; o->emul && i < v->sb.members; i++) {
        if (!v->file[i])
            continue;
        r = rk_emul_open(v->file[i], false, o->emul, &v->emu[i]);
        if (r < 0) {
            v->emu[i] = NULL;
            rk_set_err(err, errlen, "device model '%s' on %s: %s", o->emul->name, v->paths[i],
                       strerror(-r));
            goto out;
        }
        v->top[i] = v->emu[i];
    }
    r = vol_apply_faults(v, o, err, errlen);
    if (r)
        goto out;
    rk_sb_geom(&v->sb, &v->geom);
    struct rk_raid_events ev = {.ctx = v,
                                .member_failed = vol_member_failed,
                                .rebuild_checkpoint = vol_rebuild_checkpoint,
                                .rebuild_done = vol_rebuild_done};
    /* Slots being rebuilt join after the engine starts (rk_raid_add_member below). */
    struct rk_dev *start_devs[RK_MAX_MEMBERS];
    for (uint32_t i = 0; i < RK_MAX_MEMBERS; i++)
        start_devs[i] =
            i < v->sb.members && v->sb.slots[i].state == RK_SLOT_REBUILDING ? NULL : v->top[i];
    r = rk_raid_open(&v->geom, start_devs, &ev, &v->raid);
    if (r < 0) {
        v->raid = NULL;
        rk_set_err(err, errlen, "array %s: cannot start %s: %s", uuid, rk_level_name(v->sb.level),
                   r == -ENODEV ? "the missing members leave data unreachable" : strerror(-r));
        goto out; /* nothing was written: a refused start changes no member */
    }
    /* Dirty is durable before the first write can reach a member (no request reaches the raid
     * device before this function returns). Written only once the engine accepted every
     * member, raw, past the fault wrappers: injected faults are for the data path. */
    if (!v->read_only) {
        if (nmissing)
            v->sb.events++;
        v->sb.dirty = RK_SB_DIRTY;
        v->sb.events++;
        r = vol_write_sbs(v, true);
        if (r < 0) {
            rk_set_err(err, errlen, "array %s: cannot mark the superblocks dirty: %s", uuid,
                       strerror(-r));
            goto out;
        }
    }
    if (v->read_only && vol_ro_open(v) < 0) {
        r = -ENOMEM;
        rk_set_err(err, errlen, "out of memory");
        goto out;
    }
    if (nmissing)
        rk_warn("array %s started degraded: slot%s %s missing", uuid, nmissing > 1 ? "s" : "",
                missing);
    /* Members being rebuilt join first (that drops their bad ranges in the engine), then the
     * recorded bad ranges load (also those found before a rebuild checkpoint), then the
     * rebuilds resume: no read or rebuild step runs before the ranges are known. */
    int added[RK_MAX_MEMBERS];
    for (uint32_t i = 0; i < v->sb.members; i++) {
        added[i] = -ENODEV;
        if (v->sb.slots[i].state == RK_SLOT_REBUILDING && v->top[i])
            added[i] = rk_raid_add_member(v->raid, i, v->top[i]);
    }
    vol_load_bad(v);
    for (uint32_t i = 0; i < v->sb.members; i++) {
        if (v->sb.slots[i].state != RK_SLOT_REBUILDING || !v->top[i])
            continue;
        uint64_t from = v->sb.slots[i].rebuild_offset;
        int a = added[i];
        if (!a)
            a = rk_raid_rebuild_start(v->raid, i, from, o->rebuild_rate);
        if (a)
            rk_warn("member %s (slot %" PRIu32 "): cannot resume its rebuild: %s", v->paths[i], i,
                    strerror(-a));
        else
            rk_info("member %s (slot %" PRIu32 "): resuming rebuild at data offset %" PRIu64,
                    v->paths[i], i, from);
    }
    *out = v;
    v = NULL;
    r = 0;
    goto out;
out:
    if (s)
        meta_scan_close(s);
    free(s);
    vol_destroy(v);
    return r;
}

int rk_volume_close(struct rk_volume *v)
{
    if (!v)
        return 0;
    /* A running rebuild checkpoints and stops before the final superblocks are written. */
    rk_raid_job_stop(v->raid);
    int r = rk_dev_flush(v->raid);
    if (r < 0)
        rk_err("array flush failed: %s; leaving it marked dirty", strerror(-r));
    if (!v->read_only) {
        pthread_mutex_lock(&v->lock);
        vol_sync_bad(v); /* written below, or by the next open's dirty write */
        if (r == 0) {
            /* Clean only after everything acknowledged is durable (the flush above). */
            v->sb.dirty = RK_SB_CLEAN;
            v->sb.events++;
            r = vol_write_sbs(v, false);
        }
        pthread_mutex_unlock(&v->lock);
    }
    vol_destroy(v);
    return r;
}

static int vol_slot_state(struct rk_volume *v, uint32_t i)
{
    int st = v->raid ? rk_raid_slot_state(v->raid, i) : -EINVAL;
    if (st < 0)
        st = (int)v->sb.slots[i].state;
    if (st == RK_SLOT_ACTIVE && !v->top[i])
        st = RK_SLOT_MISSING;
    return st;
}

char *rk_volume_status_json(struct rk_volume *v)
{
    char uuid[RK_UUID_STR_LEN];
    if (!v)
        return NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    pthread_mutex_lock(&v->lock);
    cJSON_AddStringToObject(root, "array_uuid", rk_uuid_format(v->sb.array_uuid, uuid));
    cJSON_AddStringToObject(root, "name", v->sb.name);
    cJSON_AddStringToObject(root, "level", rk_level_name(v->sb.level));
    cJSON_AddNumberToObject(root, "size", (double)v->sb.array_size);
    cJSON_AddNumberToObject(root, "chunk", v->sb.chunk);
    cJSON_AddNumberToObject(root, "members", v->sb.members);
    cJSON_AddNumberToObject(root, "event", (double)v->sb.events);
    cJSON_AddBoolToObject(root, "clean", v->sb.dirty == RK_SB_CLEAN);
    cJSON_AddBoolToObject(root, "was_dirty", v->was_dirty);
    cJSON_AddBoolToObject(root, "read_only", v->read_only);
    cJSON *arr = cJSON_AddArrayToObject(root, "slots");
    bool degraded = false;
    for (uint32_t i = 0; arr && i < v->sb.members; i++) {
        int st = vol_slot_state(v, i);
        if (st != RK_SLOT_ACTIVE)
            degraded = true;
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddNumberToObject(o, "slot", i);
        if (v->paths[i])
            cJSON_AddStringToObject(o, "path", v->paths[i]);
        else
            cJSON_AddNullToObject(o, "path");
        cJSON_AddStringToObject(o, "state", rk_slot_state_name(st));
        cJSON_AddNumberToObject(o, "data_size", (double)v->sb.slots[i].data_size);
        if (v->sb.slots[i].state == RK_SLOT_REBUILDING)
            cJSON_AddNumberToObject(o, "rebuild_offset", (double)v->sb.slots[i].rebuild_offset);
        if (v->file[i])
            cJSON_AddStringToObject(o, "io_mode", v->file[i]->direct ? "direct" : "buffered");
        cJSON_AddItemToArray(arr, o);
    }
    pthread_mutex_unlock(&v->lock);
    cJSON_AddBoolToObject(root, "degraded", degraded);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

struct rk_dev *rk_volume_raid(struct rk_volume *v)
{
    return v ? v->raid : NULL;
}

const char *rk_volume_member_path(struct rk_volume *v, uint32_t slot)
{
    return v && slot < v->sb.members ? v->paths[slot] : NULL;
}

/* Is path the same file as a current member? Returns the slot or -1. */
static int vol_same_file(struct rk_volume *v, const char *path)
{
    struct stat a, b;
    if (stat(path, &a))
        return -1;
    for (uint32_t i = 0; i < v->sb.members; i++)
        if (v->paths[i] && !stat(v->paths[i], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return (int)i;
    return -1;
}

/* Check the candidate member of slot: 0 or -errno with err. Reads its superblock. */
static int vol_check_new_member(struct rk_volume *v, uint32_t slot, const char *path,
                                struct rk_dev *dev, char *err, size_t errlen)
{
    uint64_t need = v->sb.data_offset + v->sb.slots[slot].data_size;
    char sz[32], nsz[32], ua[RK_UUID_STR_LEN], ub[RK_UUID_STR_LEN];
    if (dev->size < need) {
        rk_set_err(err, errlen,
                   "%s is too small: %s, slot %" PRIu32 " needs %s (%" PRIu64 " bytes)", path,
                   rk_format_size(dev->size, sz, sizeof(sz)), slot,
                   rk_format_size(need, nsz, sizeof(nsz)), need);
        return -ENOSPC;
    }
    struct rk_dev *raid = v->raid;
    if (dev->block_size > raid->block_size) {
        rk_set_err(err, errlen, "%s has block size %" PRIu32 ", larger than the array's %" PRIu32,
                   path, dev->block_size, raid->block_size);
        return -EINVAL;
    }
    struct rk_sb sb;
    char serr[200];
    if (meta_read_sb(dev, &sb, serr, sizeof(serr)) == 0) {
        if (memcmp(sb.array_uuid, v->sb.array_uuid, RK_UUID_LEN) != 0) {
            rk_set_err(err, errlen, "%s holds a superblock of another array (%s); wipe it first",
                       path, rk_uuid_format(sb.array_uuid, ua));
            return -EEXIST;
        }
        for (uint32_t i = 0; i < v->sb.members; i++) {
            int st = rk_raid_slot_state(raid, i);
            if (!memcmp(sb.member_uuid, v->sb.slots[i].uuid, RK_UUID_LEN) &&
                (st == RK_SLOT_ACTIVE || st == RK_SLOT_REBUILDING)) {
                rk_set_err(err, errlen, "%s is already slot %" PRIu32 " of this array (%s)", path,
                           i, rk_uuid_format(v->sb.array_uuid, ub));
                return -EEXIST;
            }
        }
    }
    return 0;
}

static int vol_random_uuid(uint8_t *u)
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

int rk_volume_replace(struct rk_volume *v, uint32_t slot, const char *path, uint64_t rate,
                      char *err, size_t errlen)
{
    struct rk_dev *dev = NULL;
    char *dup = NULL;
    int r;
    if (!v || !path) {
        rk_set_err(err, errlen, "no volume or member path");
        return -EINVAL;
    }
    if (v->read_only) {
        rk_set_err(err, errlen, "the volume is read-only");
        return -EROFS;
    }
    if (slot >= v->sb.members) {
        rk_set_err(err, errlen, "slot %" PRIu32 " out of range: the array has slots 0..%" PRIu32,
                   slot, v->sb.members - 1);
        return -EINVAL;
    }
    if (rk_level_max_failed(v->sb.level, v->sb.members) <= 0) {
        rk_set_err(err, errlen, "%s has no redundancy to rebuild a member from",
                   rk_level_name(v->sb.level));
        return -EOPNOTSUPP;
    }
    struct rk_raid_progress p;
    rk_raid_progress(v->raid, &p);
    if (p.state == RK_JOB_RUNNING) {
        if (p.kind == RK_JOB_REBUILD)
            rk_set_err(err, errlen,
                       "a rebuild of slot %" PRIu32 " is running (%.0f%%); one replace at a time",
                       p.slot, p.end ? 100.0 * (double)p.pos / (double)p.end : 0.0);
        else
            rk_set_err(err, errlen, "a scrub is running; replace after it finished");
        return -EBUSY;
    }
    int st = rk_raid_slot_state(v->raid, slot);
    if (st == RK_SLOT_ACTIVE || st == RK_SLOT_REBUILDING) {
        rk_set_err(err, errlen,
                   "slot %" PRIu32 " is %s; only a failed or missing slot can be replaced (fail "
                   "it first: raidkit fail --slot %" PRIu32 ")",
                   slot, rk_slot_state_name(st), slot);
        return -EBUSY;
    }
    int same = vol_same_file(v, path);
    if (same >= 0) {
        rk_set_err(err, errlen, "%s is already the member of slot %d", path, same);
        return -EEXIST;
    }
    r = rk_file_open(path, v->file_flags, &dev);
    if (r < 0) {
        dev = NULL;
        rk_set_err(err, errlen, "cannot open %s: %s", path, strerror(-r));
        goto out;
    }
    r = vol_check_new_member(v, slot, path, dev, err, errlen);
    if (r)
        goto out;
    dup = strdup(path);
    if (!dup) {
        r = -ENOMEM;
        rk_set_err(err, errlen, "out of memory");
        goto out;
    }

    pthread_mutex_lock(&v->lock);
    struct rk_sb_slot old = v->sb.slots[slot];
    r = vol_random_uuid(v->sb.slots[slot].uuid);
    if (!r) {
        v->sb.slots[slot].state = RK_SLOT_REBUILDING;
        v->sb.slots[slot].rebuild_offset = 0;
        v->sb.events++;
        /* The new member starts clean: the old one's unreadable ranges are not its own (the
         * engine drops them too, in rk_raid_add_member). */
        vol_drop_bad(v, slot);
        /* The new member's own superblock first: without it nothing else may change. */
        struct rk_sb copy = v->sb;
        meta_sb_for_slot(&copy, slot);
        r = meta_write_sb(dev, &copy);
        if (r) {
            v->sb.slots[slot] = old;
            v->sb.events--;
            rk_set_err(err, errlen, "cannot write the superblock of %s: %s", path, strerror(-r));
        }
    } else {
        rk_set_err(err, errlen, "getrandom: %s", strerror(-r));
    }
    if (!r) {
        /* The old devices of the slot (a failed member) retire; I/O may still be in flight. */
        struct rk_dev *olds[3] = {v->top[slot], v->emu[slot], v->file[slot]};
        for (int k = 0; k < 3; k++) {
            bool seen = false;
            for (int j = 0; j < k; j++)
                seen |= olds[j] == olds[k];
            /* Devices retired by an earlier replace of this slot had a whole rebuild to
             * drain their I/O. */
            rk_dev_close(v->retired[slot][k]);
            v->retired[slot][k] = seen ? NULL : olds[k];
        }
        free(v->paths[slot]);
        v->paths[slot] = dup;
        dup = NULL;
        v->file[slot] = v->top[slot] = dev;
        v->emu[slot] = NULL;
        vol_write_sbs(v, false);
    }
    pthread_mutex_unlock(&v->lock);
    if (r)
        goto out;
    struct rk_dev *member = dev;
    dev = NULL; /* owned by the volume now */
    r = rk_raid_add_member(v->raid, slot, member);
    if (!r)
        r = rk_raid_rebuild_start(v->raid, slot, 0, rate);
    if (r) {
        /* Back to failed on disk; the new member keeps a superblock that says rebuilding at
         * offset 0, which assembly never trusts for data. */
        rk_set_err(err, errlen, "cannot start the rebuild of slot %" PRIu32 ": %s", slot,
                   strerror(-r));
        pthread_mutex_lock(&v->lock);
        v->sb.slots[slot].state = RK_SLOT_FAILED;
        v->sb.events++;
        vol_write_sbs(v, false);
        pthread_mutex_unlock(&v->lock);
        goto out;
    }
    rk_info("replacing slot %" PRIu32 " with %s: rebuild started", slot, path);
out:
    free(dup);
    rk_dev_close(dev);
    return r;
}
