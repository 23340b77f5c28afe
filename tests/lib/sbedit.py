#!/usr/bin/python3
"""Edit fields of a raidkit member superblock in place and recompute its crc32c, so the result is
checksum-valid (tests of the decoder's bounds; docs/FORMAT.md has the byte table).

Usage: sbedit.py MEMBER FIELD=VALUE...   FIELD is one of the names below; VALUE an integer
(0x.. and 2**N forms accepted). Prints the old and new value of each field."""
import struct
import sys

# name: (offset, struct format), little-endian, as in docs/FORMAT.md.
FIELDS = {
    "dirty": (20, "<I"),
    "slot": (56, "<I"),
    "chunk": (68, "<I"),
    "members": (72, "<I"),
    "data_offset": (80, "<Q"),
    "data_size": (88, "<Q"),
    "array_size": (96, "<Q"),
    "events": (104, "<Q"),
    "resync_offset": (200, "<Q"),
}
SB_SIZE = 4096
CRC_OFF = 16


def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T = _table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path = sys.argv[1]
    with open(path, "r+b") as f:
        sb = bytearray(f.read(SB_SIZE))
        if sb[:8] != b"RAIDKTSB":
            sys.exit("%s: no raidkit superblock" % path)
        for arg in sys.argv[2:]:
            name, _, val = arg.partition("=")
            if name not in FIELDS:
                sys.exit("unknown field %r (known: %s)" % (name, ", ".join(FIELDS)))
            off, fmt = FIELDS[name]
            old = struct.unpack_from(fmt, sb, off)[0]
            struct.pack_into(fmt, sb, off, int(eval(val, {"__builtins__": {}})))
            print("%s %s: %d -> %d" % (path, name, old, struct.unpack_from(fmt, sb, off)[0]))
        struct.pack_into("<I", sb, CRC_OFF, 0)
        struct.pack_into("<I", sb, CRC_OFF, crc32c(bytes(sb)))
        f.seek(0)
        f.write(sb)


if __name__ == "__main__":
    main()
