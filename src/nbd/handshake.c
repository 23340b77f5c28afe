/* NBD fixed newstyle handshake (NBD protocol, "Fixed newstyle negotiation", "Option types"):
 * greets the client, answers options until GO or EXPORT_NAME picks the export, or it leaves. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "nbd/nbd_int.h"
#include "nbd/proto.h"
#include "nbd/tls.h"
#include "nbd/wire.h"

/* Time a client has for the TLS handshake after the STARTTLS ACK (ms). */
#define HS_TLS_TIMEOUT_MS 10000

/* Send one option reply: 20-byte header plus optional payload (two parts, either may be 0). */
static int hs_reply(struct nbd_conn *c, uint32_t opt, uint32_t type, const void *p1, size_t l1,
                    const void *p2, size_t l2)
{
    uint8_t hdr[20];
    rk_put_be64(hdr, NBD_REP_MAGIC);
    rk_put_be32(hdr + 8, opt);
    rk_put_be32(hdr + 12, type);
    rk_put_be32(hdr + 16, (uint32_t)(l1 + l2));
    struct iovec iov[3] = {
        {.iov_base = hdr, .iov_len = sizeof(hdr)},
        {.iov_base = (void *)p1, .iov_len = l1},
        {.iov_base = (void *)p2, .iov_len = l2},
    };
    return nbd_send_iov(c->fd, iov, 3);
}

static int hs_ack(struct nbd_conn *c, uint32_t opt, uint32_t type)
{
    return hs_reply(c, opt, type, NULL, 0, NULL, 0);
}

/* Does name select our export? "" is the default export and always matches. */
static bool hs_name_matches(const struct rk_nbd_server *srv, const char *name, size_t len)
{
    return len == 0 || (strlen(srv->export_name) == len && !memcmp(srv->export_name, name, len));
}

/* Send one NBD_REP_INFO of the given type. */
static int hs_info(struct nbd_conn *c, uint32_t opt, uint16_t info, const void *p, size_t len)
{
    uint8_t t[2];
    rk_put_be16(t, info);
    return hs_reply(c, opt, NBD_REP_INFO, t, 2, p, len);
}

/* NBD_OPT_INFO / NBD_OPT_GO. Returns 1 when GO succeeded (enter transmission), 0 to continue
 * haggling, <0 on a socket error. */
static int hs_info_go(struct nbd_conn *c, uint32_t opt, const uint8_t *data, uint32_t len)
{
    struct rk_nbd_server *srv = c->srv;
    if (len < 6)
        return hs_ack(c, opt, NBD_REP_ERR_INVALID);
    uint32_t namelen = rk_get_be32(data);
    if (namelen > len - 6)
        return hs_ack(c, opt, NBD_REP_ERR_INVALID);
    const char *name = (const char *)data + 4;
    uint16_t nreq = rk_get_be16(data + 4 + namelen);
    if ((uint64_t)6 + namelen + 2ull * nreq != len)
        return hs_ack(c, opt, NBD_REP_ERR_INVALID);
    if (!hs_name_matches(srv, name, namelen))
        return hs_ack(c, opt, NBD_REP_ERR_UNKNOWN);

    bool want_name = false, want_desc = false;
    for (uint16_t i = 0; i < nreq; i++) {
        uint16_t t = rk_get_be16(data + 6 + namelen + 2 * i);
        want_name |= t == NBD_INFO_NAME;
        want_desc |= t == NBD_INFO_DESCRIPTION;
    }

    int r;
    uint8_t exp[10];
    rk_put_be64(exp, srv->dev->size);
    rk_put_be16(exp + 8, srv->tflags);
    if ((r = hs_info(c, opt, NBD_INFO_EXPORT, exp, sizeof(exp))))
        return r;
    if (want_name &&
        (r = hs_info(c, opt, NBD_INFO_NAME, srv->export_name, strlen(srv->export_name))))
        return r;
    if (want_desc && srv->description &&
        (r = hs_info(c, opt, NBD_INFO_DESCRIPTION, srv->description, strlen(srv->description))))
        return r;
    /* Always advertised: our minimum block size is not the protocol default of 1. */
    uint8_t bs[12];
    rk_put_be32(bs, srv->dev->block_size);
    rk_put_be32(bs + 4, srv->pref_block);
    rk_put_be32(bs + 8, srv->max_request);
    if ((r = hs_info(c, opt, NBD_INFO_BLOCK_SIZE, bs, sizeof(bs))))
        return r;
    if ((r = hs_ack(c, opt, NBD_REP_ACK)))
        return r;
    return opt == NBD_OPT_GO ? 1 : 0;
}

