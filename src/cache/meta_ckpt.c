/* Cache checkpoints (docs/FORMAT.md "Cache checkpoints"): a full snapshot of the index in the
 * slot that does not hold the newest checkpoint, then a new journal epoch. Order: payload and
 * header written, device flushed (the new checkpoint is durable), then journal block 0 of the
 * new epoch with FUA. A cut before the flush leaves the older checkpoint and its journal epoch
 * intact; a cut after it leaves the new checkpoint, whose epoch starts above every sequence on
 * disk, so no older journal block is ever replayed on top of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/meta_int.h"
#include "core/util.h"

static const char *const slot_name[2] = {"A", "B"};

int rkc_journal_epoch(struct rk_cache_meta *m)
{
    uint8_t *buf = rk_buf_alloc(RKC_BLK);
    if (!buf)
        return -ENOMEM;
    struct rkc_jb h = {.instance = m->sb.instance,
                       .seq = m->next_seq,
                       .commit_first = m->next_seq,
                       .flags = RKC_JB_END};
    rkc_jb_encode(&h, NULL, buf);
    int r = rk_dev_write(m->dev, buf, RKC_BLK, m->sb.journal_off, RK_WRITE_FUA);
    free(buf);
    return r;
}

int rkc_ckpt_write_locked(struct rk_cache_meta *m)
{
    uint64_t size = m->sb.ckpt_size, n = m->sb.nblocks;
    uint8_t *buf = rkc_big_alloc(size); /* zero filled */
    if (!buf)
        return -ENOMEM;
    for (uint64_t c = 0; c < n; c++)
        rk_put_le64(buf + RKC_BLK + c * 8, m->ent[c] & RKC_E_DISK);
    int slot = 1 - m->ck_slot;
    struct rkc_ck ck = {
        .instance = m->sb.instance,
        .seq = m->ck_seq + 1,
        .next_seq = m->next_seq + 1, /* one above every sequence on disk */
        .nblocks = n,
        .mode = m->mode,
        .payload_crc = rk_crc32c(buf + RKC_BLK, size - RKC_BLK),
    };
    rkc_ck_encode(&ck, buf);
    m->next_seq = ck.next_seq; /* only the committer (us) changes it */
    pthread_mutex_unlock(&m->lock);
    int r = rk_dev_write(m->dev, buf, size, m->sb.ckpt_off[slot], 0);
    if (!r)
        r = rk_dev_flush(m->dev);
    if (!r)
        r = rkc_journal_epoch(m);
    rkc_big_free(buf, size);
    pthread_mutex_lock(&m->lock);
    if (r)
        return r;
    m->ck_slot = slot;
    m->ck_seq = ck.seq;
    m->jpos = 1;
    m->next_seq = ck.next_seq + 1;
    m->checkpoints++;
    return 0;
}

/* Read and check the header of slot s: 0 with *ck, or -EBADMSG/-EIO with the reason in why. */
static int ck_header(struct rk_cache_meta *m, int s, uint8_t *blk, struct rkc_ck *ck, char *why,
                     size_t len)
{
    int r = rk_dev_read(m->dev, blk, RKC_BLK, m->sb.ckpt_off[s]);
    if (r) {
        rk_set_err(why, len, "unreadable: %s", strerror(-r));
        return r;
    }
    r = rkc_ck_decode(blk, ck, why, len);
    if (r)
        return r;
    if (ck->instance != m->sb.instance) {
        rk_set_err(why, len, "belongs to an earlier cache instance");
        return -EBADMSG;
    }
    if (ck->nblocks != m->sb.nblocks) {
        rk_set_err(why, len, "holds %llu blocks, the superblock %llu",
                   (unsigned long long)ck->nblocks, (unsigned long long)m->sb.nblocks);
        return -EBADMSG;
    }
    return 0;
}

/* Read slot s's payload and load it into the empty index. */
static int ck_payload(struct rk_cache_meta *m, int s, const struct rkc_ck *ck, char *why,
                      size_t len)
{
    uint64_t size = m->sb.ckpt_size - RKC_BLK;
    uint8_t *p = rkc_big_alloc(size);
    if (!p) {
        rk_set_err(why, len, "out of memory");
        return -ENOMEM;
    }
    int r = rk_dev_read(m->dev, p, size, m->sb.ckpt_off[s] + RKC_BLK);
    uint32_t crc = r ? 0 : rk_crc32c(p, size);
    if (r) {
        rk_set_err(why, len, "unreadable payload: %s", strerror(-r));
    } else if (crc != ck->payload_crc) {
        rk_set_err(why, len, "payload checksum mismatch (stored %08x, computed %08x)",
                   ck->payload_crc, crc);
        r = -EBADMSG;
    }
    for (uint64_t c = 0; !r && c < m->sb.nblocks; c++) {
        uint64_t e = rk_get_le64(p + c * 8);
        if (!e)
            continue;
        char w[160];
        uint64_t op = (e & RKC_E_DIRTY) ? RKC_OP_MAP_DIRTY : RKC_OP_MAP_CLEAN;
        if (!(e & RKC_E_MAPPED) || (e & ~RKC_E_DISK) ||
            rkc_index_apply(m, op << 56 | c, e & RKC_E_BBLOCK, w, sizeof(w))) {
            rk_set_err(why, len, "entry %llu (%016llx) is invalid", (unsigned long long)c,
                       (unsigned long long)e);
            r = -EBADMSG;
        }
    }
    rkc_big_free(p, size);
    return r;
}

int rkc_ckpt_load(struct rk_cache_meta *m, struct rkc_ck *ck, char *err, size_t errlen)
{
    uint8_t *blk = rk_buf_alloc(RKC_BLK);
    if (!blk) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    struct rkc_ck h[2];
    char why[2][200];
    int hr[2];
    for (int s = 0; s < 2; s++)
        hr[s] = ck_header(m, s, blk, &h[s], why[s], sizeof(why[s]));
    free(blk);
    /* Newest first; an intact header whose payload is damaged (a torn write) falls back. */
    int order[2] = {0, 1};
    if (!hr[1] && (hr[0] || h[1].seq > h[0].seq))
        order[0] = 1, order[1] = 0;
    for (int i = 0; i < 2; i++) {
        int s = order[i];
        if (hr[s])
            continue;
        int r = ck_payload(m, s, &h[s], why[s], sizeof(why[s]));
        if (!r) {
            *ck = h[s];
            m->ck_slot = s;
            m->ck_seq = h[s].seq;
            m->mode = (enum rk_cache_mode)h[s].mode;
            if (i == 1)
                rk_warn("cache %s: checkpoint slot %s: %s; using slot %s", m->name,
                        slot_name[order[0]], why[order[0]], slot_name[s]);
            return 0;
        }
        hr[s] = r;
        /* The failed load may have mapped blocks: start the other slot from empty. */
        rkc_index_free(m);
        if (rkc_index_init(m)) {
            rk_set_err(err, errlen, "out of memory");
            return -ENOMEM;
        }
    }
    rk_set_err(err, errlen, "no valid checkpoint (slot A: %s; slot B: %s)", why[0], why[1]);
    return -EBADMSG;
}
