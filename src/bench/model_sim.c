/* The device model's prediction of a row as a simulation: fio's closed loop (iodepth requests
 * always outstanding) over the array's members, each member the same SSD model functions the emul
 * member uses (emul_ssd_submit), on a fake clock (docs/BENCHMARKS.md "Validation against the
 * emulation"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/model_sim_int.h"

uint64_t sim_rand(struct sim *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double sim_unit(struct sim *s)
{
    return (double)(sim_rand(s) >> 11) / 9007199254740992.0;
}

/* Member operations still in flight on member mem at time t (all slots). */
static int sim_busy(const struct sim *s, int mem, uint64_t t)
{
    int k = 0;
    for (int i = 0; i < s->depth; i++)
        for (int o = 0; o < s->slot[i].nops; o++)
            k += s->slot[i].mem[o] == mem && s->slot[i].done[o] > t;
    return k;
}

/* cnt members drawn with weights w (members of weight 0 never), without replacement within a
 * round of distinct members; more operations than members start another round (an extra
 * operation, e.g. a metadata write, lands on a member that already has one). */
int sim_draw(struct sim *s, const double *w, int cnt, int *out)
{
    bool used[RK_MAX_MEMBERS] = {false};
    int k = 0;
    if (cnt > 2 * RK_MAX_MEMBERS)
        cnt = 2 * RK_MAX_MEMBERS;
    for (; k < cnt; k++) {
        double tot = 0;
        for (int i = 0; i < s->n; i++)
            tot += used[i] ? 0 : w[i];
        if (tot <= 0 && k > 0) {
            memset(used, 0, sizeof(used)); /* next round */
            for (int i = 0; i < s->n; i++)
                tot += w[i];
        }
        if (tot <= 0)
            break;
        double u = sim_unit(s) * tot;
        int pick = -1;
        for (int i = 0; i < s->n; i++) {
            if (used[i] || w[i] <= 0)
                continue;
            pick = i;
            if ((u -= w[i]) < 0)
                break;
        }
        used[pick] = true;
        out[k] = pick;
    }
    return k;
}

/* A count drawn around mean x: floor(x), plus one with probability frac(x). */
int sim_count(struct sim *s, double x)
{
    int k = (int)floor(x);
    return k + (sim_unit(s) < x - k);
}

/* Member reads (*nr) and writes (*nw) of the next client request. A pure job: each drawn around
 * the trial's per-request means. A mixed job (rfrac in (0,1)): the request is a read with
 * probability rfrac (its reads only), else a write (read-modify-write reads, then writes), so a
 * request never makes neither. */
void sim_plan(struct sim *s, int *nr, int *nw, int *nf)
{
    *nf = 0;
    if (s->rfrac > 0 && s->rfrac < 1) {
        bool rd = sim_unit(s) < s->rfrac;
        *nr = sim_count(s, rd ? s->mrr : s->mwr);
        *nw = rd ? 0 : sim_count(s, s->mww);
        if (!rd && s->mfw > 0)
            *nf = sim_count(s, s->mfw);
        if (*nr + *nw + *nf == 0)
            *nr = rd; /* a write whose writes rounded away still is one request */
        return;
    }
    *nr = sim_count(s, s->rpr);
    *nw = sim_count(s, s->wpr);
    if (s->fpr > 0)
        *nf = sim_count(s, s->fpr);
}

/* Read members of one client read of a mirrored level: the least busy copy (ties round robin),
 * as src/raid/copies_rw.c picks; raid1 = any member, raid10 near 2 = the pair of a random
 * chunk. Busy is sim_busy at t (SSD), or queued + under the head (hdd). Returns -1 when the
 * level has no copies to choose from. */
