/* The cache journal (docs/FORMAT.md "Cache journal"): records queued by the index calls, group
 * commit in whole 4 KiB blocks written with FUA (never rewriting a committed block), and the
 * replay at open that stops at the commit point.
 *
 * Journal epoch: the blocks written after one checkpoint, from journal block 0, with the
 * sequence numbers ck.next_seq, ck.next_seq + 1, ... (block i holds ck.next_seq + i). A commit is
 * a run of blocks sharing commit_first (the sequence of its first block); its last block has
 * RKC_JB_END. Replay applies whole commits only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/meta_int.h"
#include "core/util.h"

/* Write nb journal blocks holding n records rec at the current position (lock held on entry
 * and exit, dropped around the write). */
static int jr_write(struct rk_cache_meta *m, const uint64_t *rec, size_t n, uint64_t nb)
{
    uint8_t *buf = rk_buf_alloc(nb * RKC_BLK);
    if (!buf)
        return -ENOMEM;
    uint64_t first = m->next_seq, pos = m->jpos;
    for (uint64_t b = 0; b < nb; b++) {
        size_t k = n - b * RKC_JB_RECS < RKC_JB_RECS ? n - b * RKC_JB_RECS : RKC_JB_RECS;
        struct rkc_jb h = {
            .instance = m->sb.instance,
            .seq = first + b,
            .commit_first = first,
            .nrec = (uint32_t)k,
            .flags = b + 1 == nb ? RKC_JB_END : 0,
        };
        rkc_jb_encode(&h, rec + 2 * b * RKC_JB_RECS, buf + b * RKC_BLK);
    }
    pthread_mutex_unlock(&m->lock);
    int r =
        rk_dev_write(m->dev, buf, nb * RKC_BLK, m->sb.journal_off + pos * RKC_BLK, RK_WRITE_FUA);
    pthread_mutex_lock(&m->lock);
    free(buf);
    if (!r) {
        m->jpos += nb;
        m->next_seq += nb;
    }
    return r;
}

/* Free the blocks whose unmap records (rec, n) are now durable. Lock held. */
static void jr_release_unmapped(struct rk_cache_meta *m, const uint64_t *rec, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t c = rec[2 * i] & ((1ull << 56) - 1);
        if ((rec[2 * i] >> 56) == RKC_OP_UNMAP && m->ent[c] == RKC_E_LIMBO)
            rkc_free_push(m, (uint32_t)c);
    }
}

/* One commit round (lock held, m->committing owned): takes every queued record and makes it
 * durable, in the journal or, when the journal is full, by a checkpoint. */
static int jr_commit_round(struct rk_cache_meta *m)
{
    uint64_t *rec = m->pend;
    size_t n = m->npend;
    uint64_t upto = m->queued;
    m->pend = NULL;
    m->npend = m->pend_cap = 0;
    uint64_t nb = (n + RKC_JB_RECS - 1) / RKC_JB_RECS;
    int r = 0;
    if (!n)
        r = m->failed; /* nothing was kept (a failed queue): m->failed says why */
    else if (m->jpos + nb > m->jblocks)
        r = rkc_ckpt_write_locked(m); /* the snapshot holds every taken record */
    else
        r = jr_write(m, rec, n, nb);
    if (!r) {
        jr_release_unmapped(m, rec, n);
        m->durable = upto;
        m->commits++;
    }
    free(rec);
    return r;
}

int rk_cache_meta_commit(struct rk_cache_meta *m)
{
    pthread_mutex_lock(&m->lock);
    uint64_t want = m->queued;
    while (m->durable < want && !m->failed) {
        if (m->readonly) {
            m->failed = -EROFS;
            break;
        }
        if (m->committing) {
            pthread_cond_wait(&m->cond, &m->lock);
            continue;
        }
        m->committing = true;
        int r = jr_commit_round(m);
        m->committing = false;
        if (r && !m->failed) {
            m->failed = r;
            rk_err("cache %s: metadata commit failed: %s", m->name, strerror(-r));
        }
        pthread_cond_broadcast(&m->cond);
    }
    int r = m->durable >= want ? 0 : m->failed;
    pthread_mutex_unlock(&m->lock);
    return r;
}

