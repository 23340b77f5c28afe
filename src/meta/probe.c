/* Content signatures of members (probe.h): raidkit's own superblock, then libblkid (when built
 * with it), then a small table of magics for what libblkid leaves unnamed. */
#include "meta/probe.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef RAIDKIT_HAVE_BLKID
#include <blkid/blkid.h>
#endif

#include "core/util.h"
#include "meta/superblock.h"

/* The description rk_probe_signature returns points here (one per thread). */
static __thread char probe_desc[200];

/* raidkit's own superblock in buf: named with its array and slot. */
static const char *probe_raidkit(const uint8_t *buf, size_t len)
{
    if (len < RK_SB_SIZE || !rk_sb_has_magic(buf))
        return NULL;
    struct rk_sb sb;
    char why[120] = "", u[RK_UUID_STR_LEN];
    if (rk_sb_decode(buf, &sb, why, sizeof(why)) == 0)
        snprintf(probe_desc, sizeof(probe_desc), "a raidkit superblock (array %s, slot %u of %u)",
                 rk_uuid_format(sb.array_uuid, u), (unsigned)sb.slot, (unsigned)sb.members);
    else
        snprintf(probe_desc, sizeof(probe_desc), "a raidkit superblock (damaged: %.120s)", why);
    return probe_desc;
}

/* Magics libblkid does not name (a damaged or partly overwritten signature still says that
 * data was there), or all of them in a build without libblkid. */
static const char *probe_table(const uint8_t *buf, size_t len)
{
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

#ifdef RAIDKIT_HAVE_BLKID
/* libblkid's verdict on fd (size bytes, 0 = its own size), or NULL when it finds nothing. */
static const char *probe_blkid(int fd, uint64_t size)
{
    blkid_probe pr = blkid_new_probe();
    const char *res = NULL;
    if (!pr || blkid_probe_set_device(pr, fd, 0, (blkid_loff_t)size)) {
        blkid_free_probe(pr);
        return NULL;
    }
    blkid_probe_enable_superblocks(pr, 1);
    blkid_probe_set_superblocks_flags(pr,
                                      BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE | BLKID_SUBLKS_LABEL);
    blkid_probe_enable_partitions(pr, 1);
    int rc = blkid_do_safeprobe(pr);
    const char *type = NULL, *pttype = NULL, *usage = NULL, *label = NULL;
    if (rc == 0) {
        blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
        blkid_probe_lookup_value(pr, "PTTYPE", &pttype, NULL);
        blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
        blkid_probe_lookup_value(pr, "LABEL", &label, NULL);
    }
    char lab[80] = "";
    bool printable = label && label[0];
    for (const char *c = label; printable && *c; c++)
        printable = *c >= 0x20 && *c < 0x7f; /* a label of garbage (a stray magic) is left out */
    if (printable)
        snprintf(lab, sizeof(lab), ", label '%.60s'", label);
    if (rc == -2) {
        snprintf(probe_desc, sizeof(probe_desc), "several signatures (libblkid: ambivalent)");
        res = probe_desc;
    } else if (type) {
        const char *what = !usage                         ? "signature"
                           : !strcmp(usage, "filesystem") ? "file system"
                           : !strcmp(usage, "raid")       ? "RAID member signature"
                           : !strcmp(usage, "crypto")     ? "encrypted volume header"
                                                          : "signature";
        snprintf(probe_desc, sizeof(probe_desc), "a%s %s %s (libblkid%s)",
                 strchr("aeiouAEIOU", type[0]) ? "n" : "", type, what, lab);
        res = probe_desc;
    } else if (pttype) {
        snprintf(probe_desc, sizeof(probe_desc), "a %s partition table (libblkid)", pttype);
        res = probe_desc;
    }
    blkid_free_probe(pr);
    return res;
}
#endif

const char *rk_probe_fd_signature(int fd, uint64_t size, const uint8_t *buf, size_t len)
{
    const char *sig = probe_raidkit(buf, len);
#ifdef RAIDKIT_HAVE_BLKID
    if (!sig && fd >= 0)
        sig = probe_blkid(fd, size);
#else
    (void)fd;
    (void)size;
#endif
    return sig ? sig : probe_table(buf, len);
}

const char *rk_probe_signature(const uint8_t *buf, size_t len)
{
    int fd = -1;
#ifdef RAIDKIT_HAVE_BLKID
    /* libblkid probes a file: the bytes read (a remote member's first RK_PROBE_LEN) become one */
    if (!probe_raidkit(buf, len) && len) {
        fd = memfd_create("raidkit-probe", MFD_CLOEXEC);
        size_t done = 0;
        while (fd >= 0 && done < len) {
            ssize_t n = write(fd, buf + done, len - done);
            if (n <= 0) {
                close(fd);
                fd = -1;
            } else {
                done += (size_t)n;
            }
        }
    }
#endif
    const char *sig = rk_probe_fd_signature(fd, len, buf, len);
    if (fd >= 0)
        close(fd);
    return sig;
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
        const char *sig = rk_probe_fd_signature(fd, 0, buf, (size_t)got);
        size_t nz = 0;
        while (nz < (size_t)got && !buf[nz])
            nz++;
        if (sig)
            snprintf(out, len, "%s", sig);
        else if (got == 0)
            snprintf(out, len, "an empty file (0 bytes)");
        else if ((size_t)got < RK_SB_SIZE) /* what it holds does not matter: it cannot be one */
            snprintf(out, len, "too small (%zd bytes; a raidkit superblock alone needs %u)", got,
                     RK_SB_SIZE);
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
