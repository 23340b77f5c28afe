/* Cache device codecs (docs/FORMAT.md "Cache device"): the superblock, the checkpoint header and
 * the journal block, each 4 KiB, little-endian, CRC-32C protected; and the device layout.
 *
 * Superblock: 0 magic[8] 8 version u32 12 header_size u32 16 crc32c u32 20 mode u32
 *   24 cache_uuid[16] 40 array_uuid[16] 56 array_size u64 64 block_size u32 68 reserved u32
 *   72 nblocks u64 80 instance u64 88 ckpt_a u64 96 ckpt_b u64 104 ckpt_size u64
 *   112 journal_offset u64 120 journal_size u64 128 data_offset u64 136 ctime u64
 *   144..4095 reserved (zero); crc over all 4096 bytes with the crc field zero.
 * Checkpoint header: 0 magic[8] 8 instance 16 seq 24 next_seq 32 nblocks (u64) 40 mode u32
 *   44 payload_crc u32 48..4091 zero 4092 crc32c of [0, 4092).
 * Journal block: 0 magic[8] 8 instance 16 seq 24 commit_first (u64) 32 nrec u32 36 flags u32
 *   40..47 zero 48 records (16 bytes each) then zero, 4092 crc32c of [0, 4092).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "cache/meta_int.h"
#include "core/util.h"

#define SB_HDR_SIZE 4096u
#define SB_END      144u
#define CK_END      48u
#define MiB         (1024ull * 1024ull)

static bool zero_bytes(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

void rkc_sb_encode(const struct rkc_sb *sb, uint8_t *out)
{
    memset(out, 0, RKC_BLK);
    memcpy(out, RKC_SB_MAGIC, 8);
    rk_put_le32(out + 8, sb->version);
    rk_put_le32(out + 12, SB_HDR_SIZE);
    rk_put_le32(out + 20, sb->mode);
    memcpy(out + 24, sb->cache_uuid, 16);
    memcpy(out + 40, sb->array_uuid, 16);
    rk_put_le64(out + 56, sb->array_size);
    rk_put_le32(out + 64, sb->block_size);
    rk_put_le64(out + 72, sb->nblocks);
    rk_put_le64(out + 80, sb->instance);
    rk_put_le64(out + 88, sb->ckpt_off[0]);
    rk_put_le64(out + 96, sb->ckpt_off[1]);
    rk_put_le64(out + 104, sb->ckpt_size);
    rk_put_le64(out + 112, sb->journal_off);
    rk_put_le64(out + 120, sb->journal_size);
    rk_put_le64(out + 128, sb->data_off);
    rk_put_le64(out + 136, sb->ctime);
    rk_put_le32(out + 16, rk_crc32c(out, RKC_BLK));
}

/* Checkpoint slot size for n blocks: the header block and 8 bytes per block, 4 KiB rounded. */
static uint64_t ck_size(uint64_t n)
{
    return RKC_BLK + (n * 8 + RKC_BLK - 1) / RKC_BLK * RKC_BLK;
}

/* The layout fields of sb against each other (nblocks already bounded). */
static int sb_check_layout(const struct rkc_sb *sb, char *err, size_t errlen)
{
    uint64_t cs = ck_size(sb->nblocks);
    if (sb->ckpt_off[0] != RKC_BLK || sb->ckpt_size != cs ||
        sb->ckpt_off[1] != sb->ckpt_off[0] + cs) {
        rk_set_err(err, errlen, "checkpoint slots (%llu, %llu, size %llu) do not fit %llu blocks",
                   (unsigned long long)sb->ckpt_off[0], (unsigned long long)sb->ckpt_off[1],
                   (unsigned long long)sb->ckpt_size, (unsigned long long)sb->nblocks);
        return -EINVAL;
    }
    if (sb->journal_off != sb->ckpt_off[1] + cs || sb->journal_size % RKC_BLK ||
        sb->journal_size < 16 * RKC_BLK || sb->journal_size > 1024 * MiB) {
        rk_set_err(err, errlen, "journal area (%llu, size %llu) out of bounds",
                   (unsigned long long)sb->journal_off, (unsigned long long)sb->journal_size);
        return -EINVAL;
    }
    if (sb->data_off < sb->journal_off + sb->journal_size || sb->data_off % sb->block_size) {
        rk_set_err(err, errlen, "data offset %llu overlaps the metadata or is not aligned",
                   (unsigned long long)sb->data_off);
        return -EINVAL;
    }
    return 0;
}

