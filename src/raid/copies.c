/* Rebuild and scrub hooks of the copy levels with more than one copy (raid1, raid10): reconstruct
 * a slot's data from another live copy, and compare / repair the copies of every chunk. The
 * level's unmap hook says which array data a slot holds where. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/badrange.h"
#include "raid/copies.h"
#include "raid/job.h"

/* Read array range [aoff, aoff+len), which slot holds too, from another ACTIVE copy into buf.
 * -ENODEV: no other copy is active at all; -EIO: every active copy failed to read. */
static int copies_read_other(struct raid_priv *r, uint32_t slot, uint64_t aoff, uint64_t len,
                             char *buf)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run;
    int n = l->lvl->map(l, aoff, c, RK_MAX_MEMBERS, &run);
    uint32_t active = raid_slot_mask(r, RAID_STATES_READ);
    int ret = -ENODEV;
    for (int i = 0; i < n; i++) {
        uint32_t s = c[i].slot;
        if (s == slot || !(active & (1u << s)))
            continue;
        /* A copy recorded unreadable there is a live source that cannot serve: the range is
         * unreadable (-EIO, recorded on the target too), not a lost source (-ENODEV). */
        if (raid_bad_hit(r, s, c[i].member_off, len)) {
            ret = -EIO;
            continue;
        }
        ret = rk_dev_read(r->members[s], buf, len, l->g.data_offset + c[i].member_off);
        if (!ret)
            return 0;
        ret = -EIO;
    }
    return ret;
}

int raid_copies_reconstruct(struct raid_priv *r, uint32_t slot, uint64_t member_off, uint64_t len,
                            void *buf)
{
    const struct raid_layout *l = &r->l;
    char *p = buf;
    int ret = 0;
    while (len) {
        uint64_t aoff, piece;
        if (!l->lvl->unmap(l, slot, member_off, len, &aoff, &piece)) {
            memset(p, 0, piece); /* the layout keeps no data there */
        } else {
            int rc = copies_read_other(r, slot, aoff, piece, p);
            if (rc == -ENODEV)
                return rc;
            if (rc)
                ret = rc;
        }
        p += piece;
        member_off += piece;
        len -= piece;
    }
    return ret;
}

/* The copies of one array piece being scrubbed: extents in slot order and a chunk buffer per
 * copy (buf[i] holds copy i once read). */
struct copies_piece {
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    int n;
    char **buf;
};

/* Pick the content to keep among the readable copies (bit i of ok): the one most copies hold
 * (grp[i]: index of the first copy equal to copy i). Returns the winning group, or -1 when
 * nothing was read; *kind says how it was chosen when copies differ. */
static int copies_vote(const struct copies_piece *pc, uint64_t len, uint32_t ok, int *grp,
                       int *kind)
{
    int cnt[RK_MAX_MEMBERS] = {0}, first = -1, nread = 0;
    for (int i = 0; i < pc->n; i++) {
        if (!(ok & (1u << i)))
            continue;
        nread++;
        grp[i] = i;
        for (int j = 0; j < i; j++)
            if ((ok & (1u << j)) && grp[j] == j && !memcmp(pc->buf[i], pc->buf[j], len)) {
                grp[i] = j;
                break;
            }
        cnt[grp[i]]++;
        if (first < 0)
            first = i;
    }
    if (first < 0)
        return -1;
    int best = first, ties = 0;
    for (int i = 0; i < pc->n; i++) {
        if (cnt[i] > cnt[best]) {
            best = i;
            ties = 0;
        } else if (i != best && cnt[i] == cnt[best]) {
            ties++;
        }
    }
    /* A tie (also: every copy different) keeps the first copy in slot order. */
    if (ties)
        best = first;
    *kind = nread < 3 ? RK_MM_UNKNOWN_COPY : ties ? RK_MM_TIE : RK_MM_MAJORITY;
    return best;
}

/* Scrub one array chunk piece [aoff, aoff+len): read every active copy, keep the content most
 * copies hold (2 copies, a tie: the first readable one in slot order), count one mismatch if
 * any differs, and with repair write it over the copies that differ or could not be read.
 * -EIO when no copy reads. */
