/* Volume assembly in phases (members in any order -> validated superblocks -> members placed
 * by slot -> redundancy policy -> member stack -> raid engine -> write log -> bitmap and
 * resync decision -> cache layer -> dirty mark -> resumed jobs, the resync last), and the clean
 * close. The
 * on-disk format is docs/FORMAT.md. */
#include "raidkit/volume.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/readonly.h"
#include "core/util.h"
#include "meta/volume_int.h"
#include "raidkit/emul.h"
#include "raidkit/member.h"

/* What one assembly learnt so far, handed from phase to phase. */
struct vol_asm {
    const struct rk_open_opts *o;
    struct meta_scan *s;
    char uuid[RK_UUID_STR_LEN];
    char unusable[512]; /* "path reason; ..." of the members never used */
    char missing[160];  /* "0, 2": active slots without a usable member */
    uint32_t nmissing;  /* active slots without a usable member */
    uint32_t nout;      /* slots that hold no complete data (missing, failed, rebuilding...) */
    uint32_t alive;     /* bit i: slot i has a member with complete data */
    char *err;
    size_t errlen;
};

struct rk_dev *rk_volume_dev(struct rk_volume *v)
{
    if (!v)
        return NULL;
    return v->ro ? v->ro : v->cache_dev ? v->cache_dev : v->raid;
}

struct rk_dev *rk_volume_raid(struct rk_volume *v)
{
    return v ? v->raid : NULL;
}

const char *rk_volume_member_path(struct rk_volume *v, uint32_t slot)
{
    return v && slot < v->sb.members ? v->paths[slot] : NULL;
}