static int sb_check(const struct rkc_sb *sb, char *err, size_t errlen)
{
    if (sb->mode > RK_CACHE_WRITEAROUND) {
        rk_set_err(err, errlen, "unknown mode %u", sb->mode);
        return -EINVAL;
    }
    if (zero_bytes(sb->cache_uuid, 16) || zero_bytes(sb->array_uuid, 16) || !sb->instance) {
        rk_set_err(err, errlen, "zero cache UUID, array UUID or instance");
        return -EINVAL;
    }
    if (!sb->array_size) {
        rk_set_err(err, errlen, "array size 0");
        return -EINVAL;
    }
    uint32_t bs = sb->block_size;
    if (bs < 4096 || bs > MiB || (bs & (bs - 1))) {
        rk_set_err(err, errlen, "block size %u is not a power of two in [4 KiB, 1 MiB]", bs);
        return -EINVAL;
    }
    if (sb->nblocks < 16 || sb->nblocks > RKC_MAX_BLOCKS) {
        rk_set_err(err, errlen, "block count %llu out of [16, %llu]",
                   (unsigned long long)sb->nblocks, (unsigned long long)RKC_MAX_BLOCKS);
        return -EINVAL;
    }
    return sb_check_layout(sb, err, errlen);
}

int rkc_sb_decode(const uint8_t *buf, struct rkc_sb *sb, char *err, size_t errlen)
{
    memset(sb, 0, sizeof(*sb));
    if (memcmp(buf, RKC_SB_MAGIC, 8)) {
        rk_set_err(err, errlen, "not a raidkit cache device (no cache superblock)");
        return -ENODATA;
    }
    sb->version = rk_get_le32(buf + 8);
    if (sb->version != RKC_VERSION) {
        rk_set_err(err, errlen, "unsupported cache superblock version %u", sb->version);
        return -EPROTONOSUPPORT;
    }
    if (rk_get_le32(buf + 12) != SB_HDR_SIZE) {
        rk_set_err(err, errlen, "cache superblock header size %u", rk_get_le32(buf + 12));
        return -EINVAL;
    }
    uint8_t tmp[RKC_BLK];
    memcpy(tmp, buf, RKC_BLK);
    memset(tmp + 16, 0, 4);
    uint32_t stored = rk_get_le32(buf + 16), calc = rk_crc32c(tmp, RKC_BLK);
    if (stored != calc) {
        rk_set_err(err, errlen, "cache superblock checksum mismatch (stored %08x, computed %08x)",
                   stored, calc);
        return -EBADMSG;
    }
    sb->mode = rk_get_le32(buf + 20);
    memcpy(sb->cache_uuid, buf + 24, 16);
    memcpy(sb->array_uuid, buf + 40, 16);
    sb->array_size = rk_get_le64(buf + 56);
    sb->block_size = rk_get_le32(buf + 64);
    sb->nblocks = rk_get_le64(buf + 72);
    sb->instance = rk_get_le64(buf + 80);
    sb->ckpt_off[0] = rk_get_le64(buf + 88);
    sb->ckpt_off[1] = rk_get_le64(buf + 96);
    sb->ckpt_size = rk_get_le64(buf + 104);
    sb->journal_off = rk_get_le64(buf + 112);
    sb->journal_size = rk_get_le64(buf + 120);
    sb->data_off = rk_get_le64(buf + 128);
    sb->ctime = rk_get_le64(buf + 136);
    if (rk_get_le32(buf + 68) || !zero_bytes(buf + SB_END, RKC_BLK - SB_END)) {
        rk_set_err(err, errlen, "cache superblock reserved bytes are not zero");
        return -EINVAL;
    }
    return sb_check(sb, err, errlen);
}

void rkc_ck_encode(const struct rkc_ck *ck, uint8_t *out)
{
    memset(out, 0, RKC_BLK);
    memcpy(out, RKC_CK_MAGIC, 8);
    rk_put_le64(out + 8, ck->instance);
    rk_put_le64(out + 16, ck->seq);
    rk_put_le64(out + 24, ck->next_seq);
    rk_put_le64(out + 32, ck->nblocks);
    rk_put_le32(out + 40, ck->mode);
    rk_put_le32(out + 44, ck->payload_crc);
    rk_put_le32(out + RKC_BLK - 4, rk_crc32c(out, RKC_BLK - 4));
}

int rkc_ck_decode(const uint8_t *buf, struct rkc_ck *ck, char *err, size_t errlen)
{
    memset(ck, 0, sizeof(*ck));
    if (memcmp(buf, RKC_CK_MAGIC, 8)) {
        rk_set_err(err, errlen, "no checkpoint header");
        return -EBADMSG;
    }
    uint32_t stored = rk_get_le32(buf + RKC_BLK - 4), calc = rk_crc32c(buf, RKC_BLK - 4);
    if (stored != calc) {
        rk_set_err(err, errlen, "header checksum mismatch (stored %08x, computed %08x)", stored,
                   calc);
        return -EBADMSG;
    }
    if (!zero_bytes(buf + CK_END, RKC_BLK - 4 - CK_END)) {
        rk_set_err(err, errlen, "header reserved bytes are not zero");
        return -EBADMSG;
    }
    ck->instance = rk_get_le64(buf + 8);
    ck->seq = rk_get_le64(buf + 16);
    ck->next_seq = rk_get_le64(buf + 24);
    ck->nblocks = rk_get_le64(buf + 32);
    ck->mode = rk_get_le32(buf + 40);
    ck->payload_crc = rk_get_le32(buf + 44);
    if (ck->mode > RK_CACHE_WRITEAROUND || !ck->seq) {
        rk_set_err(err, errlen, "mode %u or sequence %llu out of bounds", ck->mode,
                   (unsigned long long)ck->seq);
        return -EBADMSG;
    }
    return 0;
}

