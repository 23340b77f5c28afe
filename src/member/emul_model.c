/* Device-model arithmetic of the emul member: SSD rate gates and channels, HDD seek curve,
 * spindle angle, zoned rate and command picking. No clocks or locks here (see emul.c). */
#include "member/emul_model.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int emul_model_init(struct emul_model *m, const struct rk_emul_params *p, uint64_t capacity)
{
    memset(m, 0, sizeof(*m));
    if (!p || capacity == 0)
        return -EINVAL;
    if (rk_emul_params_check(p, NULL, 0) < 0)
        return -EINVAL;
    m->p = *p;
    m->capacity = capacity;
    if (p->kind == RK_EMUL_SSD)
        return 0;
    m->rev_ns = 60000000000ull / p->rpm;
    /* The seed only places the spindle angle at time 0: runs with one seed repeat exactly. */
    m->phase_ns = (p->seed * 0x9e3779b97f4a7c15ull) % m->rev_ns;
    /* Fit track + a*sqrt(d) + b*d so that seek(1) = full and the mean over two uniformly random
     * positions (E[sqrt d] = 8/15, E[d] = 1/3) equals the average seek. */
    double span = (double)p->seek_full_us - p->seek_track_us;
    double avg = (double)p->seek_avg_us - p->seek_track_us;
    double a = 5.0 * avg - 5.0 * span / 3.0;
    if (a < 0)
        a = 0; /* average below the curve's reach: linear in d */
    if (a > span)
        a = span; /* average above it: pure square root */
    m->seek_a = a;
    m->seek_b = span - a;
    return 0;
}

uint64_t emul_ssd_submit(struct emul_model *m, int dir, uint64_t len, uint64_t now)
{
    const struct rk_emul_params *p = &m->p;
    uint64_t iops = dir == EMUL_DIR_READ ? p->read_iops : p->write_iops;
    uint64_t bw = dir == EMUL_DIR_READ ? p->read_bw : p->write_bw;
    uint64_t lat = 1000ull * (dir == EMUL_DIR_READ ? p->read_latency_us : p->write_latency_us);
    uint64_t xfer = (uint64_t)((double)len * 1e9 / (double)bw);
    uint64_t per_req = 1000000000ull / iops;
    /* One rate budget for reads and writes (a drive's controller and flash serve both): a request
     * takes 1/iops or len/bw of its own direction from the shared gate, so a read-modify-write
     * pays for its reads and its writes. The gate never runs ahead of real time when idle
     * (t0 = now), so idle time buys no burst. */
    uint64_t t0 = now > m->gate ? now : m->gate;
    m->gate = t0 + (per_req > xfer ? per_req : xfer);
    uint32_t best = 0;
    for (uint32_t c = 1; c < p->parallelism; c++)
        if (m->chan[c] < m->chan[best])
            best = c;
    uint64_t start = t0 > m->chan[best] ? t0 : m->chan[best];
    uint64_t done = start + lat + xfer;
    m->chan[best] = done;
    return done;
}

uint64_t emul_hdd_zone_bw(const struct emul_model *m, uint64_t off)
{
    const struct rk_emul_params *p = &m->p;
    if (p->zones <= 1 || off >= m->capacity)
        return off >= m->capacity && p->zones > 1 ? p->inner_bw : p->outer_bw;
    uint64_t z = (uint64_t)((unsigned __int128)off * p->zones / m->capacity);
    double step = ((double)p->outer_bw - (double)p->inner_bw) / (p->zones - 1);
    return (uint64_t)((double)p->outer_bw - step * (double)z);
}

uint64_t emul_hdd_track_bytes(const struct emul_model *m, uint64_t off)
{
    return (uint64_t)((double)emul_hdd_zone_bw(m, off) * (double)m->rev_ns / 1e9);
}

uint64_t emul_hdd_seek_ns(const struct emul_model *m, uint64_t from, uint64_t to)
{
    uint64_t dist = from > to ? from - to : to - from;
    /* Within one track the head stays put: only the rotation counts. */
    if (dist < emul_hdd_track_bytes(m, to))
        return 0;
    double d = (double)dist / (double)m->capacity;
    if (d > 1.0)
        d = 1.0;
    double us = m->p.seek_track_us + m->seek_a * sqrt(d) + m->seek_b * d;
    return (uint64_t)(us * 1000.0);
}

uint64_t emul_hdd_position_ns(const struct emul_model *m, uint64_t off, uint64_t t)
{
    if (off == m->head)
        return 0; /* sequential: the head is already there */
    uint64_t seek = emul_hdd_seek_ns(m, m->head, off);
    uint64_t track = emul_hdd_track_bytes(m, off);
    uint64_t target = (uint64_t)((double)(off % track) / (double)track * (double)m->rev_ns);
    uint64_t angle = (t + seek + m->phase_ns) % m->rev_ns; /* spindle angle when the seek ends */
    uint64_t wait = (target + m->rev_ns - angle) % m->rev_ns;
    return seek + wait;
}

uint64_t emul_hdd_service_ns(const struct emul_model *m, const struct emul_hreq *r, uint64_t t)
{
    if (r->kind == EMUL_H_BARRIER)
        return 0;
    uint64_t cmd = 1000ull * (r->dir == EMUL_DIR_READ ? m->p.cmd_read_us : m->p.cmd_write_us);
    uint64_t pos = emul_hdd_position_ns(m, r->off, t + cmd);
    uint64_t xfer = (uint64_t)((double)r->len * 1e9 / (double)emul_hdd_zone_bw(m, r->off));
    return cmd + pos + xfer;
}

