/* raidkit's query keys of NBD URI members: see nbd_uri.h. */
#include "member/nbd_uri.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidkit/member_nbd.h"

#ifdef RAIDKIT_HAVE_LIBNBD
#include <inttypes.h>
#include <poll.h>
#include <time.h>

#include <libnbd.h>

static uint64_t uri_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rk_nbd_connect_deadline(struct nbd_handle *h, const char *uri, uint64_t timeout_ns, char *err,
                            size_t errlen)
{
    uint64_t limit = NBD_CONNECT_MAX_MS * 1000000ull;
    uint64_t span = timeout_ns < limit ? timeout_ns : limit;
    uint64_t deadline = uri_now_ns() + span;
    int r = nbd_aio_connect_uri(h, uri);
    while (r != -1 && nbd_aio_is_connecting(h) == 1) {
        uint64_t now = uri_now_ns();
        if (now >= deadline) {
            snprintf(err, errlen, "connect: no handshake within %" PRIu64 " ms", span / 1000000u);
            return -ETIMEDOUT;
        }
        struct pollfd fd = {.fd = nbd_aio_get_fd(h)};
        unsigned dir = nbd_aio_get_direction(h);
        fd.events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
                    (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0);
        uint64_t left_ms = (deadline - now) / 1000000u + 1;
        if (fd.fd < 0 || poll(&fd, 1, left_ms > 100 ? 100 : (int)left_ms) < 0) {
            if (fd.fd >= 0 && errno == EINTR)
                continue;
            r = -1;
            break;
        }
        if (fd.revents & (POLLIN | POLLHUP | POLLERR))
            r = nbd_aio_notify_read(h);
        else if (fd.revents & POLLOUT)
            r = nbd_aio_notify_write(h);
    }
    if (r != -1 && nbd_aio_is_ready(h) == 1)
        return 0;
    int e = nbd_get_errno();
    snprintf(err, errlen, "%s", nbd_get_error() ? nbd_get_error() : "connect: the server closed");
    return e ? -e : -EIO;
}

#endif

/* Parse the decimal value of key (len bytes at v) into *out within [1, max]. */
static int uri_num(const char *key, const char *v, size_t len, uint64_t max, uint64_t *out,
                   char *err, size_t errlen)
{
    char buf[32];
    char *end;
    if (len == 0 || len >= sizeof(buf) || v[0] < '0' || v[0] > '9')
        goto bad;
    memcpy(buf, v, len);
    buf[len] = 0;
    errno = 0;
    unsigned long long n = strtoull(buf, &end, 10);
    if (errno || *end || n < 1 || n > max)
        goto bad;
    *out = n;
    return 0;
bad:
    snprintf(err, errlen, "%s=%.*s: want a whole number from 1 to %llu", key, (int)len, v,
             (unsigned long long)max);
    return -EINVAL;
}

/* Append len bytes of s to luri at *at; false when it does not fit. */
static bool uri_put(char *luri, size_t luri_len, size_t *at, const char *s, size_t len)
{
    if (*at + len + 1 > luri_len)
        return false;
    memcpy(luri + *at, s, len);
    *at += len;
    luri[*at] = 0;
    return true;
}

int rk_nbd_uri_parse(const char *uri, struct rk_nbd_uri_opts *o, char *luri, size_t luri_len,
                     char *err, size_t errlen)
{
    *o = (struct rk_nbd_uri_opts){.connections = RK_NBD_DEFAULT_CONNECTIONS};
    const char *q = strchr(uri, '?');
    size_t at = 0;
    bool have_conns = false, have_to = false, first = true;
    if (luri_len)
        luri[0] = 0;
    if (!uri_put(luri, luri_len, &at, uri, q ? (size_t)(q - uri) : strlen(uri)))
        return -ENAMETOOLONG;
    for (const char *k = q ? q + 1 : NULL; k && *k;) {
        const char *amp = strchr(k, '&');
        size_t len = amp ? (size_t)(amp - k) : strlen(k);
        const char *eq = memchr(k, '=', len);
        size_t klen = eq ? (size_t)(eq - k) : len;
        const char *v = eq ? eq + 1 : k + len;
        size_t vlen = eq ? len - klen - 1 : 0;
        uint64_t n;
        int r = 0;
        if (klen == 11 && !memcmp(k, "connections", 11)) {
            r = have_conns
                    ? -EEXIST
                    : uri_num("connections", v, vlen, RK_NBD_MAX_CONNECTIONS, &n, err, errlen);
            have_conns = true;
            if (!r)
                o->connections = (unsigned)n;
        } else if (klen == 10 && !memcmp(k, "timeout-ms", 10)) {
            r = have_to ? -EEXIST : uri_num("timeout-ms", v, vlen, 86400000ull, &n, err, errlen);
            have_to = true;
            if (!r)
                o->timeout_ms = n;
        } else if (len) {
            if (!uri_put(luri, luri_len, &at, first ? "?" : "&", 1) ||
                !uri_put(luri, luri_len, &at, k, len))
                return -ENAMETOOLONG;
            first = false;
        }
        if (r == -EEXIST) {
            snprintf(err, errlen, "%.*s is given twice", (int)klen, k);
            r = -EINVAL;
        }
        if (r)
            return r;
        k = amp ? amp + 1 : NULL;
    }
    return 0;
}
