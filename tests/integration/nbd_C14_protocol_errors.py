# C14: protocol errors keep the connection. Unknown command/flag -> EINVAL, read past
# end -> EINVAL without data, write past end -> ENOSPC with its payload consumed, read-only ->
# EPERM, member errors -> EIO, zero-length read, FUA, DISC drains, structured READ errors.
import os
import struct

import nbd
from nbd_util import (CMD_DISC, CMD_READ, CMD_TRIM, CMD_WRITE, CMD_WZ, EINVAL, EIO, ENOSPC,
                      EPERM, SIMPLE_MAGIC, STRUCT_MAGIC, Raw, Server, check, run)

MiB = 1024 * 1024


def pattern(n, seed):
    return bytes((i * 7 + seed) & 0xFF for i in range(n))


def simple_checks(srv):
    r = Raw(srv.sock)
    r.go()
    check(r.size == 64 * MiB, "size %d" % r.size)
    check(r.tflags & 0x16D == 0x16D, "transmission flags 0x%x" % r.tflags)
    h = [0]

    def do(typ, off, ln, flags=0, data=b"", read_len=0):
        h[0] += 1
        r.request(typ, off, ln, h[0], flags, data)
        magic, handle, err, got = r.reply(read_len)
        check(handle == h[0], "reply handle %d, want %d" % (handle, h[0]))
        check(magic == SIMPLE_MAGIC, "simple reply expected")
        return err, got

    check(do(9, 0, 512)[0] == EINVAL, "unknown command not EINVAL")
    check(do(CMD_READ, 0, 512, flags=0x80)[0] == EINVAL, "unknown flag not EINVAL")
    check(do(CMD_READ, 0, 512, flags=1)[0] == EINVAL, "FUA on READ not EINVAL")
    check(do(CMD_READ, 1, 512)[0] == EINVAL, "misaligned read not EINVAL")
    err, got = do(CMD_READ, r.size - 512, 1024, read_len=1024)
    check(err == EINVAL and got == b"", "read past end: err %d, %d data bytes" % (err, len(got)))
    check(do(CMD_READ, 0, 64 * MiB)[0] == EINVAL, "read > max_request not EINVAL")
    err, _ = do(CMD_WRITE, r.size - 512, 4096, data=pattern(4096, 1))
    check(err == ENOSPC, "write past end: err %d, want ENOSPC" % err)
    err, _ = do(CMD_WRITE, (1 << 64) - 512, 4096, data=pattern(4096, 1))
    check(err == ENOSPC, "write at 2^64-512: err %d, want ENOSPC" % err)
    check(do(CMD_WRITE, 0, 33 * MiB, data=bytes(33 * MiB))[0] == EINVAL,
          "write > max_request not EINVAL")
    check(do(CMD_WRITE, 4096, 4096, data=pattern(4096, 2))[0] == 0, "write after errors failed")
    err, got = do(CMD_READ, 4096, 4096, read_len=4096)
    check(err == 0 and got == pattern(4096, 2), "read back after errors wrong")
    # Member errors from the fault device (write-eio=1M+64K, read-eio=2M+4K).
    check(do(CMD_WRITE, 1 * MiB, 4096, data=pattern(4096, 3))[0] == EIO, "member write not EIO")
    check(do(CMD_WRITE, 1 * MiB - 4096, 4096, data=pattern(4096, 3))[0] == 0,
          "write beside the bad range failed")
    err, got = do(CMD_READ, 2 * MiB, 4096, read_len=4096)
    check(err == EIO and got == b"", "member read error: err %d data %d" % (err, len(got)))
    err, got = do(CMD_READ, 0, 0, read_len=0)
    check(err == 0 and got == b"", "zero-length read failed")
    check(do(CMD_WRITE, 8192, 4096, flags=1, data=pattern(4096, 4))[0] == 0, "FUA write failed")
    check(do(CMD_TRIM, 0, 4096, flags=2)[0] == EINVAL, "NO_HOLE on TRIM not EINVAL")
    check(do(CMD_WZ, r.size, 4096)[0] == ENOSPC, "write-zeroes past end not ENOSPC")

    # DISC after many pipelined writes: every one is answered, then the server closes.
    n, sz = 32, 256 * 1024
    for i in range(n):
        r.request(CMD_WRITE, 8 * MiB + i * sz, sz, 1000 + i, 0, pattern(sz, i))
    r.request(CMD_DISC, 0, 0, 5000)
    seen = set()
    for _ in range(n):
        magic, handle, err, _ = r.reply()
        check(err == 0, "pipelined write %d failed: %d" % (handle, err))
        seen.add(handle)
    check(seen == set(range(1000, 1000 + n)), "missing replies before DISC close")
    check(r.closed(), "server did not close after DISC")
    # A WRITE announcing more payload than we would ever drain is a hard disconnect.
    r = Raw(srv.sock)
    r.go()
    r.request(CMD_WRITE, 0, 100 * MiB, 1)
    check(r.closed(), "100 MiB WRITE did not disconnect")
    # A request with a bad magic is a hard disconnect too.
    r = Raw(srv.sock)
    r.go()
    r.s.sendall(bytes(28))
    check(r.closed(), "bad request magic did not disconnect")
    h2 = nbd.NBD()
    h2.connect_uri(srv.uri)
    for i in range(n):
        check(h2.pread(sz, 8 * MiB + i * sz) == pattern(sz, i), "DISC lost write %d" % i)
    h2.shutdown()


