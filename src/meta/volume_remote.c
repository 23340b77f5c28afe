/* Remote members of a served volume (docs/CLI.md "Member URIs", docs/ARCHITECTURE.md "Remote
 * members"): one watcher thread per volume that
 *   - fails an active or rebuilding nbd member whose connection died while no request used it
 *     (so the failure is recorded in the others' superblocks at once, as an I/O error would);
 *   - reconnects a failed (or missing) URI member with exponential backoff and, when the
 *     member's own superblock proves it is the slot's member that left (this array, the
 *     slot's member UUID, no event newer than the one it held when it failed), re-adds it
 *     through rk_volume_readd (the write-intent bitmap: only what changed is resynced).
 *     A member that proves anything else is refused for good (status says why; `re-add` or
 *     `replace --with` by hand), never trusted.
 * The thread holds its own lock only around its per-slot state and never while taking
 * v->lock (status takes v->lock, then this lock). */
#include "meta/volume_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "core/util.h"
#include "raidkit/member.h"
#include "raidkit/member_nbd.h"
#include "raidkit/member_rbd.h"

#define REMOTE_TICK_MS                200
#define REMOTE_BACKOFF_MS_DEFAULT     1000u
#define REMOTE_BACKOFF_MAX_MS_DEFAULT 30000u

enum rs_state { RS_NONE = 0, RS_WAITING, RS_CONNECTING, RS_READDING, RS_BACK, RS_REFUSED };

static const char *const rs_names[] = {"none",      "waiting",     "connecting",
                                       "re-adding", "reconnected", "refused"};

struct rs_slot {
    int state;           /* enum rs_state */
    unsigned attempts;   /* connection attempts since the member failed */
    uint64_t next_ns;    /* CLOCK_MONOTONIC time of the next attempt (waiting) */
    uint64_t backoff_ms; /* wait before the next attempt after a failed one */
    uint64_t resynced;   /* bytes the last finished re-add resynced */
    char err[200];       /* why the last attempt failed, or why it is refused */
};

