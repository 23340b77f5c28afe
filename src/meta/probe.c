/* Content signatures of members (probe.h). */
#include "meta/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "meta/superblock.h"

const char *rk_probe_signature(const uint8_t *buf, size_t len)
{
    if (len >= RK_SB_SIZE && rk_sb_has_magic(buf))
        return "a raidkit superblock";
    if (len >= 6 && memcmp(buf, "LUKS\xba\xbe", 6) == 0)
        return "a LUKS header";
    if (len >= 4 && memcmp(buf, "XFSB", 4) == 0)
        return "an XFS file system";
    if (len >= 65600 + 8 && memcmp(buf + 65600, "_BHRfS_M", 8) == 0)
        return "a btrfs file system";
    if (len >= 1082 && rk_get_le16(buf + 1080) == 0xEF53)
        return "an ext2/3/4 file system";
    if (len >= 512 && buf[510] == 0x55 && buf[511] == 0xAA)
        return "a partition table or boot sector (0x55AA at 510)";
    return NULL;
}

int rk_probe_describe(const char *path, char *out, size_t len)
{
    uint8_t *buf = malloc(RK_PROBE_LEN);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t got = -1;
    int r = 0;
    if (buf && fd >= 0) {
        size_t have = 0;
        while (have < RK_PROBE_LEN) {
            ssize_t n = pread(fd, buf + have, RK_PROBE_LEN - have, (off_t)have);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                got = n < 0 && !have ? -1 : (ssize_t)have;
                break;
            }
            have += (size_t)n;
            got = (ssize_t)have;
        }
    }
    if (!buf || fd < 0 || got < 0) {
        r = buf ? -errno : -ENOMEM;
        snprintf(out, len, "cannot read: %s", strerror(-r));
    } else {
        const char *sig = rk_probe_signature(buf, (size_t)got);
        size_t nz = 0;
        while (nz < (size_t)got && !buf[nz])
            nz++;
        if (sig)
            snprintf(out, len, "%s", sig);
        else if (got == 0)
            snprintf(out, len, "an empty file (0 bytes)");
        else if (nz == (size_t)got)
            snprintf(out, len, "zeroes only (%zd bytes read: never written or wiped)", got);
        else
            snprintf(out, len, "unrecognised data");
    }
    if (fd >= 0)
        close(fd);
    free(buf);
    return r;
}
