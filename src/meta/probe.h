/* What a member file or device holds when it is not (only) a raidkit member: the signatures
 * `create` refuses to overwrite and `info` names. */
#ifndef RK_META_PROBE_H
#define RK_META_PROBE_H

#include <stddef.h>
#include <stdint.h>

/* Bytes to read from the start of a member to find every signature (btrfs sits at 64 KiB + 64). */
#define RK_PROBE_LEN (128u * 1024u)

/*
 * Name of the signature found on a member whose first len bytes are buf and which is open as
 * fd (size bytes; 0 = the file's own size; fd < 0: only buf is looked at), or NULL when none is
 * found (random bytes, zeroes). In this order: raidkit's superblock ("a raidkit superblock
 * (array UUID, slot S of N)", or "(damaged: ...)"); libblkid over fd, when built with it
 * (RAIDKIT_HAVE_BLKID): "an ext4 file system (libblkid)", "a dos partition table (libblkid)",
 * "a crypto_LUKS encrypted volume header (libblkid)", "several signatures (libblkid:
 * ambivalent)"; then a table of magics for what libblkid leaves unnamed (a damaged or partial
 * signature): "an ext2/3/4 file system", "an XFS file system", "a btrfs file system", "a LUKS
 * header", "a partition table or boot sector (0x55AA at 510)". The result points into
 * per-thread storage (or a constant), valid until the thread's next call.
 */
const char *rk_probe_fd_signature(int fd, uint64_t size, const uint8_t *buf, size_t len);

/* rk_probe_fd_signature over the len bytes of buf alone (a remote member's first bytes):
 * libblkid probes them as a file of len bytes (a memfd). */
const char *rk_probe_signature(const uint8_t *buf, size_t len);

/*
 * Describe the content of path for a message: the signature as rk_probe_signature names it,
 * else "an empty file (0 bytes)", "too small (N bytes; a raidkit superblock alone needs 4096)",
 * "zeroes only (N bytes read: never written or wiped)" or "unrecognised data". Reads at most
 * RK_PROBE_LEN bytes (read-only open). Writes into out (len bytes) and returns 0, or -errno (out
 * then says "cannot read: REASON").
 */
int rk_probe_describe(const char *path, char *out, size_t len);

#endif