struct vol_remote {
    struct rk_volume *v;
    pthread_t thread;
    pthread_mutex_t lock; /* stop, s[] */
    pthread_cond_t cond;  /* stop */
    bool stop;
    uint64_t rate, backoff0_ms, backoff_max_ms;
    struct rs_slot s[RK_MAX_MEMBERS];
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t env_ms(const char *name, uint64_t def)
{
    const char *e = getenv(name);
    char *end;
    unsigned long long n = e && *e ? strtoull(e, &end, 10) : 0;
    return e && *e && !*end && n > 0 ? n : def;
}

static void rs_set(struct vol_remote *w, uint32_t i, int state, const char *err)
{
    pthread_mutex_lock(&w->lock);
    w->s[i].state = state;
    if (err)
        snprintf(w->s[i].err, sizeof(w->s[i].err), "%s", err);
    pthread_mutex_unlock(&w->lock);
}

/*
 * Does the member at path prove to be slot's member that left? Opens it, reads its superblock,
 * closes it. Returns 0 (yes), -EAGAIN with why (not reachable: try again later) or -EPERM
 * with why (reachable, but not provably that member: refused).
 */
static int remote_prove(struct rk_volume *v, uint32_t slot, const char *path, char *why, size_t len)
{
    struct rk_dev *dev = NULL;
    int r = rk_member_open(path, v->file_flags, &dev);
    if (r) {
        snprintf(why, len, "cannot connect: %s",
                 rk_member_is_rbd(path) ? rk_rbd_last_error() : rk_nbd_last_error());
        return -EAGAIN;
    }
    struct rk_sb msb;
    char serr[160] = "";
    r = meta_read_sb(dev, &msb, serr, sizeof(serr));
    rk_dev_close(dev);
    if (r == -EIO || r == -ETIMEDOUT || r == -ECONNRESET) {
        snprintf(why, len, "superblock read failed: %s", strerror(-r));
        return -EAGAIN;
    }
    pthread_mutex_lock(&v->lock);
    uint64_t fail_ev = v->fail_events[slot], now_ev = v->sb.events;
    bool same_array = !r && !memcmp(msb.array_uuid, v->sb.array_uuid, RK_UUID_LEN);
    bool same_member = !r && !memcmp(msb.member_uuid, v->sb.slots[slot].uuid, RK_UUID_LEN);
    pthread_mutex_unlock(&v->lock);
    if (r)
        snprintf(why, len, "it holds no usable raidkit superblock (%s): not the member that left",
                 serr);
    else if (!same_array)
        snprintf(why, len, "it holds another array's superblock");
    else if (!same_member || msb.slot != slot)
        snprintf(why, len, "it is not the member that left slot %" PRIu32, slot);
    else if (fail_ev && msb.events > fail_ev)
        snprintf(why, len,
                 "its event %" PRIu64 " is newer than the event %" PRIu64
                 " it held when it failed: it was written elsewhere meanwhile",
                 msb.events, fail_ev);
    else if (msb.events >= now_ev)
        snprintf(why, len, "its event %" PRIu64 " is not older than the array's %" PRIu64,
                 msb.events, now_ev);
    else
        return 0;
    return -EPERM;
}

/* One reconnect attempt for slot (waiting, due). */
static void remote_attempt(struct vol_remote *w, uint32_t i, const char *path)
{
    struct rk_volume *v = w->v;
    char why[200] = "", note[240] = "";
    rs_set(w, i, RS_CONNECTING, NULL);
    int r = remote_prove(v, i, path, why, sizeof(why));
    if (!r) {
        r = rk_volume_readd(v, i, path, w->rate, note, sizeof(note), why, sizeof(why));
        if (r == -EXDEV || r == -ESTALE || r == -ENODATA)
            r = -EPERM;
        else if (r)
            r = -EAGAIN; /* e.g. -EBUSY: another job runs; try again */
    }
    pthread_mutex_lock(&w->lock);
    struct rs_slot *s = &w->s[i];
    s->attempts++;
    if (!r) {
        s->state = RS_READDING;
        s->err[0] = 0;
    } else if (r == -EPERM) {
        s->state = RS_REFUSED;
        snprintf(s->err, sizeof(s->err), "%s", why);
    } else {
        s->state = RS_WAITING;
        snprintf(s->err, sizeof(s->err), "%s", why);
        s->next_ns = mono_ns() + s->backoff_ms * 1000000ull;
        s->backoff_ms =
            s->backoff_ms * 2 > w->backoff_max_ms ? w->backoff_max_ms : s->backoff_ms * 2;
    }
    unsigned n = s->attempts;
    pthread_mutex_unlock(&w->lock);
    if (!r)
        rk_info("member %s (slot %" PRIu32 ") is back after %u attempt%s: %s", path, i, n,
                n == 1 ? "" : "s", note);
    else if (r == -EPERM)
        rk_err("member %s (slot %" PRIu32 ") answers again but is refused: %s; nothing "
               "written (re-add or replace it by hand)",
               path, i, why);
}

/* Watch slot i once: fail a dead connection, or move the reconnect state on. */
static void remote_watch_slot(struct vol_remote *w, uint32_t i)
{
    struct rk_volume *v = w->v;
    char path[1100];
    pthread_mutex_lock(&v->lock);
    bool uri = v->paths[i] && rk_member_is_uri(v->paths[i]);
    if (uri)
        snprintf(path, sizeof(path), "%s", v->paths[i]);
    const char *conn = v->file[i] ? rk_nbd_state(v->file[i]) : NULL;
    bool dead = conn && strcmp(conn, "connected");
    pthread_mutex_unlock(&v->lock);
    if (!uri)
        return;
    int st = rk_raid_slot_state(v->raid, i);
    pthread_mutex_lock(&w->lock);
    struct rs_slot *s = &w->s[i];
    int rs = s->state;
    if (st == RK_SLOT_ACTIVE && rs == RS_READDING) {
        struct rk_raid_progress p;
        s->state = RS_BACK;
        if (!rk_raid_progress(v->raid, &p) && p.readd && p.slot == i)
            s->resynced = p.resynced;
    } else if (st == RK_SLOT_ACTIVE && rs != RS_BACK) {
        s->state = RS_NONE; /* back by hand (re-add, replace): nothing to reconnect */
    }
    bool away = st == RK_SLOT_FAILED || st == RK_SLOT_MISSING;
    if (away && rs != RS_WAITING && rs != RS_CONNECTING && rs != RS_REFUSED) {
        s->state = RS_WAITING; /* newly failed (or failed again during its re-add) */
        s->attempts = 0;
        s->backoff_ms = w->backoff0_ms;
        s->next_ns = mono_ns() + w->backoff0_ms * 1000000ull;
        s->err[0] = 0;
        rs = RS_WAITING;
    }
    bool due = away && rs == RS_WAITING && mono_ns() >= s->next_ns;
    pthread_mutex_unlock(&w->lock);
    if ((st == RK_SLOT_ACTIVE || st == RK_SLOT_REBUILDING) && dead) {
        rk_warn("member %s (slot %" PRIu32 "): connection %s; failing it", path, i, conn);
        int r = rk_raid_fail_slot(v->raid, i);
        if (r && r != -EBUSY)
            rk_err("member %s (slot %" PRIu32 "): cannot record its failure: %s", path, i,
                   strerror(-r));
    } else if (due) {
        remote_attempt(w, i, path);
    }
}

static void *remote_thread(void *arg)
{
    struct vol_remote *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        pthread_mutex_unlock(&w->lock);
        for (uint32_t i = 0; i < w->v->sb.members; i++)
            remote_watch_slot(w, i);
        pthread_mutex_lock(&w->lock);
        if (w->stop)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += REMOTE_TICK_MS * 1000000l;
        ts.tv_sec += ts.tv_nsec / 1000000000l;
        ts.tv_nsec %= 1000000000l;
        pthread_cond_timedwait(&w->cond, &w->lock, &ts);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int rk_volume_remote_watch(struct rk_volume *v, uint64_t rate)
{
    if (!v || v->read_only || v->remote)
        return 0;
    bool any = false;
    for (uint32_t i = 0; i < v->sb.members; i++)
        any |= v->paths[i] && rk_member_is_uri(v->paths[i]);
    if (!any)
        return 0;
    struct vol_remote *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->v = v;
    w->rate = rate;
    w->backoff0_ms = env_ms("RAIDKIT_NBD_RECONNECT_MS", REMOTE_BACKOFF_MS_DEFAULT);
    w->backoff_max_ms = env_ms("RAIDKIT_NBD_RECONNECT_MAX_MS", REMOTE_BACKOFF_MAX_MS_DEFAULT);
    if (w->backoff_max_ms < w->backoff0_ms)
        w->backoff_max_ms = w->backoff0_ms;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    int r = -pthread_create(&w->thread, NULL, remote_thread, w);
    if (r) {
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return r;
    }
    v->remote = w;
    return 0;
}

void vol_remote_stop(struct rk_volume *v)
{
    struct vol_remote *w = v->remote;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
    v->remote = NULL;
}

void vol_remote_status(struct rk_volume *v, uint32_t slot, cJSON *o)
{
    struct vol_remote *w = v->remote;
    if (!w || slot >= RK_MAX_MEMBERS || !v->paths[slot] || !rk_member_is_uri(v->paths[slot]))
        return;
    pthread_mutex_lock(&w->lock);
    const struct rs_slot *s = &w->s[slot];
    cJSON *r = cJSON_AddObjectToObject(o, "reconnect");
    if (r) {
        cJSON_AddStringToObject(r, "state", rs_names[s->state]);
        cJSON_AddNumberToObject(r, "attempts", s->attempts);
        if (s->state == RS_WAITING) {
            uint64_t now = mono_ns();
            double in = s->next_ns > now ? (double)(s->next_ns - now) / 1e9 : 0;
            cJSON_AddNumberToObject(r, "next_attempt_s", in);
        }
        if (s->err[0])
            cJSON_AddStringToObject(r, "last_error", s->err);
        if (s->state == RS_BACK)
            cJSON_AddNumberToObject(r, "resynced_bytes", (double)s->resynced);
    }
    pthread_mutex_unlock(&w->lock);
}
