/* The control socket's requests: one JSON request object in, one JSON reply out (status,
 * fail, replace, scrub). The status reply is the volume's status tree extended with job
 * progress, the last scrub, unreadable ranges and member I/O counters, printed once. */
#include "ctl/control.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl/commands_cache.h"
#include "meta/volume_cache_layer.h"
#include "meta/volume_status.h"
#include "raidkit/member_nbd.h"
#include "raidkit/raid.h"

static const char *ctl_job_kind(int k)
{
    return k == RK_JOB_REBUILD  ? "rebuild"
           : k == RK_JOB_SCRUB  ? "scrub"
           : k == RK_JOB_RESYNC ? "resync"
                                : "none";
}

static const char *ctl_job_state(int s)
{
    switch (s) {
    case RK_JOB_RUNNING:
        return "running";
    case RK_JOB_DONE:
        return "done";
    case RK_JOB_FAILED:
        return "failed";
    default:
        return "idle";
    }
}

/* Print o as one JSON line (no newline) and free it. NULL for NULL o or on ENOMEM. */
static char *ctl_print(cJSON *o)
{
    if (!o)
        return NULL;
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return t;
}

char *rk_control_error(const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddBoolToObject(o, "ok", false);
    cJSON_AddStringToObject(o, "error", msg);
    return ctl_print(o);
}

/* {"ok":true} plus key:msg when key is non-NULL. NULL on ENOMEM. */
static char *ctl_ok(const char *key, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddBoolToObject(o, "ok", true);
    if (key)
        cJSON_AddStringToObject(o, key, msg);
    return ctl_print(o);
}

/* A non-negative integer field; -1 when absent or bad. */
static int64_t ctl_uint(const cJSON *req, const char *key, int64_t max)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(req, key);
    if (!cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble > (double)max ||
        n->valuedouble != (double)(int64_t)n->valuedouble)
        return -1;
    return (int64_t)n->valuedouble;
}

/* Per slot of the status tree: rebuild_percent while the job rebuilds it, and the member's
 * I/O counters ("io") when the engine has a member there. */
static void ctl_add_slots(cJSON *root, struct rk_dev *raid, const struct rk_raid_progress *p,
                          double pct)
{
    cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "slots"))
    {
        cJSON *sn = cJSON_GetObjectItem(it, "slot");
        if (!cJSON_IsNumber(sn))
            continue;
        uint32_t s = (uint32_t)sn->valuedouble;
        if (rk_raid_slot_state(raid, s) == RK_SLOT_REBUILDING && p->kind == RK_JOB_REBUILD &&
            p->slot == s)
            cJSON_AddNumberToObject(it, "rebuild_percent", pct);
        struct rk_dev *m = rk_raid_member(raid, s);
        if (!m)
            continue;
        cJSON *st = cJSON_AddObjectToObject(it, "io");
        if (!st)
            continue;
        cJSON_AddNumberToObject(st, "reads", (double)atomic_load(&m->stats.reads));
        cJSON_AddNumberToObject(st, "writes", (double)atomic_load(&m->stats.writes));
        cJSON_AddNumberToObject(st, "read_bytes", (double)atomic_load(&m->stats.read_bytes));
        cJSON_AddNumberToObject(st, "write_bytes", (double)atomic_load(&m->stats.write_bytes));
        cJSON_AddNumberToObject(st, "fua_writes", (double)atomic_load(&m->stats.fua_writes));
        cJSON_AddNumberToObject(st, "fua_write_bytes",
                                (double)atomic_load(&m->stats.fua_write_bytes));
        cJSON_AddNumberToObject(st, "errors", (double)atomic_load(&m->stats.errors));
    }
}

