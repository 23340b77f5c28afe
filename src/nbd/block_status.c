/* NBD_CMD_BLOCK_STATUS for base:allocation (NBD protocol, "NBD_CMD_BLOCK_STATUS", "The base:
 * metadata namespace"): the device's allocation map (rk_dev_map) as one
 * NBD_REPLY_TYPE_BLOCK_STATUS chunk; holes are NBD_STATE_HOLE | NBD_STATE_ZERO. */
#include <errno.h>
#include <stdlib.h>

#include "core/util.h"
#include "nbd/nbd_int.h"
#include "nbd/proto.h"

int nbd_block_status_build(struct nbd_conn *c, const struct nbd_req *r, void **msg, size_t *msg_len)
{
    struct rk_dev *dev = c->srv->dev;
    uint32_t max = r->flags & NBD_CMD_FLAG_REQ_ONE ? 1 : NBD_BS_MAX_EXTENTS;
    /* Walk the map first, merging runs of equal status, then size the message. */
    uint32_t *ext = malloc(2 * sizeof(uint32_t) * max);
    if (!ext)
        return -ENOMEM;
    uint32_t n = 0;
    uint64_t off = r->off, end = r->off + r->len;
    while (off < end) {
        uint64_t e;
        bool hole;
        if (rk_dev_map(dev, off, end - off, &e, &hole)) {
            e = end - off; /* cannot tell (not expected after validation): data */
            hole = false;
        }
        uint32_t st = hole ? NBD_STATE_HOLE | NBD_STATE_ZERO : 0;
        if (n && ext[2 * (n - 1) + 1] == st) {
            ext[2 * (n - 1)] += (uint32_t)e; /* e <= r->len - done: the sum fits */
        } else {
            if (n == max)
                break;
            ext[2 * n] = (uint32_t)e;
            ext[2 * n + 1] = st;
            n++;
        }
        off += e;
    }
    size_t plen = 4 + 8 * (size_t)n;
    uint8_t *m = malloc(NBD_STRUCTURED_SIZE + plen);
    if (!m) {
        free(ext);
        return -ENOMEM;
    }
    rk_put_be32(m, NBD_STRUCTURED_MAGIC);
    rk_put_be16(m + 4, NBD_REPLY_FLAG_DONE);
    rk_put_be16(m + 6, NBD_REPLY_TYPE_BLOCK_STATUS);
    rk_put_be64(m + 8, r->handle);
    rk_put_be32(m + 16, (uint32_t)plen);
    rk_put_be32(m + 20, NBD_META_ID_ALLOC);
    for (uint32_t i = 0; i < n; i++) {
        rk_put_be32(m + 24 + 8 * i, ext[2 * i]);
        rk_put_be32(m + 28 + 8 * i, ext[2 * i + 1]);
    }
    free(ext);
    *msg = m;
    *msg_len = NBD_STRUCTURED_SIZE + plen;
    return 0;
}
