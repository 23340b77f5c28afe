# Stamp writer/checker for raidkit integration tests (libnbd python bindings).
# A stamp sector at array offset x: u64 x, u64 gen, u32 crc32(first 16 bytes), then 492 filler
# bytes ((x >> 9) ^ gen) & 0xff, so a read catches both wrong content and wrong placement.
import struct, sys, zlib
import nbd

STEP = 1 << 20
FILL = [bytes([b]) * 492 for b in range(256)]


def connect(uri):
    h = nbd.NBD()
    h.connect_uri(uri)
    return h


HDR = struct.Struct("<QQ")
CRC = struct.Struct("<I")


def stamps(off, n, gen):
    out = []
    for x in range(off, off + n, 512):
        hdr = HDR.pack(x, gen)
        out += (hdr, CRC.pack(zlib.crc32(hdr)), FILL[((x >> 9) ^ gen) & 0xff])
    return b"".join(out)


def describe(sector):
    x, gen, crc = struct.unpack("<QQI", sector[:20])
    ok = crc == zlib.crc32(sector[:16])
    if not any(sector):
        return "all zeros"
    return "stamp x=%d gen=%d crc %s" % (x, gen, "ok" if ok else "BAD")


def cmd_stamp(uri, gen, off, length):
    h = connect(uri)
    end = off + length
    while off < end:
        n = min(STEP, end - off)
        h.pwrite(stamps(off, n, gen), off)
        off += n
    h.flush()
    h.shutdown()


def cmd_verify(uri, *ranges):
    """ranges: OFF LEN GEN triples; exit 1 on the first mismatch, naming it."""
    h = connect(uri)
    bad = 0
    for k in range(0, len(ranges), 3):
        off, length, gen = int(ranges[k]), int(ranges[k + 1]), int(ranges[k + 2])
        end = off + length
        while off < end:
            n = min(STEP, end - off)
            got = h.pread(n, off)
            want = stamps(off, n, gen)
            if got != want:
                for i in range(0, n, 512):
                    if got[i:i + 512] != want[i:i + 512]:
                        print("mismatch at array offset %d (want gen %d): found %s"
                              % (off + i, gen, describe(got[i:i + 512])), file=sys.stderr)
                        bad += 1
                        break
                if bad >= 5:
                    sys.exit(1)
            off += n
    h.shutdown()
    sys.exit(1 if bad else 0)


def cmd_size(uri):
    h = connect(uri)
    print(h.get_size())
    h.shutdown()


def cmd_putfile(uri, path, off):
    h = connect(uri)
    off = int(off)
    with open(path, "rb") as f:
        while True:
            b = f.read(STEP)
            if not b:
                break
            h.pwrite(b, off)
            off += len(b)
    h.flush()
    h.shutdown()


def cmd_getfile(uri, path, off, length):
    h = connect(uri)
    off, end = int(off), int(off) + int(length)
    with open(path, "wb") as f:
        while off < end:
            n = min(STEP, end - off)
            f.write(h.pread(n, off))
            off += n
    h.shutdown()


def cmd_sha(uri, off, length):
    import hashlib
    h = connect(uri)
    off, end = int(off), int(off) + int(length)
    s = hashlib.sha256()
    while off < end:
        n = min(STEP, end - off)
        s.update(h.pread(n, off))
        off += n
    h.shutdown()
    print(s.hexdigest())


def cmd_stampsha(gen, off, length):
    import hashlib
    s = hashlib.sha256()
    off, end = int(off), int(off) + int(length)
    while off < end:
        n = min(STEP, end - off)
        s.update(stamps(off, n, int(gen)))
        off += n
    print(s.hexdigest())


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    try:
        if cmd == "stamp":
            cmd_stamp(args[0], int(args[1]), int(args[2]), int(args[3]))
        elif cmd == "verify":
            cmd_verify(args[0], *args[1:])
        elif cmd == "size":
            cmd_size(args[0])
        elif cmd == "putfile":
            cmd_putfile(*args)
        elif cmd == "getfile":
            cmd_getfile(*args)
        elif cmd == "stampsha":
            cmd_stampsha(*args)
        elif cmd == "sha":
            cmd_sha(*args)
        else:
            sys.exit("rk.py: unknown command " + cmd)
    except nbd.Error as e:
        print("rk.py %s: nbd error: %s" % (cmd, e), file=sys.stderr)
        sys.exit(1)


main()
