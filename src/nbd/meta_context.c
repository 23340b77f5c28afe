/* NBD metadata context negotiation (NBD protocol, "Metadata querying", options
 * NBD_OPT_LIST_META_CONTEXT and NBD_OPT_SET_META_CONTEXT): the only context offered is
 * base:allocation (docs/ARCHITECTURE.md, "NBD block status"). */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "core/util.h"
#include "nbd/nbd_int.h"
#include "nbd/proto.h"
#include "nbd/wire.h"

static const char meta_alloc_name[] = "base:allocation";

/* One option reply: header, then an optional 32-bit id and name (NBD_REP_META_CONTEXT). */
static int meta_reply(struct nbd_conn *c, uint32_t opt, uint32_t type, bool ctx)
{
    uint8_t hdr[24];
    size_t nl = ctx ? strlen(meta_alloc_name) : 0;
    rk_put_be64(hdr, NBD_REP_MAGIC);
    rk_put_be32(hdr + 8, opt);
    rk_put_be32(hdr + 12, type);
    rk_put_be32(hdr + 16, ctx ? (uint32_t)(4 + nl) : 0);
    /* LIST replies carry id 0 (reserved), SET replies the selected context's id. */
    rk_put_be32(hdr + 20, opt == NBD_OPT_SET_META_CONTEXT ? NBD_META_ID_ALLOC : 0);
    struct iovec iov[2] = {{.iov_base = hdr, .iov_len = ctx ? 24 : 20},
                           {.iov_base = (void *)meta_alloc_name, .iov_len = nl}};
    return nbd_send_iov(c->fd, iov, 2);
}

/* Does query q (qlen bytes) select base:allocation? LIST also takes the "base:" wildcard. */
static bool meta_matches(uint32_t opt, const uint8_t *q, uint32_t qlen)
{
    size_t nl = strlen(meta_alloc_name);
    if (qlen == nl && !memcmp(q, meta_alloc_name, nl))
        return true;
    return opt == NBD_OPT_LIST_META_CONTEXT && qlen == 5 && !memcmp(q, "base:", 5);
}

int nbd_meta_option(struct nbd_conn *c, uint32_t opt, const uint8_t *data, uint32_t len)
{
    struct rk_nbd_server *srv = c->srv;
    if (opt == NBD_OPT_SET_META_CONTEXT)
        c->meta_alloc = false; /* replaced even when this request fails */
    if (opt == NBD_OPT_SET_META_CONTEXT && !c->structured)
        return meta_reply(c, opt, NBD_REP_ERR_INVALID, false);
    if (len < 8)
        return meta_reply(c, opt, NBD_REP_ERR_INVALID, false);
    uint32_t namelen = rk_get_be32(data);
    if (namelen > len - 8)
        return meta_reply(c, opt, NBD_REP_ERR_INVALID, false);
    const char *name = (const char *)data + 4;
    uint32_t nq = rk_get_be32(data + 4 + namelen);
    uint64_t pos = 8ull + namelen;
    bool found = opt == NBD_OPT_LIST_META_CONTEXT && nq == 0; /* list everything */
    for (uint32_t i = 0; i < nq; i++) {
        if (pos + 4 > len)
            return meta_reply(c, opt, NBD_REP_ERR_INVALID, false);
        uint32_t ql = rk_get_be32(data + pos);
        if (ql > len - pos - 4)
            return meta_reply(c, opt, NBD_REP_ERR_INVALID, false);
        found |= meta_matches(opt, data + pos + 4, ql);
        pos += 4ull + ql;
    }
    if (pos != len)
        return meta_reply(c, opt, NBD_REP_ERR_INVALID, false);
    bool ours = namelen == 0 ||
                (strlen(srv->export_name) == namelen && !memcmp(srv->export_name, name, namelen));
    if (!ours)
        return meta_reply(c, opt, NBD_REP_ERR_UNKNOWN, false);
    int r = 0;
    if (found && (r = meta_reply(c, opt, NBD_REP_META_CONTEXT, true)))
        return r;
    if (opt == NBD_OPT_SET_META_CONTEXT)
        c->meta_alloc = found;
    return meta_reply(c, opt, NBD_REP_ACK, false);
}