/* NBD_OPT_EXPORT_NAME: no error reply exists, so an unknown name ends the session. */
static int hs_export_name(struct nbd_conn *c, const uint8_t *data, uint32_t len)
{
    struct rk_nbd_server *srv = c->srv;
    if (!hs_name_matches(srv, (const char *)data, len))
        return -ENOENT;
    uint8_t buf[10 + 124] = {0};
    rk_put_be64(buf, srv->dev->size);
    rk_put_be16(buf + 8, srv->tflags);
    struct iovec iov = {.iov_base = buf, .iov_len = c->no_zeroes ? 10 : sizeof(buf)};
    int r = nbd_send_iov(c->fd, &iov, 1);
    return r ? r : 1;
}

static int hs_list(struct nbd_conn *c, uint32_t len)
{
    if (len)
        return hs_ack(c, NBD_OPT_LIST, NBD_REP_ERR_INVALID);
    const char *name = c->srv->export_name;
    uint8_t nl[4];
    rk_put_be32(nl, (uint32_t)strlen(name));
    int r = hs_reply(c, NBD_OPT_LIST, NBD_REP_SERVER, nl, 4, name, strlen(name));
    return r ? r : hs_ack(c, NBD_OPT_LIST, NBD_REP_ACK);
}

/* NBD_OPT_STARTTLS ("TLS support"): refused when TLS is off (UNSUP, as in NOTLS mode for a
 * server that does not offer it), with a payload or on a session already upgraded (INVALID).
 * After the ACK the TLS handshake runs; its failure ends the
 * connection (-EPROTO). No option state survives the upgrade: what was negotiated in plaintext
 * (structured replies) must be negotiated again, so an injected plaintext option cannot stick.
 * 0 to continue haggling, <0 to close. */
static int hs_starttls(struct nbd_conn *c, uint32_t len)
{
    struct rk_nbd_server *srv = c->srv;
    if (srv->tls_mode == RK_NBD_TLS_OFF || !srv->tls)
        return hs_ack(c, NBD_OPT_STARTTLS, NBD_REP_ERR_UNSUP);
    if (len || nbd_wire_is_tls(c->fd))
        return hs_ack(c, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID);
    int r = hs_ack(c, NBD_OPT_STARTTLS, NBD_REP_ACK);
    if (r)
        return r;
    r = nbd_tls_start(srv->tls, c->fd, HS_TLS_TIMEOUT_MS);
    if (r) {
        rk_debug("nbd: TLS handshake refused: %s", strerror(-r));
        return r;
    }
    c->structured = false;
    c->meta_alloc = false;
    return 0;
}

/* --tls require before the upgrade: only STARTTLS and ABORT pass; EXPORT_NAME cannot be
 * answered with an error, so it ends the session. 1 when opt was refused here (r set). */
static bool hs_tls_required(struct nbd_conn *c, uint32_t opt, int *r)
{
    if (c->srv->tls_mode != RK_NBD_TLS_REQUIRE || nbd_wire_is_tls(c->fd) ||
        opt == NBD_OPT_STARTTLS || opt == NBD_OPT_ABORT)
        return false;
    *r = opt == NBD_OPT_EXPORT_NAME ? -EACCES : hs_ack(c, opt, NBD_REP_ERR_TLS_REQD);
    return true;
}