/* "job": the running or last background job (rebuild or scrub) and its progress. */
static void ctl_add_job(cJSON *root, const struct rk_raid_progress *p, double pct)
{
    cJSON *job = cJSON_AddObjectToObject(root, "job");
    if (!job)
        return;
    cJSON_AddStringToObject(
        job, "kind", p->kind == RK_JOB_REBUILD && p->readd ? "re-add" : ctl_job_kind(p->kind));
    cJSON_AddStringToObject(job, "state", ctl_job_state(p->state));
    if (p->kind == RK_JOB_NONE)
        return;
    if (p->kind == RK_JOB_REBUILD) {
        cJSON_AddNumberToObject(job, "slot", p->slot);
        cJSON_AddBoolToObject(job, "readd", p->readd);
        cJSON_AddNumberToObject(job, "resynced_bytes", (double)p->resynced);
    } else
        cJSON_AddBoolToObject(job, "repair", p->repair);
    if (p->kind == RK_JOB_RESYNC) {
        cJSON_AddNumberToObject(job, "resynced_bytes", (double)p->resynced);
        cJSON_AddBoolToObject(job, "full", p->full);
    }
    cJSON_AddNumberToObject(job, "percent", pct);
    cJSON_AddNumberToObject(job, "start", (double)p->start);
    cJSON_AddNumberToObject(job, "pos", (double)p->pos);
    cJSON_AddNumberToObject(job, "end", (double)p->end);
    cJSON_AddNumberToObject(job, "rate_mib_s", p->rate / (1024.0 * 1024.0));
    cJSON_AddNumberToObject(job, "rate_limit_mib_s", (double)p->rate_limit / (1024.0 * 1024.0));
    cJSON_AddNumberToObject(job, "eta_s", p->eta);
    cJSON_AddNumberToObject(job, "mismatches", (double)p->mismatches);
    cJSON_AddNumberToObject(job, "repaired", (double)p->repaired);
    cJSON_AddNumberToObject(job, "bad_ranges", (double)p->bad_ranges);
    if (p->kind == RK_JOB_SCRUB)
        cJSON_AddBoolToObject(job, "nothing_compared", p->uncompared);
    if (p->error)
        cJSON_AddStringToObject(job, "error", strerror(-p->error));
}

/* "mismatch_list" of last_scrub: where the first RK_RAID_MISMATCH_MAX mismatches were (slot and
 * data-area offset/len in bytes, the array offset when the place holds data, the parity when it
 * holds P or Q). */
static void ctl_add_mismatches(cJSON *ls, struct rk_dev *raid)
{
    struct rk_raid_mismatch mm[RK_RAID_MISMATCH_MAX];
    int n = rk_raid_scrub_mismatches(raid, true, mm, RK_RAID_MISMATCH_MAX);
    cJSON *arr = cJSON_AddArrayToObject(ls, "mismatch_list");
    for (int i = 0; arr && i < n && i < RK_RAID_MISMATCH_MAX; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddNumberToObject(o, "slot", mm[i].slot);
        cJSON_AddNumberToObject(o, "member_offset", (double)mm[i].member_off);
        cJSON_AddNumberToObject(o, "len", (double)mm[i].len);
        if (mm[i].array_off != RK_RAID_NO_ARRAY_OFF)
            cJSON_AddNumberToObject(o, "array_offset", (double)mm[i].array_off);
        cJSON_AddStringToObject(o, "kind", rk_raid_mismatch_kind_name(mm[i].kind));
        cJSON_AddStringToObject(o, "repaired", rk_raid_fix_name(mm[i].fixed));
        /* a mismatch against parity names which one: "P" or "Q" in slot, "P+Q" (q_slot) */
        const char *par = rk_raid_mismatch_parity_name(mm[i].parity);
        if (par)
            cJSON_AddStringToObject(o, "parity", par);
        if (mm[i].parity == RK_MM_PAR_PQ)
            cJSON_AddNumberToObject(o, "q_slot", mm[i].q_slot);
        cJSON_AddItemToArray(arr, o);
    }
}

/* "bitmap": the write-intent bitmap (null without one): region size, regions, bits set on
 * disk, regions a resync has still to reach. */
static void ctl_add_bitmap(cJSON *root, struct rk_dev *raid)
{
    struct rk_raid_bitmap_stats bs;
    if (rk_raid_bitmap_stats(raid, &bs) || !bs.region) {
        cJSON_AddNullToObject(root, "bitmap");
        return;
    }
    cJSON *b = cJSON_AddObjectToObject(root, "bitmap");
    if (!b)
        return;
    cJSON_AddBoolToObject(b, "on_disk", bs.on_disk);
    cJSON_AddNumberToObject(b, "region", (double)bs.region);
    cJSON_AddNumberToObject(b, "regions", (double)bs.nregions);
    cJSON_AddNumberToObject(b, "set", (double)bs.set);
    cJSON_AddNumberToObject(b, "unsynced", (double)bs.unsynced);
}

