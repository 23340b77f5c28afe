/* `create` for NBD URI members: see create_uri.h. */
#include "meta/create_uri.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raidkit/member.h"
#include "raidkit/member_nbd.h"

#define CREATE_URI_PIECE (32ull << 20)

int create_uri_check(const char *uri, bool force, size_t probe_len,
                     const char *(*sig)(const uint8_t *buf, size_t len), uint64_t *size, char *err,
                     size_t errlen)
{
    struct rk_dev *dev = NULL;
    int r = rk_member_open(uri, 0, &dev);
    if (r) {
        rk_set_err(err, errlen, "member %s: cannot connect: %s", uri, rk_nbd_last_error());
        return r;
    }
    rk_warn("member %s is remote: no lock protects it from a second user; only the "
            "superblock's event counter tells a stale copy (docs/CLI.md \"Member URIs\")",
            uri);
    *size = dev->size;
    size_t n = probe_len < dev->size ? probe_len : (size_t)dev->size;
    uint8_t *probe = calloc(1, probe_len);
    r = probe ? rk_dev_read(dev, probe, n, 0) : -ENOMEM;
    if (r) {
        rk_set_err(err, errlen, "member %s is not readable: %s", uri, strerror(-r));
    } else {
        const char *s = sig(probe, n);
        if (s && !force) {
            r = -EEXIST;
            rk_set_err(err, errlen, "member %s already holds %s; use --force to overwrite it", uri,
                       s);
        }
    }
    free(probe);
    rk_dev_close(dev);
    return r;
}

int create_uri_write(const char *uri, const void *buf, uint64_t len, uint64_t off, const char *what,
                     char *err, size_t errlen)
{
    struct rk_dev *dev = NULL;
    int r = rk_member_open(uri, 0, &dev);
    if (!r)
        r = rk_dev_write(dev, buf, len, off, 0);
    if (!r)
        r = rk_dev_flush(dev);
    if (r)
        rk_set_err(err, errlen, "member %s: cannot write %s: %s", uri, what, strerror(-r));
    rk_dev_close(dev);
    return r;
}

int create_uri_zero(const char *uri, uint64_t len, uint64_t off)
{
    struct rk_dev *dev = NULL;
    int r = rk_member_open(uri, 0, &dev);
    if (!r && off + len > dev->size)
        len = off < dev->size ? dev->size - off : 0;
    for (uint64_t done = 0; !r && done < len; done += CREATE_URI_PIECE) {
        uint64_t n = len - done < CREATE_URI_PIECE ? len - done : CREATE_URI_PIECE;
        r = rk_dev_write_zeroes(dev, n, off + done, RK_ZERO_NO_HOLE);
    }
    if (!r)
        r = rk_dev_flush(dev);
    rk_dev_close(dev);
    return r;
}