int nbd_handshake(struct nbd_conn *c)
{
    uint8_t *data = NULL;
    uint8_t greet[18];
    rk_put_be64(greet, NBD_MAGIC);
    rk_put_be64(greet + 8, NBD_IHAVEOPT);
    rk_put_be16(greet + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
    struct iovec iov = {.iov_base = greet, .iov_len = sizeof(greet)};
    int r = nbd_send_iov(c->fd, &iov, 1);
    if (r)
        goto out;

    uint8_t cf[4];
    if ((r = nbd_recv_all(c->fd, cf, 4)))
        goto out;
    uint32_t cflags = rk_get_be32(cf);
    if (cflags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES)) {
        rk_debug("nbd: unknown client flags 0x%x", cflags);
        r = -EPROTO;
        goto out;
    }
    c->no_zeroes = cflags & NBD_FLAG_C_NO_ZEROES;

    data = malloc(NBD_OPT_MAX);
    if (!data) {
        r = -ENOMEM;
        goto out;
    }
    for (;;) {
        uint8_t oh[16];
        if ((r = nbd_recv_all(c->fd, oh, sizeof(oh))))
            goto out;
        if (rk_get_be64(oh) != NBD_IHAVEOPT) {
            r = -EPROTO;
            goto out;
        }
        uint32_t opt = rk_get_be32(oh + 8), len = rk_get_be32(oh + 12);
        if (len > NBD_OPT_MAX) {
            /* Too big to be honest: drain a bounded amount and refuse, else hang up. */
            if (len > NBD_OPT_DRAIN_MAX || opt == NBD_OPT_EXPORT_NAME) {
                r = -E2BIG;
                goto out;
            }
            if ((r = nbd_drain(c->fd, len)) || (r = hs_ack(c, opt, NBD_REP_ERR_TOO_BIG)))
                goto out;
            continue;
        }
        if (len && (r = nbd_recv_all(c->fd, data, len)))
            goto out;
        if (atomic_load(&c->srv->stopping) && opt != NBD_OPT_ABORT) {
            if (opt == NBD_OPT_EXPORT_NAME) {
                r = -ESHUTDOWN;
                goto out;
            }
            if ((r = hs_ack(c, opt, NBD_REP_ERR_SHUTDOWN)))
                goto out;
            continue;
        }
        if (hs_tls_required(c, opt, &r)) {
            if (r)
                goto out;
            continue;
        }
        switch (opt) {
        case NBD_OPT_STARTTLS:
            r = hs_starttls(c, len);
            break;
        case NBD_OPT_EXPORT_NAME:
            r = hs_export_name(c, data, len);
            break;
        case NBD_OPT_INFO:
        case NBD_OPT_GO:
            r = hs_info_go(c, opt, data, len);
            break;
        case NBD_OPT_LIST:
            r = hs_list(c, len);
            break;
        case NBD_OPT_STRUCTURED_REPLY:
            if (len) {
                r = hs_ack(c, opt, NBD_REP_ERR_INVALID);
                break;
            }
            c->structured = true;
            r = hs_ack(c, opt, NBD_REP_ACK);
            break;
        case NBD_OPT_LIST_META_CONTEXT:
        case NBD_OPT_SET_META_CONTEXT:
            r = nbd_meta_option(c, opt, data, len); /* meta_context.c */
            break;
        case NBD_OPT_ABORT:
            hs_ack(c, opt, NBD_REP_ACK); /* the client may already be gone */
            r = -ECONNABORTED;
            break;
        default:
            /* Extended headers and anything newer. */
            r = hs_ack(c, opt, NBD_REP_ERR_UNSUP);
            break;
        }
        if (r < 0)
            goto out;
        if (r == 1) {
            r = 0;
            goto out;
        }
    }
out:
    free(data);
    return r;
}