/* True when block i is an intact block of this instance (whatever its sequence). */
static bool jr_block(const struct rk_cache_meta *m, const uint8_t *j, uint64_t i, struct rkc_jb *h)
{
    return rkc_jb_decode(j + i * RKC_BLK, h) == 0 && h->instance == m->sb.instance;
}

/* Apply the records of blocks [from, to) (one whole commit). */
static int jr_apply(struct rk_cache_meta *m, const uint8_t *j, uint64_t from, uint64_t to,
                    char *err, size_t errlen)
{
    for (uint64_t b = from; b < to; b++) {
        const uint8_t *blk = j + b * RKC_BLK;
        uint32_t nrec = rk_get_le32(blk + 32);
        for (uint32_t i = 0; i < nrec; i++) {
            const uint8_t *r = blk + RKC_JB_HDR + i * RKC_REC_SIZE;
            char why[160];
            if (rkc_index_apply(m, rk_get_le64(r), rk_get_le64(r + 8), why, sizeof(why))) {
                rk_set_err(err, errlen, "corrupted journal: block %llu record %u: %s",
                           (unsigned long long)b, i, why);
                return -EBADMSG;
            }
        }
    }
    return 0;
}

/* After the replay stopped at block k (expected sequence s): a later intact block of this epoch
 * that belongs to a later commit proves block k was acknowledged, so it is damaged, not torn. */
static int jr_check_tail(const struct rk_cache_meta *m, const uint8_t *j, uint64_t k, uint64_t s,
                         char *err, size_t errlen)
{
    for (uint64_t i = k + 1; i < m->jblocks; i++) {
        struct rkc_jb h;
        if (jr_block(m, j, i, &h) && h.seq == s + (i - k) && h.commit_first > s) {
            rk_set_err(err, errlen,
                       "corrupted journal: block %llu is damaged but block %llu of a later "
                       "commit follows it",
                       (unsigned long long)k, (unsigned long long)i);
            return -EBADMSG;
        }
    }
    return 0;
}

int rkc_journal_replay(struct rk_cache_meta *m, const struct rkc_ck *ck, char *err, size_t errlen)
{
    uint8_t *j = rkc_big_alloc(m->sb.journal_size);
    if (!j) {
        rk_set_err(err, errlen, "out of memory reading the journal");
        return -ENOMEM;
    }
    int r = rk_dev_read(m->dev, j, m->sb.journal_size, m->sb.journal_off);
    if (r) {
        rk_set_err(err, errlen, "cannot read the journal: %s", strerror(-r));
        rkc_big_free(j, m->sb.journal_size);
        return r;
    }
    uint64_t maxseq = 0, s = ck->next_seq, k = 0, staged = 0;
    struct rkc_jb h;
    for (uint64_t i = 0; i < m->jblocks; i++)
        if (jr_block(m, j, i, &h) && h.seq > maxseq)
            maxseq = h.seq;
    if (jr_block(m, j, 0, &h) && h.seq > s) {
        rk_set_err(err, errlen,
                   "the journal follows a newer checkpoint (sequence %llu > %llu) that is "
                   "damaged",
                   (unsigned long long)h.seq, (unsigned long long)s);
        rkc_big_free(j, m->sb.journal_size);
        return -EBADMSG;
    }
    for (; k < m->jblocks && !r; k++, s++) {
        if (!jr_block(m, j, k, &h) || h.seq != s)
            break;
        if (h.commit_first != (k == staged ? s : ck->next_seq + staged))
            break; /* not the commit in progress: a stale block */
        if (h.flags & RKC_JB_END) {
            r = jr_apply(m, j, staged, k + 1, err, errlen);
            staged = k + 1;
        }
    }
    if (!r && k < m->jblocks)
        r = jr_check_tail(m, j, k, s, err, errlen);
    rkc_big_free(j, m->sb.journal_size);
    if (r)
        return r;
    m->jpos = staged;
    m->next_seq = (maxseq + 1 > s ? maxseq + 1 : s);
    return 0;
}