static int copies_scrub_piece(struct raid_priv *r, uint64_t aoff, uint64_t len, bool repair,
                              uint64_t *mismatches, struct copies_piece *pc)
{
    const struct raid_layout *l = &r->l;
    uint64_t run;
    int n = pc->n = l->lvl->map(l, aoff, pc->c, RK_MAX_MEMBERS, &run);
    struct rk_raid_extent *c = pc->c;
    uint32_t active = raid_slot_mask(r, RAID_STATES_READ), fix = 0, ok = 0;
    /* Slot order (raid10 maps a chunk's copies to e.g. slots 2 and 0): n is tiny. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && c[j - 1].slot > c[j].slot; j--) {
            struct rk_raid_extent t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        uint32_t s = c[i].slot;
        if (!(active & (1u << s)) || raid_bad_hit(r, s, c[i].member_off, len))
            continue;
        if (rk_dev_read(r->members[s], pc->buf[i], len, l->g.data_offset + c[i].member_off)) {
            rk_warn("scrub: read error on slot %u at data offset %llu", s,
                    (unsigned long long)c[i].member_off);
            fix |= 1u << i;
            continue;
        }
        ok |= 1u << i;
    }
    int grp[RK_MAX_MEMBERS], kind = RK_MM_UNKNOWN_COPY;
    int win = copies_vote(pc, len, ok, grp, &kind);
    if (win < 0)
        return -EIO;
    int first_bad = -1;
    for (int i = 0; i < n; i++)
        if ((ok & (1u << i)) && grp[i] != win) {
            fix |= 1u << i;
            if (first_bad < 0)
                first_bad = i;
        }
    if (first_bad >= 0) {
        ++*mismatches;
        struct rk_raid_mismatch m = {.slot = c[first_bad].slot,
                                     .member_off = c[first_bad].member_off,
                                     .len = len,
                                     .array_off = aoff,
                                     .kind = kind,
                                     .fixed = repair ? RK_FIX_COPY : RK_FIX_NONE};
        raid_job_mismatch(r, &m, true);
        rk_warn("scrub: array bytes [%llu, %llu): copies differ (%s); keeping slot %u's%s",
                (unsigned long long)aoff, (unsigned long long)(aoff + len),
                rk_raid_mismatch_kind_name(kind), c[win].slot,
                repair ? ", rewriting the others" : "");
    }
    if (!repair)
        return 0;
    for (int i = 0; i < n; i++) {
        if (!(fix & (1u << i)))
            continue;
        uint32_t s = c[i].slot;
        int w =
            rk_dev_write(r->members[s], pc->buf[win], len, l->g.data_offset + c[i].member_off, 0);
        if (w)
            raid_fail(r, s, w);
    }
    return 0;
}

/* Is slot's place at member_off the first copy of the array data aoff (lowest data-area
 * offset, then lowest slot)? Every array chunk is scrubbed once, at its first copy. */
static bool copies_first(const struct raid_layout *l, uint64_t aoff, uint32_t slot,
                         uint64_t member_off)
{
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run;
    int n = l->lvl->map(l, aoff, c, RK_MAX_MEMBERS, &run);
    for (int i = 0; i < n; i++)
        if (c[i].member_off < member_off || (c[i].member_off == member_off && c[i].slot < slot))
            return false;
    return true;
}

int raid_copies_scrub(struct raid_priv *r, uint64_t member_off, uint64_t len, unsigned mode,
                      uint64_t *mismatches)
{
    bool repair = mode & RAID_SCRUB_REPAIR;
    const struct raid_layout *l = &r->l;
    uint64_t chunk = l->g.chunk, end = member_off + len;
    uint32_t ncopy = l->g.members; /* no level keeps more copies than slots */
    char *bufs[RK_MAX_MEMBERS] = {0};
    struct copies_piece pc = {.buf = bufs};
    int ret = 0;
    for (uint32_t i = 0; i < ncopy; i++)
        if (!(bufs[i] = rk_buf_alloc(chunk))) {
            ret = -ENOMEM;
            goto out;
        }
    /* Every array chunk whose first copy lies in these rows, in member order. */
    for (uint64_t o = member_off; o < end;) {
        uint64_t piece = chunk - o % chunk < end - o ? chunk - o % chunk : end - o;
        for (uint32_t s = 0; s < l->g.members; s++) {
            uint64_t aoff, run;
            if (!l->lvl->unmap(l, s, o, piece, &aoff, &run) || !copies_first(l, aoff, s, o))
                continue;
            if (copies_scrub_piece(r, aoff, run, repair, mismatches, &pc))
                ret = -EIO;
        }
        o += piece;
    }
out:
    for (uint32_t i = 0; i < ncopy; i++)
        free(bufs[i]);
    return ret;
}