int sim_mirror_read(struct sim *s, uint64_t t, bool hdd)
{
    int lo = 0, cnt = 0;
    if (s->in->level == RK_LEVEL_RAID1) {
        cnt = s->n;
    } else if (s->in->level == RK_LEVEL_RAID10 && s->n % 2 == 0) {
        lo = (int)(sim_rand(s) % (uint64_t)(s->n / 2)) * 2;
        cnt = 2;
    } else {
        return -1;
    }
    uint32_t start = s->rr++;
    int best = -1, bl = 0;
    for (int i = 0; i < cnt; i++) {
        int mem = lo + (int)((start + (uint32_t)i) % (uint32_t)cnt);
        int b = hdd ? s->hq[mem].n + s->hq[mem].busy - (int)s->hq[mem].cached : sim_busy(s, mem, t);
        if (best < 0 || b < bl) {
            best = mem;
            bl = b;
        }
    }
    return best;
}

/* Submit cnt operations of direction dir on members mem[] at t into slot sl; returns when the
 * last of them completes. */
static uint64_t sim_submit(struct sim *s, struct sim_slot *sl, const int *mem, int cnt, int dir,
                           uint64_t t)
{
    uint64_t end = t;
    sl->nops = cnt;
    for (int o = 0; o < cnt; o++) {
        uint64_t len = dir == EMUL_DIR_READ ? s->rlen : s->wlen;
        sl->mem[o] = mem[o];
        sl->done[o] = emul_ssd_submit(&s->m[mem[o]], dir, len, t);
        end = sl->done[o] > end ? sl->done[o] : end;
    }
    return end;
}

/* Start the next phase of slot sl at its time: a new request's reads (or its writes when it has
 * none), or the writes after the reads (read-modify-write). Returns whether the request ended. */
static bool sim_step(struct sim *s, struct sim_slot *sl)
{
    int mem[2 * RK_MAX_MEMBERS];
    if (sl->phase == 1 && sl->nw > 0) {
        int k = sim_draw(s, s->ww, sl->nw, mem);
        sl->t = sim_submit(s, sl, mem, k, EMUL_DIR_WRITE, sl->t);
        sl->phase = 2;
        return false;
    }
    if (sl->phase != 0) {
        sl->phase = 0;
        sl->nops = 0;
        return true;
    }
    int nr, nw, nf, k = 0;
    sim_plan(s, &nr, &nw, &nf); /* nf is 0 here: FUA writes are split out on an HDD only */
    if (nr == 1 && nw == 0 && (k = sim_mirror_read(s, sl->t, false)) >= 0) {
        mem[0] = k;
        k = 1;
    } else {
        k = sim_draw(s, s->rw, nr, mem);
    }
    sl->nw = nw;
    sl->phase = 1;
    if (k > 0)
        sl->t = sim_submit(s, sl, mem, k, EMUL_DIR_READ, sl->t);
    else
        return sim_step(s, sl); /* no reads: the writes at once */
    return false;
}

/* The loop: the slot whose phase ends first moves on; a finished request is counted (after the
 * warm-up) and the slot starts a new one at once, as fio does. */
static double sim_loop(struct sim *s, double req_bytes)
{
    uint32_t finished = 0;
    uint64_t t_open = 0;
    for (;;) {
        int k = 0;
        for (int i = 1; i < s->depth; i++)
            k = s->slot[i].t < s->slot[k].t ? i : k;
        struct sim_slot *sl = &s->slot[k];
        if (!sim_step(s, sl))
            continue;
        if (++finished == SIM_WARM)
            t_open = sl->t;
        if (finished == SIM_WARM + SIM_MEASURED) {
            double secs = (double)(sl->t - t_open) / 1e9;
            return secs > 0 ? req_bytes * SIM_MEASURED / secs / 1e6 : 0;
        }
    }
}

int sim_data_members(int level, int n)
{
    if (level == RK_LEVEL_RAID1)
        return 1;
    if (level == RK_LEVEL_RAID10)
        return n / 2 > 0 ? n / 2 : 1;
    if (level == RK_LEVEL_RAID5)
        return n > 1 ? n - 1 : 1;
    if (level == RK_LEVEL_RAID6)
        return n > 2 ? n - 2 : 1;
    return n;
}