/* "gather": raid5/raid6 stripe gathering (docs/CLI.md "status"); null on other levels. */
static void ctl_add_gather(cJSON *root, struct rk_dev *raid)
{
    struct rk_raid_gather_stats gs;
    if (rk_raid_gather_stats(raid, &gs) || !gs.level_has) {
        cJSON_AddNullToObject(root, "gather");
        return;
    }
    cJSON *g = cJSON_AddObjectToObject(root, "gather");
    if (!g)
        return;
    cJSON_AddBoolToObject(g, "on", gs.on);
    cJSON_AddNumberToObject(g, "hold_us", (double)gs.hold_us);
    cJSON_AddNumberToObject(g, "entries", gs.entries);
    cJSON_AddNumberToObject(g, "stripe_bytes", (double)gs.stripe_bytes);
    cJSON_AddNumberToObject(g, "stripes_held", gs.held_now);
    cJSON_AddNumberToObject(g, "writes_held", (double)gs.writes_held);
    cJSON_AddNumberToObject(g, "bytes_held", (double)gs.bytes_held);
    cJSON_AddNumberToObject(g, "full_stripe_writes", (double)gs.full_stripe_writes);
    cJSON_AddNumberToObject(g, "partial_writes", (double)gs.partial_writes);
    cJSON *d = cJSON_AddObjectToObject(g, "write_outs");
    if (!d)
        return;
    cJSON_AddNumberToObject(d, "whole", (double)gs.out_whole_fill);
    cJSON_AddNumberToObject(d, "timeout", (double)gs.out_timeout);
    cJSON_AddNumberToObject(d, "flush", (double)gs.out_flush);
    cJSON_AddNumberToObject(d, "fua", (double)gs.out_fua);
    cJSON_AddNumberToObject(d, "memory", (double)gs.out_memory);
    cJSON_AddNumberToObject(d, "other", (double)gs.out_other);
}

/* "last_scrub": the result of the last finished scrub, null when none ran since start. */
static void ctl_add_last_scrub(cJSON *root, struct rk_dev *raid, const struct rk_raid_progress *p)
{
    if (!p->scrubbed) {
        cJSON_AddNullToObject(root, "last_scrub");
        return;
    }
    cJSON *ls = cJSON_AddObjectToObject(root, "last_scrub");
    if (!ls)
        return;
    cJSON_AddNumberToObject(ls, "mismatches", (double)p->last_mismatches);
    cJSON_AddNumberToObject(ls, "repaired", (double)p->last_repaired);
    cJSON_AddNumberToObject(ls, "read_errors", (double)p->last_errors);
    cJSON_AddBoolToObject(ls, "nothing_compared", p->last_uncompared);
    cJSON_AddNumberToObject(ls, "finished_at", (double)p->last_finished);
    ctl_add_mismatches(ls, raid);
}

/* Most unreadable ranges listed in a status reply. */
#define CTL_BAD_RANGES_MAX 64

/* "bad_ranges": the engine's unreadable ranges (slot, offset and len in bytes of the slot's
 * data area), at most CTL_BAD_RANGES_MAX. */
static void ctl_add_bad_ranges(cJSON *root, struct rk_dev *raid)
{
    struct rk_raid_bad_range bad[CTL_BAD_RANGES_MAX];
    int nb = rk_raid_bad_ranges(raid, bad, CTL_BAD_RANGES_MAX);
    cJSON *ba = cJSON_AddArrayToObject(root, "bad_ranges");
    for (int i = 0; ba && i < nb && i < CTL_BAD_RANGES_MAX; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddNumberToObject(o, "slot", bad[i].slot);
        cJSON_AddNumberToObject(o, "offset", (double)bad[i].member_off);
        cJSON_AddNumberToObject(o, "len", (double)bad[i].len);
        cJSON_AddItemToArray(ba, o);
    }
}