int emul_hdd_pick(const struct emul_model *m, const struct emul_hreq *q, int n, uint64_t t)
{
    if (!m->p.reorder || n <= 1 || q[0].kind == EMUL_H_BARRIER)
        return 0;
    /* A command continuing the last transfer is noticed anywhere in the queue (it needs no
     * positioning at all), so a stream that arrives slightly out of order stays sequential. */
    for (int i = 0; i < n && q[i].kind != EMUL_H_BARRIER; i++)
        if (q[i].off == m->head)
            return i;
    int lim = n < (int)m->p.queue_depth ? n : (int)m->p.queue_depth;
    int best = 0;
    uint64_t best_t = UINT64_MAX;
    for (int i = 0; i < lim; i++) {
        if (q[i].kind == EMUL_H_BARRIER)
            break;
        uint64_t s = emul_hdd_position_ns(m, q[i].off, t);
        if (s < best_t) {
            best_t = s;
            best = i;
        }
    }
    return best;
}

uint64_t emul_hdd_serve(struct emul_model *m, const struct emul_hreq *r, uint64_t t)
{
    uint64_t done = t + emul_hdd_service_ns(m, r, t);
    if (r->kind == EMUL_H_IO)
        m->head = r->off + r->len;
    return done;
}

/* Put the next queued command under the head at model time t; barriers at the front complete
 * at once. */
static void emul_hq_dispatch(struct emul_model *m, struct emul_hq *h, uint64_t t,
                             emul_done_fn *done, void *arg)
{
    while (h->n > 0) {
        int i = emul_hdd_pick(m, h->q, h->n, t);
        struct emul_hreq r = h->q[i];
        void *ctx = h->ctx[i];
        bool acked = h->acked[i];
        size_t rest = (size_t)(h->n - i - 1);
        memmove(&h->q[i], &h->q[i + 1], rest * sizeof(h->q[0]));
        memmove(&h->ctx[i], &h->ctx[i + 1], rest * sizeof(h->ctx[0]));
        memmove(&h->acked[i], &h->acked[i + 1], rest * sizeof(h->acked[0]));
        h->n--;
        if (r.kind == EMUL_H_BARRIER) {
            done(arg, ctx);
            continue;
        }
        h->busy = true;
        h->busy_until = emul_hdd_serve(m, &r, t);
        h->cur_ctx = ctx;
        h->cur_acked = acked;
        return;
    }
    h->busy = false;
}

int emul_hq_add(struct emul_model *m, struct emul_hq *h, const struct emul_hreq *r, bool fua,
                void *ctx, uint64_t now, emul_done_fn *done, void *arg)
{
    if (h->n == EMUL_QMAX)
        return -EAGAIN;
    /* Catch up first, so the head's state is current when the new command is considered. */
    emul_hq_advance(m, h, now, done, arg);
    int i = h->n++;
    h->q[i] = *r;
    h->ctx[i] = ctx;
    h->acked[i] = false;
    uint32_t cache_cmds = m->p.cache_cmds ? m->p.cache_cmds : 32;
    if (r->kind == EMUL_H_IO && r->dir == EMUL_DIR_WRITE && m->p.write_cache && !fua &&
        h->cached < cache_cmds) {
        h->acked[i] = true;
        h->cached++;
        done(arg, ctx);
    }
    if (!h->busy)
        emul_hq_dispatch(m, h, now, done, arg);
    return 0;
}

void emul_hq_advance(struct emul_model *m, struct emul_hq *h, uint64_t now, emul_done_fn *done,
                     void *arg)
{
    while (h->busy && h->busy_until <= now) {
        if (h->cur_acked)
            h->cached--;
        else
            done(arg, h->cur_ctx);
        /* The next command starts when the last one ended (model time), not when the caller
         * noticed, so timer lateness does not slow the model down. */
        emul_hq_dispatch(m, h, h->busy_until, done, arg);
    }
}

/* Built-in profiles; bench/profiles/<name>.ini hold the same values (a test compares them).
 * Calibration against the seeds: docs/BENCHMARKS.md "Device models". */
const struct rk_emul_params emul_builtin_profiles[] = {
    {
        .name = "sata-ssd-2014",
        .kind = RK_EMUL_SSD,
        .capacity = 0,
        .read_latency_us = 90,
        .write_latency_us = 60,
        .read_iops = 14550,
        .write_iops = 10370,
        .read_bw = 540000000,
        .write_bw = 480000000,
        .parallelism = 8,
        .seed = 1,
    },
    {
        .name = "hdd-7200",
        .kind = RK_EMUL_HDD,
        .capacity = 500107862016ull,
        .rpm = 7200,
        .seek_track_us = 800,
        .seek_avg_us = 8500,
        .seek_full_us = 17000,
        .outer_bw = 125000000,
        .inner_bw = 60000000,
        .zones = 16,
        .reorder = true,
        .queue_depth = 4,
        .write_cache = 1,
        .cache_cmds = 32,
        .cmd_read_us = 1450,
        .cmd_write_us = 5,
        .seed = 1,
    },
    {.name = ""},
};