void rkc_jb_encode(const struct rkc_jb *h, const uint64_t *rec, uint8_t *out)
{
    memset(out, 0, RKC_BLK);
    memcpy(out, RKC_JB_MAGIC, 8);
    rk_put_le64(out + 8, h->instance);
    rk_put_le64(out + 16, h->seq);
    rk_put_le64(out + 24, h->commit_first);
    rk_put_le32(out + 32, h->nrec);
    rk_put_le32(out + 36, h->flags);
    for (uint32_t i = 0; i < h->nrec; i++) {
        rk_put_le64(out + RKC_JB_HDR + i * RKC_REC_SIZE, rec[2 * i]);
        rk_put_le64(out + RKC_JB_HDR + i * RKC_REC_SIZE + 8, rec[2 * i + 1]);
    }
    rk_put_le32(out + RKC_BLK - 4, rk_crc32c(out, RKC_BLK - 4));
}

int rkc_jb_decode(const uint8_t *buf, struct rkc_jb *h)
{
    memset(h, 0, sizeof(*h));
    if (memcmp(buf, RKC_JB_MAGIC, 8) ||
        rk_get_le32(buf + RKC_BLK - 4) != rk_crc32c(buf, RKC_BLK - 4))
        return -EBADMSG;
    h->instance = rk_get_le64(buf + 8);
    h->seq = rk_get_le64(buf + 16);
    h->commit_first = rk_get_le64(buf + 24);
    h->nrec = rk_get_le32(buf + 32);
    h->flags = rk_get_le32(buf + 36);
    if (h->nrec > RKC_JB_RECS || (h->flags & ~RKC_JB_END) || h->commit_first > h->seq ||
        !zero_bytes(buf + 40, 8))
        return -EBADMSG;
    size_t used = RKC_JB_HDR + (size_t)h->nrec * RKC_REC_SIZE;
    if (!zero_bytes(buf + used, RKC_BLK - 4 - used))
        return -EBADMSG;
    return 0;
}

/* Metadata end (data offset) for n blocks. */
static uint64_t layout_data_off(struct rkc_sb *sb, uint64_t n, uint64_t jsize)
{
    uint64_t cs = ck_size(n);
    if (!jsize) {
        jsize = (n * 8 + MiB - 1) / MiB * MiB;
        jsize = jsize < MiB ? MiB : jsize > 64 * MiB ? 64 * MiB : jsize;
    }
    sb->ckpt_off[0] = RKC_BLK;
    sb->ckpt_off[1] = RKC_BLK + cs;
    sb->ckpt_size = cs;
    sb->journal_off = RKC_BLK + 2 * cs;
    sb->journal_size = jsize;
    uint64_t align = sb->block_size > MiB ? sb->block_size : MiB;
    return (sb->journal_off + jsize + align - 1) / align * align;
}

int rkc_layout(struct rkc_sb *sb, uint64_t dev_size, uint64_t journal_size, char *err,
               size_t errlen)
{
    if (journal_size &&
        (journal_size % RKC_BLK || journal_size < 16 * RKC_BLK || journal_size > 1024 * MiB)) {
        rk_set_err(err, errlen, "journal size %llu: a 4 KiB multiple in [64 KiB, 1 GiB]",
                   (unsigned long long)journal_size);
        return -EINVAL;
    }
    uint64_t n = dev_size / sb->block_size;
    if (n > RKC_MAX_BLOCKS)
        n = RKC_MAX_BLOCKS;
    for (;;) {
        uint64_t off = layout_data_off(sb, n, journal_size);
        if (off + n * sb->block_size <= dev_size || n < 16)
            break;
        n = off >= dev_size ? 0 : (dev_size - off) / sb->block_size;
    }
    if (n < 16) {
        rk_set_err(err, errlen,
                   "device too small: %llu bytes hold fewer than 16 cache blocks of %u bytes "
                   "after the metadata",
                   (unsigned long long)dev_size, sb->block_size);
        return -ENOSPC;
    }
    sb->nblocks = n;
    sb->data_off = layout_data_off(sb, n, journal_size);
    return 0;
}

void *rkc_big_alloc(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void rkc_big_free(void *p, size_t len)
{
    if (p)
        munmap(p, len);
}