cJSON *rk_control_status_tree(struct rk_volume *v)
{
    cJSON *root = rk_volume_status_tree(v);
    if (!root)
        return NULL;
    struct rk_dev *raid = rk_volume_raid(v);
    struct rk_raid_progress p;
    rk_raid_progress(raid, &p);
    double pct = p.end ? 100.0 * (double)p.pos / (double)p.end : 100.0;
    ctl_add_slots(root, raid, &p, pct);
    ctl_add_job(root, &p, pct);
    ctl_add_last_scrub(root, raid, &p);
    ctl_add_bitmap(root, raid);
    ctl_add_gather(root, raid);
    ctl_add_bad_ranges(root, raid);
    return root;
}

/* {"cmd":"status"} -> {"ok":true,"status":{...}} */
static char *ctl_status(struct rk_volume *v, const cJSON *req)
{
    cJSON *st = rk_control_status_tree(v);
    if (!st)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        cJSON_Delete(st);
        return NULL;
    }
    cJSON_AddBoolToObject(o, "ok", true);
    cJSON_AddItemToObject(o, "status", st);
    return ctl_print(o);
}

/* The "slot" field of a fail/replace request: 0 and *slot, or an error reply in *reply. */
static int ctl_slot(struct rk_volume *v, const cJSON *req, const char *cmd, uint32_t *slot,
                    char **reply)
{
    uint32_t members = rk_raid_geometry(rk_volume_raid(v))->members;
    int64_t s = ctl_uint(req, "slot", RK_MAX_MEMBERS * 4);
    if (s < 0) {
        *reply = rk_control_error("%s needs \"slot\": a slot number", cmd);
        return -EINVAL;
    }
    if (s >= members) {
        *reply = rk_control_error("slot %" PRId64 " out of range: the array has slots 0..%" PRIu32,
                                  s, members - 1);
        return -EINVAL;
    }
    *slot = (uint32_t)s;
    return 0;
}

/* The optional "rate" field (bytes per second, 0 = unlimited): 0 and *rate, or an error reply
 * in *reply. */
static int ctl_rate(const cJSON *req, const char *cmd, uint64_t *rate, char **reply)
{
    *rate = 0;
    if (!cJSON_GetObjectItemCaseSensitive(req, "rate"))
        return 0;
    int64_t r = ctl_uint(req, "rate", INT64_MAX / 2);
    if (r < 0) {
        *reply = rk_control_error("%s: bad \"rate\" (bytes per second, 0 = unlimited)", cmd);
        return -EINVAL;
    }
    *rate = (uint64_t)r;
    return 0;
}

/* {"cmd":"fail","slot":N} */
static char *ctl_fail(struct rk_volume *v, const cJSON *req)
{
    struct rk_dev *raid = rk_volume_raid(v);
    char *reply = NULL;
    uint32_t slot;
    if (ctl_slot(v, req, "fail", &slot, &reply))
        return reply;
    int st = rk_raid_slot_state(raid, slot);
    if (st == RK_SLOT_FAILED || st == RK_SLOT_MISSING)
        return rk_control_error("slot %" PRIu32 " is already %s", slot,
                                st == RK_SLOT_FAILED ? "failed" : "missing");
    int r = rk_raid_fail_slot(raid, slot);
    if (r == -EBUSY)
        return rk_control_error("refused: failing slot %" PRIu32
                                " would lose data (no other copy of some of it is active)",
                                slot);
    if (r)
        return rk_control_error("fail slot %" PRIu32 ": %s", slot, strerror(-r));
    return ctl_ok("message", "slot marked failed");
}

/* {"cmd":"replace","slot":N,"with":"/abs/path","rate":BYTES_PER_S[,"force":true]} */
static char *ctl_replace(struct rk_volume *v, const cJSON *req)
{
    char *reply = NULL;
    uint32_t slot;
    uint64_t rate;
    if (ctl_slot(v, req, "replace", &slot, &reply))
        return reply;
    const cJSON *with = cJSON_GetObjectItemCaseSensitive(req, "with");
    if (!cJSON_IsString(with) || !with->valuestring[0])
        return rk_control_error("replace needs \"with\": the new member's path");
    if (with->valuestring[0] != '/' && !rk_member_is_uri(with->valuestring))
        return rk_control_error("replace: \"with\" must be an absolute path, got '%s'",
                                with->valuestring);
    if (ctl_rate(req, "replace", &rate, &reply))
        return reply;
    char err[600] = "";
    bool force = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "force"));
    int r = rk_volume_replace_with(v, slot, with->valuestring, rate, force ? RK_REPLACE_FORCE : 0,
                                   err, sizeof(err));
    if (r)
        return rk_control_error("%s", err[0] ? err : strerror(-r));
    /* The slot's old member is re-added (rk_volume_replace recognised it): say how. */
    const char *note = rk_volume_rejoin_note(v, slot);
    return ctl_ok("message", note ? note : "rebuild started");
}

