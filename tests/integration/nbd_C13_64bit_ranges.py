# C13: 64-bit ranges in TRIM / WRITE_ZEROES on an 8 GiB sparse export: lengths near
# 2^32, ranges crossing 4 GiB, ending exactly at the end (ok) and one block past it (EINVAL).
import errno

import nbd
from nbd_util import Server, check, run

GiB = 1 << 30
SIZE = 8 * GiB
L = 0xFFFFFE00  # largest 512-aligned 32-bit length


def pat(n, seed):
    head = b"seed%d " % seed
    return (head * (n // len(head) + 1))[:n]


def expect_err(fn, code, what):
    try:
        fn()
    except nbd.Error as e:
        check(e.errnum == code, "%s: errno %s, want %d" % (what, e.errnum, code))
        return
    check(False, "%s succeeded" % what)


def main(tmp):
    srv = Server(tmp, "--size", "8G", "--block", "512")
    h = nbd.NBD()
    h.set_strict_mode(0)  # let the out-of-range requests reach the server
    h.connect_uri(srv.uri)
    check(h.get_size() == SIZE, "size %d" % h.get_size())

    # Markers just inside and just outside each TRIM range.
    marks = {0: 1, L - 512: 2, L: 3, 2 * L - 512: 4, 2 * L: 5, SIZE - 512: 6}
    for off, seed in marks.items():
        h.pwrite(pat(512, seed), off)
    h.trim(L, 0)
    h.trim(L, L)
    # mem discards read back as zero; the block after 2*L is untouched.
    for off in (0, L - 512, L, 2 * L - 512):
        check(h.pread(512, off) == bytes(512), "trimmed block at %#x not zero" % off)
    check(h.pread(512, 2 * L) == pat(512, 5), "block after TRIM(L, L) changed")
    check(h.pread(512, SIZE - 512) == pat(512, 6), "last block changed")

    h.trim(L, SIZE - L)  # ends exactly at the end
    check(h.pread(512, SIZE - 512) == bytes(512), "TRIM to the end missed the last block")
    expect_err(lambda: h.trim(L, SIZE - L + 512), errno.EINVAL, "TRIM one block past the end")
    expect_err(lambda: h.trim(1024, SIZE - 512), errno.EINVAL, "TRIM straddling the end")
    expect_err(lambda: h.trim(512, SIZE), errno.EINVAL, "TRIM at the end")
    expect_err(lambda: h.trim(512, (1 << 64) - 512), errno.EINVAL, "TRIM at 2^64-512")
    expect_err(lambda: h.zero(1024, SIZE - 512), errno.ENOSPC, "WRITE_ZEROES past the end")

    # WRITE_ZEROES across the 4 GiB boundary, with and without NO_HOLE.
    for i, flags in enumerate((0, nbd.CMD_FLAG_NO_HOLE, nbd.CMD_FLAG_FUA)):
        base = 4 * GiB - 65536 + i * GiB if i else 4 * GiB - 65536
        lo, hi = base - 4096, base + 131072
        h.pwrite(pat(4096, 10 + i), lo)
        h.pwrite(pat(131072, 20 + i), base)
        h.pwrite(pat(4096, 30 + i), hi)
        h.zero(131072, base, flags)
        check(h.pread(131072, base) == bytes(131072), "zeroed range %d not zero" % i)
        check(h.pread(4096, lo) == pat(4096, 10 + i), "block before zero range %d changed" % i)
        check(h.pread(4096, hi) == pat(4096, 30 + i), "block after zero range %d changed" % i)

    # A WRITE_ZEROES of nearly 4 GiB ending exactly at the end.
    h.pwrite(pat(4096, 40), SIZE - L - 4096)
    h.pwrite(pat(4096, 41), SIZE - 4096)
    h.zero(L, SIZE - L, nbd.CMD_FLAG_NO_HOLE)
    check(h.pread(4096, SIZE - 4096) == bytes(4096), "big zero missed the end")
    check(h.pread(4096, SIZE - L - 4096) == pat(4096, 40), "big zero started early")
    h.shutdown()
    srv.stop()


if __name__ == "__main__":
    run(main)