def structured_checks(srv):
    r = Raw(srv.sock)
    r.go(structured=True)
    r.request(CMD_READ, 2 * MiB, 4096, 7)
    magic, handle, err, data = r.reply(4096)
    check(magic == STRUCT_MAGIC, "structured READ error sent as a simple reply")
    check(handle == 7 and err == EIO and data == b"", "structured READ error wrong")
    r.request(CMD_READ, r.size, 512, 8)
    magic, handle, err, _ = r.reply(512)
    check(magic == STRUCT_MAGIC and err == EINVAL, "structured read past end")
    r.request(CMD_READ, 4096, 4096, 9)
    magic, handle, err, data = r.reply(4096)
    check(magic == STRUCT_MAGIC and err == 0 and data == pattern(4096, 2), "structured read")
    r.request(CMD_READ, 0, 0, 10)
    magic, handle, err, data = r.reply(0)
    check(magic == STRUCT_MAGIC and err == 0 and data == b"", "structured zero read")
    r.request(CMD_DISC, 0, 0, 11)
    check(r.closed(), "no close after DISC")

    # libnbd agrees: errors map to errno, the handle stays usable.
    h = nbd.NBD()
    h.set_strict_mode(0)
    h.connect_uri(srv.uri)
    try:
        h.pread(4096, 2 * MiB)
        check(False, "pread of a bad member range succeeded")
    except nbd.Error as e:
        check(e.errnum == EIO, "pread error %s" % e)
    try:
        h.pwrite(b"x" * 512, 64 * MiB)
        check(False, "pwrite past end succeeded")
    except nbd.Error as e:
        check(e.errnum == ENOSPC, "pwrite past end: %s" % e)
    h.pwrite(pattern(4096, 5), 12288, nbd.CMD_FLAG_FUA)
    check(h.pread(4096, 12288) == pattern(4096, 5), "FUA write not read back")
    h.shutdown()


def read_only_checks(srv):
    r = Raw(srv.sock)
    r.go()
    check(r.tflags & 2, "READ_ONLY flag missing")
    for i, (typ, data) in enumerate([(CMD_WRITE, pattern(4096, 1)), (CMD_TRIM, b""),
                                     (CMD_WZ, b"")]):
        r.request(typ, 0, 4096, 100 + i, 0, data)
        _, handle, err, _ = r.reply()
        check(handle == 100 + i and err == EPERM, "cmd %d on read-only: err %d" % (typ, err))
    r.request(CMD_READ, 0, 4096, 200)
    _, handle, err, data = r.reply(4096)
    check(handle == 200 and err == 0 and data == bytes(4096), "read on read-only export")
    h = nbd.NBD()
    h.set_strict_mode(0)
    h.connect_uri(srv.uri)
    check(h.is_read_only(), "libnbd does not see read-only")
    try:
        h.pwrite(b"y" * 4096, 0)
        check(False, "write to a read-only export succeeded")
    except nbd.Error as e:
        check(e.errnum == EPERM, "read-only write: %s" % e)
    h.shutdown()


def fua_file_checks(tmp):
    path = os.path.join(tmp, "member.img")
    with open(path, "wb") as f:
        f.truncate(16 * MiB)
    srv = Server(tmp, "--file", path)
    h = nbd.NBD()
    h.connect_uri(srv.uri)
    h.pwrite(pattern(65536, 9), 1 * MiB, nbd.CMD_FLAG_FUA)
    # The FUA reply came back: the member file holds the data now.
    with open(path, "rb") as f:
        f.seek(1 * MiB)
        check(f.read(65536) == pattern(65536, 9), "FUA write not in the member file")
    h.shutdown()
    srv.stop()


def main(tmp):
    srv = Server(tmp, "--size", "64M", "--fault", "write-eio=1M+64K,read-eio=2M+4K")
    simple_checks(srv)
    structured_checks(srv)
    srv.stop()
    srv = Server(tmp, "--size", "16M", "--read-only")
    read_only_checks(srv)
    srv.stop()
    fua_file_checks(tmp)


if __name__ == "__main__":
    run(main)