/* {"cmd":"re-add","slot":N,"member":"/abs/path","rate":BYTES_PER_S} */
static char *ctl_readd(struct rk_volume *v, const cJSON *req)
{
    char *reply = NULL;
    uint32_t slot;
    uint64_t rate;
    if (ctl_slot(v, req, "re-add", &slot, &reply))
        return reply;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(req, "member");
    if (!cJSON_IsString(m) || (m->valuestring[0] != '/' && !rk_member_is_uri(m->valuestring)))
        return rk_control_error("re-add needs \"member\": the returning member's absolute path");
    if (ctl_rate(req, "re-add", &rate, &reply))
        return reply;
    char err[600] = "", note[300] = "";
    int r = rk_volume_readd(v, slot, m->valuestring, rate, note, sizeof(note), err, sizeof(err));
    if (r)
        return rk_control_error("%s", err[0] ? err : strerror(-r));
    return ctl_ok("message", note);
}

/* {"cmd":"scrub","repair":BOOL,"rate":BYTES_PER_S} */
static char *ctl_scrub(struct rk_volume *v, const cJSON *req)
{
    struct rk_dev *raid = rk_volume_raid(v);
    char *reply = NULL;
    uint64_t rate;
    const cJSON *rep = cJSON_GetObjectItemCaseSensitive(req, "repair");
    if (rep && !cJSON_IsBool(rep))
        return rk_control_error("scrub: \"repair\" must be true or false");
    if (ctl_rate(req, "scrub", &rate, &reply))
        return reply;
    bool repair = cJSON_IsTrue(rep);
    if (repair && rk_volume_dev(v) != raid && !rk_volume_cache(v))
        return rk_control_error("scrub --repair refused: the volume is read-only");
    int r = rk_raid_scrub_start(raid, repair, rate);
    if (r == -EBUSY) {
        struct rk_raid_progress p;
        rk_raid_progress(raid, &p);
        return rk_control_error("a %s is running; one job at a time", ctl_job_kind(p.kind));
    }
    if (r)
        return rk_control_error("scrub: %s", strerror(-r));
    return ctl_ok("message", "scrub started");
}

/* {"cmd":"cache",...}: commands_cache.c */
static char *ctl_cache(struct rk_volume *v, const cJSON *req)
{
    return rk_control_cache(v, req);
}

/* The commands: name and handler (reply JSON text, malloc'ed; NULL on ENOMEM). */
static const struct {
    const char *name;
    char *(*run)(struct rk_volume *v, const cJSON *req);
} ctl_cmds[] = {
    /* clang-format off */
    {"status", ctl_status},
    {"fail", ctl_fail},
    {"replace", ctl_replace},
    {"scrub", ctl_scrub},
    {"re-add", ctl_readd},
    {"cache", ctl_cache},
    /* clang-format on */
};

static char *ctl_cmd(struct rk_volume *v, const cJSON *req, const char *cmd)
{
    for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
        if (!strcmp(cmd, ctl_cmds[i].name))
            return ctl_cmds[i].run(v, req);
    return rk_control_error("unknown command '%.64s' (status, fail, replace, scrub, re-add, cache)",
                            cmd);
}

char *rk_control_handle(struct rk_volume *v, const char *line)
{
    cJSON *req = cJSON_Parse(line);
    char *reply;
    if (!req || !cJSON_IsObject(req)) {
        reply = rk_control_error("bad request: not a JSON object");
        goto out;
    }
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(req, "cmd");
    if (!cJSON_IsString(cmd)) {
        reply = rk_control_error("bad request: no \"cmd\" string");
        goto out;
    }
    reply = ctl_cmd(v, req, cmd->valuestring);
out:
    cJSON_Delete(req);
    return reply;
}