/* Free everything of a half-built or finished volume (no superblock writes). */
static void vol_destroy(struct rk_volume *v)
{
    if (!v)
        return;
    rk_dev_close(v->cache_dev);
    rk_dev_close(v->ro);
    rk_dev_close(v->raid);
    for (int i = 0; i < RK_MAX_MEMBERS; i++)
        for (int k = 0; k < VOL_RETIRED_DEVS; k++)
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
/* Wrap the member of each opts fault slot in a fault member (once per slot) and apply its spec.
 * 0 or -errno with err (-EINVAL for a slot without member or a bad spec). */
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

/* Phase 1, scan: read every member's superblock, set truncated members aside, refuse foreign,
 * duplicate and conflicting members, take the newest superblock, and name (then close) the
 * members never used. */
static int vol_scan_members(struct rk_volume *v, struct vol_asm *a, const char *const *paths, int n)
{
    struct meta_scan *s = a->s;
    v->file_flags = a->o->file_flags | (a->o->read_only ? RK_FILE_READ_ONLY : 0);
    meta_scan(s, paths, n, v->file_flags, true);
    meta_scan_check_sizes(s); /* a truncated member is set aside: its slot is missing */
    int r = vol_check_scan(s, a->err, a->errlen);
    if (r)
        return r;
    v->sb = s->m[s->master].sb;
    rk_uuid_format(v->sb.array_uuid, a->uuid);
    /* Members never used (stale, replaced, unreadable, corrupt) are named, then closed. */
    for (int i = 0; i < s->n; i++) {
        struct meta_member *m = &s->m[i];
        if (m->cls == META_OK)
            continue;
        rk_warn("member %s %s", m->path, m->reason);
        vol_append(a->unusable, sizeof(a->unusable), "%s%s %s", a->unusable[0] ? "; " : "", m->path,
                   m->reason);
        rk_dev_close(m->dev);
        m->dev = NULL;
    }
    return 0;
}

/* Phase 2, place members by slot: the volume takes the device of each usable member; count
 * the active slots without one (missing) and the slots that hold no complete data (out). */
static int vol_place_members(struct rk_volume *v, struct vol_asm *a)
{
    struct meta_scan *s = a->s;
    for (uint32_t i = 0; i < v->sb.members; i++) {
        int idx = s->slot_member[i];
        uint32_t state = v->sb.slots[i].state;
        /* A member being rebuilt is kept: its rebuild resumes from the checkpoint once the
         * array runs (it serves no reads until complete). Counted as out for redundancy. */
        bool resume = state == RK_SLOT_REBUILDING && idx >= 0 && !a->o->read_only;
        if (state != RK_SLOT_ACTIVE && !resume) {
            /* Failed stays failed (the array already ran without it); spare and rebuilding
             * slots hold no complete data, so the engine gets no device for them. */
            a->nout++;
            if (idx >= 0)
                rk_warn("member %s holds slot %" PRIu32 ", recorded %s; not used", s->m[idx].path,
                        i, rk_slot_state_name((int)state));
            continue;
        }
        if (resume)
            a->nout++;
        if (idx < 0) {
            a->nmissing++;
            a->nout++;
            vol_append(a->missing, sizeof(a->missing), "%s%" PRIu32, a->missing[0] ? ", " : "", i);
            continue;
        }
        if (!resume)
            a->alive |= 1u << i;
        v->present |= 1u << i;
        v->file[i] = v->top[i] = s->m[idx].dev;
        s->m[idx].dev = NULL; /* owned by the volume now */
        v->paths[i] = strdup(s->m[idx].path);
        if (!v->paths[i]) {
            rk_set_err(a->err, a->errlen, "out of memory");
            return -ENOMEM;
        }
    }
    return 0;
}

/* Part of phase 3: a degraded parity array whose full resync (the initial sync of members that
 * could not be zeroed, or a full resync after a crash without a bitmap) has not finished holds
 * parity that was never made valid from its checkpoint on; the write log covers only stripes
 * written since, so a chunk of a missing member there is reconstructed as garbage (md refuses
 * a degraded start of an array not in sync the same way). Refused without --force, warned with
 * it. Returns 0 or -EUCLEAN + a->err. */
static int vol_check_full_resync(struct rk_volume *v, struct vol_asm *a, bool hole)
{
    uint32_t f = v->sb.resync_flags;
    if (!hole || a->nout == 0 || !(f & RK_SB_RESYNC_PENDING) || !(f & RK_SB_RESYNC_FULL))
        return 0;
    uint64_t total = vol_max_data(v), from = v->sb.resync_offset < total ? v->sb.resync_offset : 0;
    uint64_t left = total - from;
    unsigned pct = total ? (unsigned)(left * 100 / total) : 100;
    if (!a->o->force) {
        rk_set_err(a->err, a->errlen,
                   "array %s is degraded and its initial sync (a full resync) has not finished: "
                   "parity from member data offset %" PRIu64 " on (%" PRIu64 " of %" PRIu64
                   " bytes per member, %u%%) was never made valid, so a chunk of the missing "
                   "member there would read as garbage; re-add the missing member, or start "
                   "with every member and let the sync finish, or start with --force to "
                   "accept that",
                   a->uuid, from, left, total, pct);
        return -EUCLEAN;
    }
    rk_warn("array %s started degraded with --force although its initial sync (a full resync) "
            "has not finished: %" PRIu64 " of %" PRIu64 " bytes per member (%u%%, from member "
            "data offset %" PRIu64 ") hold parity that was never made valid; chunks of the "
            "missing member there read as garbage",
            a->uuid, left, total, pct, from);
    return 0;
}

/* Phase 3, redundancy policy: the level must survive the slots that are out; missing members
 * need --degraded; a dirty degraded array of a level with a write hole needs --force. Then
 * missing slots are recorded failed (in memory; written with the dirty mark). */
static int vol_check_redundancy(struct rk_volume *v, struct vol_asm *a)
{
    const char *un = a->unusable;
    int maxf = rk_level_max_failed(v->sb.level, v->sb.members);
    /* The level decides which losses it survives (e.g. losses on different mirrors). */
    rk_sb_geom(&v->sb, &v->geom);
    if (rk_raid_geom_survives(&v->geom, a->alive) != 1) {
        rk_set_err(a->err, a->errlen,
                   "array %s: %" PRIu32 " of %" PRIu32 " members unavailable, %s survives at most "
                   "%d%s%s%s",
                   a->uuid, a->nout, v->sb.members, rk_level_name(v->sb.level), maxf,
                   un[0] ? " (" : "", un, un[0] ? ")" : "");
        return -ENODEV;
    }
    uint32_t nm = a->nmissing;
    if (nm && !a->o->degraded) {
        rk_set_err(a->err, a->errlen,
                   "array %s: slot%s %s %s active but %s no usable member%s%s%s; start with "
                   "--degraded to run without %s",
                   a->uuid, nm > 1 ? "s" : "", a->missing, nm > 1 ? "are" : "is",
                   nm > 1 ? "have" : "has", un[0] ? " (" : "", un, un[0] ? ")" : "",
                   nm > 1 ? "them" : "it");
        return -ENODEV;
    }
    /* A crash may have left parity out of date; without the member, that block cannot be
     * recomputed (write hole), so a dirty (or resync-pending) degraded parity array needs
     * --force, unless its write log closes the hole: a writable open replays it before serving
     * (vol_start_log). A read-only open replays nothing (it writes nothing): its log closes
     * the hole only when there is nothing to replay: after a clean stop, or when the log holds
     * no live entry (no write was in flight at the crash), which vol_start_log checks once the
     * engine can read the log (log_check). */
    bool hole = rk_level_write_hole(v->sb.level);
    bool has_log = hole && v->sb.write_hole != RK_SB_WH_NONE;
    v->log_closes_hole = has_log && (!v->read_only || v->sb.dirty != RK_SB_DIRTY);
    v->log_check =
        has_log && v->read_only && v->sb.dirty == RK_SB_DIRTY && a->nout > 0 && !a->o->force;
    if (hole && v->sb.write_hole == RK_SB_WH_NONE)
        rk_warn("array %s has no write-hole protection (created without a partial parity "
                "log): a crash while degraded can corrupt data",
                a->uuid);
    bool unsynced = v->sb.dirty == RK_SB_DIRTY || (v->sb.resync_flags & RK_SB_RESYNC_PENDING);
    int r = vol_check_full_resync(v, a, hole);
    if (r)
        return r;
    if (unsynced && a->nout > 0 && !a->o->force && hole && !v->log_closes_hole && !v->log_check) {
        rk_set_err(a->err, a->errlen,
                   "array %s was not shut down cleanly and is degraded: parity may be stale "
                   "(write hole); start with --force to accept that",
                   a->uuid);
        return -EUCLEAN;
    }
    if (unsynced && a->nout > 0 && hole && !v->log_closes_hole && !v->log_check)
        rk_warn("array %s started dirty and degraded with --force: parity may be stale (write "
                "hole), so a chunk of a missing member in a stripe written at the crash may read "
                "as garbage; scrub after the missing member is back",
                a->uuid);
    v->was_dirty = v->sb.dirty == RK_SB_DIRTY;
    if (v->was_dirty)
        rk_warn("array %s was not shut down cleanly (superblock dirty)", a->uuid);
    else if (v->sb.resync_flags & RK_SB_RESYNC_PENDING)
        rk_warn("array %s is not in sync yet: a resync is pending", a->uuid);
    /* Missing from now on means failed: a member that comes back later is stale. */
    for (uint32_t i = 0; i < v->sb.members; i++)
        if (v->sb.slots[i].state == RK_SLOT_ACTIVE && !v->file[i])
            v->sb.slots[i].state = RK_SLOT_FAILED;
    return 0;
}

/* Phase 4, stack members: device models on the files (opts->emul), fault wrappers above them
 * (opts->fault_*). Built before anything is written, so a bad spec changes no member;
 * superblocks keep going to the files raw, so only the data path is timed or faulted. */
static int vol_stack_members(struct rk_volume *v, struct vol_asm *a)
{
    const struct rk_open_opts *o = a->o;
    for (uint32_t i = 0; o->emul && i < v->sb.members; i++) {
        if (!v->file[i])
            continue;
        int r = rk_emul_open(v->file[i], false, o->emul, &v->emu[i]);
        if (r < 0) {
            v->emu[i] = NULL;
            rk_set_err(a->err, a->errlen, "device model '%s' on %s: %s", o->emul->name, v->paths[i],
                       strerror(-r));
            return r;
        }
        v->top[i] = v->emu[i];
    }
    return vol_apply_faults(v, o, a->err, a->errlen);
}

/* Phase 5, start the engine over the stacked members (slots being rebuilt join later, in
 * vol_resume_jobs), and the read-only filter over it for read-only volumes. Nothing is written:
 * a refused start changes no member. */
static int vol_start_engine(struct rk_volume *v, struct vol_asm *a)
{
    struct rk_raid_events ev = vol_events(v);
    vol_resync_events(&ev);
    struct rk_dev *start_devs[RK_MAX_MEMBERS];
    for (uint32_t i = 0; i < RK_MAX_MEMBERS; i++)
        start_devs[i] =
            i < v->sb.members && v->sb.slots[i].state == RK_SLOT_REBUILDING ? NULL : v->top[i];
    int r = rk_raid_open(&v->geom, start_devs, &ev, &v->raid);
    if (r < 0) {
        v->raid = NULL;
        rk_set_err(a->err, a->errlen, "array %s: cannot start %s: %s", a->uuid,
                   rk_level_name(v->sb.level),
                   r == -ENODEV ? "the missing members leave data unreachable" : strerror(-r));
        return r;
    }
    if (v->read_only && rk_readonly_open(v->raid, &v->ro) < 0) {
        rk_set_err(a->err, a->errlen, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

/* A dirty (or resync-pending) raid5/raid6 served read-only: no replay, no resync. The stripes
 * nothing vouches for are not rebuilt from their parity (a read that needs it fails): those of
 * the log's live entries (the log check's verdict, r5_row_suspect; every stripe when the log
 * cannot be trusted), and without a log or with a resync still owed the regions the bitmap
 * marks unsynced (rk_raid_distrust_unsynced; not with --force, which accepts stale parity). A
 * degraded start without --force had its log check in vol_start_log (log_check). */
static void vol_ro_parity_guard(struct rk_volume *v, const struct vol_asm *a)
{
    bool pending = v->sb.resync_flags & RK_SB_RESYNC_PENDING;
    bool dirty = v->sb.dirty == RK_SB_DIRTY;
    bool has_log = v->sb.write_hole != RK_SB_WH_NONE;
    if (!rk_level_write_hole(v->sb.level))
        return;
    if (dirty && has_log && !v->log_check) {
        int c = rk_raid_log_start(v->raid, RK_LOG_CHECK);
        if (c == -EUCLEAN || c == -EBADMSG)
            rk_warn("array %s was not shut down cleanly and its partial parity log %s: a "
                    "read-only start replays nothing, so a read that needs parity in %s (a "
                    "member's read error, a missing member) fails with an I/O error instead of "
                    "returning what a torn stripe holds; start without --read-only to replay "
                    "the log",
                    a->uuid,
                    c == -EUCLEAN ? "holds writes that were in flight"
                                  : "cannot be read or trusted on every member present",
                    c == -EUCLEAN ? "the stripes they wrote" : "any stripe");
    }
    if (!a->o->force && (dirty || pending) && (!has_log || pending)) {
        rk_raid_distrust_unsynced(v->raid);
        rk_warn("array %s: until a writable start resyncs it, a read that needs parity in an "
                "unsynced region (a member's read error, a failed member) fails with an I/O "
                "error instead of returning what stale parity gives",
                a->uuid);
    }
}

/* Phase 5b, write log (writable volumes of levels with one): after an unclean shutdown its
 * entries are replayed before any request, then it restarts empty (rk_raid_log_start). */
static int vol_start_log(struct rk_volume *v, struct vol_asm *a)
{
    /* A resync left unfinished by an earlier crash (pending) may still owe stripes the parity
     * that an earlier forced start could not prove: only a writable start finishes it. */
    if (v->read_only && v->log_check) {
        /* Why the log cannot vouch for the stripes: said as it is, in both wordings. */
        const char *why = NULL;
        int c = v->sb.resync_flags & RK_SB_RESYNC_PENDING
                    ? -EAGAIN
                    : rk_raid_log_start(v->raid, RK_LOG_CHECK); /* reads only */
        if (c == -EAGAIN)
            why = "a resync that an earlier start left unfinished is still pending (only a "
                  "writable start finishes it)";
        else if (c == -EUCLEAN)
            why = "its partial parity log holds writes that were in flight";
        else if (c == -EBADMSG)
            why = "its partial parity log cannot be read or trusted on every member present "
                  "(a block that could hold a write in flight is unreadable or corrupt)";
        else if (c < 0)
            why = "its partial parity log could not be checked";
        if (why && a->o->precheck)
            rk_set_err(a->err, a->errlen,
                       "array %s was not shut down cleanly and is degraded, and %s: the array "
                       "must be made consistent before a member is rebuilt or re-added, and this "
                       "offline command changes nothing until every check passed; start the "
                       "array once writable (raidkit serve --degraded with these members, then "
                       "stop it: the log is replayed, or the start says which stripes it cannot "
                       "prove), then run this command again, or run it online (--control)",
                       a->uuid, why);
        else if (why)
            rk_set_err(a->err, a->errlen,
                       "array %s was not shut down cleanly and is degraded, and %s: a read-only "
                       "start cannot close the write hole (it writes nothing), so a stripe "
                       "written at the crash could read garbage; start without --read-only (the "
                       "log is replayed before anything is served), or with --force to accept "
                       "that",
                       a->uuid, why);
        if (why)
            return c == -EAGAIN || c == -EBADMSG ? -EUCLEAN : c;
    }
    if (v->read_only) {
        vol_ro_parity_guard(v, a);
        return 0;
    }
    int mode = v->was_dirty ? RK_LOG_REPLAY | (a->o->force ? RK_LOG_FORCE : 0) : 0;
    int r = rk_raid_log_start(v->raid, mode);
    if (r == -EUCLEAN) /* docs/FORMAT.md "Partial parity log", "What it does not cover" */
        rk_set_err(a->err, a->errlen,
                   "array %s was not shut down cleanly and is degraded: its partial parity log "
                   "cannot make every stripe consistent (a write in flight modified a chunk on "
                   "a missing member, or a member's log cannot be read or trusted), so those "
                   "stripes could read garbage; bring the missing member(s) back (re-add), or "
                   "start with --force to accept that",
                   a->uuid);
    else if (r < 0)
        rk_set_err(a->err, a->errlen, "array %s: cannot start its write log: %s", a->uuid,
                   strerror(-r));
    return r < 0 ? r : 0;
}

/* Phase 6, mark dirty (writable volumes): durable before the first write can reach a member
 * (no request reaches the raid device before rk_volume_open returns). Written only once the
 * engine accepted every member, raw, past the fault wrappers: injected faults are for the
 * data path. Missing members raise the event counter once more (they are failed now). */
static int vol_mark_dirty(struct rk_volume *v, struct vol_asm *a)
{
    if (v->read_only)
        return 0;
    if (a->nmissing)
        v->sb.events++;
    v->sb.dirty = RK_SB_DIRTY;
    v->sb.events++;
    int r = vol_write_sbs(v, true);
    if (r < 0)
        rk_set_err(a->err, a->errlen, "array %s: cannot mark the superblocks dirty: %s", a->uuid,
                   strerror(-r));
    return r < 0 ? r : 0;
}

/* Phase 7, resume jobs: members being rebuilt join first (that drops their bad ranges in the
 * engine), then the recorded bad ranges load (also those found before a rebuild checkpoint),
 * then the rebuilds resume: no read or rebuild step runs before the ranges are known. A
 * rebuild that cannot resume is logged; the volume runs without it. */
static void vol_resume_jobs(struct rk_volume *v, struct vol_asm *a)
{
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
        int r = added[i];
        if (!r)
            r = vol_rebuild_resume(v, i, a->o->rebuild_rate); /* a re-add stays one */
        if (r)
            rk_warn("member %s (slot %" PRIu32 "): cannot resume its rebuild: %s", v->paths[i], i,
                    strerror(-r));
        else
            rk_info("member %s (slot %" PRIu32 "): resuming %s at data offset %" PRIu64,
                    v->paths[i], i, v->sb.readd_slots & (1u << i) ? "re-add" : "rebuild", from);
    }
    vol_resync_start(v, a->o->rebuild_rate);
}

int rk_volume_open(const char *const *paths, int n, const struct rk_open_opts *opts,
                   struct rk_volume **out, char *err, size_t errlen)
{
    static const struct rk_open_opts defaults;
    struct vol_asm a = {.o = opts ? opts : &defaults, .err = err, .errlen = errlen};
    *out = NULL;
    if (!paths || n <= 0 || n > RK_MAX_MEMBERS) {
        rk_set_err(err, errlen, "need 1..%d member paths, got %d", RK_MAX_MEMBERS, n);
        return -EINVAL;
    }
    a.s = calloc(1, sizeof(*a.s));
    struct rk_volume *v = calloc(1, sizeof(*v));
    if (!a.s || !v) {
        free(a.s);
        free(v);
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&v->lock, NULL);
    v->read_only = a.o->read_only;
    int r = vol_scan_members(v, &a, paths, n);
    if (!r)
        r = vol_place_members(v, &a);
    if (!r)
        r = vol_check_redundancy(v, &a);
    if (!r)
        r = vol_stack_members(v, &a);
    if (!r)
        r = vol_start_engine(v, &a);
    if (!r)
        r = vol_start_log(v, &a);
    if (!r)
        r = vol_bitmap_setup(v, err, errlen);
    if (!r)
        r = vol_cache_setup(v, a.o, err, errlen);
    if (!r)
        r = vol_mark_dirty(v, &a);
    if (!r) {
        if (a.nmissing)
            rk_warn("array %s started degraded: slot%s %s missing", a.uuid,
                    a.nmissing > 1 ? "s" : "", a.missing);
        vol_resume_jobs(v, &a);
        *out = v;
        v = NULL;
    }
    meta_scan_close(a.s);
    free(a.s);
    vol_destroy(v);
    return r;
}

int rk_volume_close(struct rk_volume *v)
{
    if (!v)
        return 0;
    vol_remote_stop(v); /* no automatic re-add from here on */
    /* The cache first: its data and metadata durable, then the backing flushed (dirty blocks
     * stay dirty on the cache device). */
    int cr = vol_cache_close(v);
    /* A running rebuild checkpoints and stops before the final superblocks are written; a
     * resync waiting for it starts no more. */
    vol_resync_helper_stop(v);
    rk_raid_job_stop(v->raid);
    int r = rk_dev_flush(v->raid);
    if (r < 0)
        rk_err("array flush failed: %s; leaving it marked dirty", strerror(-r));
    else if (cr < 0) /* the next start then trusts only the cache's dirty blocks */
        r = cr;
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