/* Bytes of each member a job over span array bytes covers: the level's data members share it
 * (a mirror's every copy holds all of it). */
static uint64_t sim_hdd_span(const struct run_sim_in *in, int n, uint64_t cap)
{
    uint64_t span = in->span ? in->span / (uint64_t)sim_data_members(in->level, n) : cap;
    return span < cap ? span : cap;
}

/* Do the HDD simulation's client reads walk the array's layout? A sequential job with reads on
 * a one-copy level whose geometry is known and matches the members counted. */
static bool sim_layout_ok(const struct run_sim_in *in, int n)
{
    const struct rk_raid_geom *g = in->geom;
    if (!g || !in->seq || g->level != in->level || (int)g->members != n)
        return false;
    return g->level == RK_LEVEL_LINEAR || g->level == RK_LEVEL_RAID0 ||
           g->level == RK_LEVEL_RAID5 || g->level == RK_LEVEL_RAID6;
}

double run_model_sim(const struct run_sim_in *in, const struct run_counts *a,
                     const struct run_counts *b)
{
    const struct rk_emul_params *p = in->p;
    if (!p || (p->kind != RK_EMUL_SSD && p->kind != RK_EMUL_HDD) || b->bytes <= a->bytes ||
        b->ops <= a->ops || b->n < 1)
        return 0;
    struct sim s = {.in = in, .n = b->n, .rng = in->seed ? in->seed : 1};
    bool hdd = p->kind == RK_EMUL_HDD;
    uint64_t cap = p->capacity ? p->capacity : 1ull << 30;
    s.span = sim_hdd_span(in, s.n, cap);
    /* An array with a partial parity log writes each log entry (FUA) before the stripe's writes
     * start: on an HDD those writes are a phase of their own, in the log region, from the media.
     * Elsewhere FUA writes stay in the write mix: most are the bitmap cleaner's, which nothing
     * waits for. */
    bool split = hdd && in->geom && in->geom->members && in->geom->ppl_size;
    /* HDD without a log, with a write-intent bitmap: the area writes that set bits (every
     * member's, FUA) are the bitmap's own phase of the writes that wait for them, not part of
     * the write mix (model_sim_bm.c). With a log they stay among the counted FUA writes of the
     * log's phase: modelled as a phase of their own there, they put raid5 sequential writes
     * 10-13 % above the emulation (bench/RESULTS.md 2026-12-07), as the ring puts them within 5 %.
     */
    double creqs = (double)(b->bytes - a->bytes) / (double)(b->ops - a->ops);
    double cw = (double)(b->ops - a->ops) * (1 - (in->rfrac > 0 ? in->rfrac : 0));
    double bms = hdd && !split ? sim_bm_init(&s, a, b, creqs, cw) : 0;
    double nr = 0, nw = 0, nf = 0, nfl = 0, rb = 0, wb = 0, fb = 0, ops = (double)(b->ops - a->ops);
    for (int i = 0; i < s.n; i++) {
        s.rw[i] = (double)(b->r[i] - a->r[i]);
        s.ww[i] = (double)(b->w[i] - a->w[i]);
        double wbi = (double)(b->wb[i] - a->wb[i]);
        double bmw = fmin(bms, fmin(s.ww[i], (double)(b->fw[i] - a->fw[i])));
        s.ww[i] -= bmw;
        wbi = fmax(0, wbi - bmw * (double)b->bm_size);
        if (split) {
            double fwi = fmin(s.ww[i], (double)(b->fw[i] - a->fw[i]) - bmw);
            double fbi =
                fmin(wbi, fmax(0, (double)(b->fwb[i] - a->fwb[i]) - bmw * (double)b->bm_size));
            double fli = (double)(b->fl[i] - a->fl[i]);
            s.ww[i] -= fwi;
            wbi -= fbi;
            /* Each member flush of a log reclaim is followed by a FUA head write there: those
             * run in the reclaim's own phase (sim_hdd_step), not among the requests' entries. */
            double heads = fmin(fwi, fli);
            fwi -= heads;
            fbi = fmax(0, fbi - heads * RK_PPL_BLOCK);
            s.fw[i] = fwi;
            nf += fwi;
            fb += fbi;
            nfl += fli;
        }
        nr += s.rw[i];
        nw += s.ww[i];
        rb += (double)(b->rb[i] - a->rb[i]);
        wb += wbi;
    }
    if (nr + nw + nf <= 0) {
        sim_bm_free(&s);
        return 0;
    }
    s.rpr = nr / ops;
    s.wpr = nw / ops;
    s.fpr = nf / ops;
    s.flpr = nfl / s.n / ops;
    s.rlen = nr > 0 ? (uint64_t)(rb / nr) : 0;
    s.wlen = nw > 0 ? (uint64_t)(wb / nw) : 0;
    s.flen = nf > 0 ? (uint64_t)(fb / nf) : 0;
    if (in->geom && in->geom->members)
        s.dbase = in->geom->data_offset;
    if (split) {
        s.mbase = in->geom->ppl_offset;
        s.msize = in->geom->ppl_size;
    }
    double req = (double)(b->bytes - a->bytes) / ops;
    s.rfrac = in->rfrac;
    if (s.rfrac > 0 && s.rfrac < 1) { /* mixed: client reads take their own bytes' reads */
        double creads = ops * s.rfrac, cwrites = ops - creads;
        double per = s.rlen ? fmax(1, req / (double)s.rlen) : 0;
        s.mrr = fmin(per, nr / creads);
        s.mwr = (nr - s.mrr * creads) / cwrites;
        s.mww = nw / cwrites;
        s.mfw = nf / cwrites;
        s.fpr = 0;
        s.flpr = nfl / s.n / cwrites;
    }
    s.depth = in->iodepth < 1 ? 1 : in->iodepth > SIM_MAX_DEPTH ? SIM_MAX_DEPTH : in->iodepth;
    s.m = calloc((size_t)s.n, sizeof(*s.m));
    s.slot = calloc((size_t)s.depth, sizeof(*s.slot));
    s.hq = hdd ? calloc((size_t)s.n, sizeof(*s.hq)) : NULL;
    if (split && !(s.ring = calloc((size_t)s.n, sizeof(*s.ring))))
        s.hq = (free(s.hq), NULL);
    s.creq = (uint64_t)req;
    /* fio's write offsets walk (or are drawn over) the job's array bytes */
    s.wspan = in->span                        ? in->span
              : in->geom && in->geom->members ? rk_raid_array_size(in->geom)
                                              : s.span;
    if (s.wspan < s.creq)
        s.wspan = s.creq;
    if (hdd && sim_layout_ok(in, s.n) && (nw + nf <= 0 || (s.rfrac > 0 && s.rfrac < 1))) {
        s.g = in->geom; /* a read job, or a mixed job's reads */
        s.aspan = in->span ? in->span : rk_raid_array_size(in->geom);
        s.lpure = nw + nf <= 0;
    }
    if (hdd && in->seq && nw + nf > 0 && in->geom && in->geom->members == (uint32_t)s.n &&
        (in->level == RK_LEVEL_RAID5 || in->level == RK_LEVEL_RAID6) &&
        in->geom->level == in->level && s.creq > 0) {
        uint32_t np = in->level == RK_LEVEL_RAID6 ? 2 : 1;
        s.lockrows = in->geom->members > np;
        s.rowbytes = (uint64_t)in->geom->chunk * (in->geom->members - np);
    }
    double mbs = 0;
    if (s.m && s.slot && (s.hq || !hdd)) {
        bool ok = true;
        for (int i = 0; i < s.n && ok; i++)
            ok = emul_model_init(&s.m[i], p, cap) == 0;
        if (ok)
            mbs = hdd ? sim_hdd_loop(&s, req) : sim_loop(&s, req);
    }
    sim_bm_free(&s);
    free(s.ring);
    free(s.hq);
    free(s.m);
    free(s.slot);
    return mbs;
}
