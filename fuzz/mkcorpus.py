#!/usr/bin/python3
"""Writes the seed corpora of the libFuzzer harnesses into fuzz/corpus/NAME/ (run once when a
harness is added; crash reproducers are added next to these by hand, never regenerated)."""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
IHAVEOPT = 0x49484156454F5054


def put(name, key, data):
    d = os.path.join(HERE, "corpus", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, key), "wb") as f:
        f.write(data)


def opt(o, data=b""):
    return struct.pack(">QII", IHAVEOPT, o, len(data)) + data


def go(name=b"fz", infos=()):
    return struct.pack(">I", len(name)) + name + struct.pack(">H", len(infos)) + b"".join(
        struct.pack(">H", i) for i in infos)


def req(typ, off, ln, flags=0, cookie=1, payload=b""):
    return struct.pack(">IHHQQI", 0x25609513, flags, typ, cookie, off, ln) + payload


def main():
    flags = struct.pack(">I", 3)
    put("fuzz_handshake", "go", flags + opt(8) + opt(7, go(b"fz", (0, 1, 2, 3))))
    put("fuzz_handshake", "list_info", flags + opt(3) + opt(6, go(b"", (3,))) + opt(2))
    put("fuzz_handshake", "export_name", flags + opt(1, b"fz"))
    put("fuzz_handshake", "starttls_unknown", flags + opt(5) + opt(99, b"x" * 10) + opt(5, b"z"))
    put("fuzz_handshake", "too_big", flags + struct.pack(">QII", IHAVEOPT, 7, 70000) + b"\0" * 64)
    put("fuzz_handshake", "bad_go", flags + opt(7, struct.pack(">I", 1000) + b"ab") + opt(8, b"x"))
    put("fuzz_request", "rw", b"\1" + req(1, 0, 4096, payload=b"\xaa" * 4096) + req(0, 0, 4096) +
        req(3, 0, 0) + req(2, 0, 0))
    put("fuzz_request", "trim_zero_fua", b"\0" + req(4, 4096, 8192) + req(6, 0, 65536, flags=2) +
        req(1, 512, 512, flags=1, payload=b"\x55" * 512) + req(0, 16 << 20, 512))
    put("fuzz_request", "bad", b"\1" + req(0, 1, 3) + req(77, 0, 0) + req(1, 0, 2 << 20) +
        struct.pack(">I", 0x12345678))
    put("fuzz_request", "edge", b"\1" + req(0, (16 << 20) - 512, 512) + req(0, 2**64 - 512, 1024) +
        req(5, 0, 0) + req(0, 0, 1 << 20))
    for i, line in enumerate([
            b'{"cmd":"status"}', b'{"cmd":"fail","slot":1}', b'{"cmd":"fail","slot":99}',
            b'{"cmd":"replace","slot":1,"with":"/x","rate":1048576}',
            b'{"cmd":"scrub","repair":true,"rate":0}', b'{"cmd":"scrub","repair":"no"}',
            b'{"cmd":"status","extra":[1,2,{"a":null}]}', b'[1,2,3]', b'{"cmd":', b'{"cmd":7}',
            b'{"cmd":"fail","slot":-1}', b'{"cmd":"fail","slot":1e300}']):
        put("fuzz_control", "line%02d" % i, line)
    golden = open(os.path.join(HERE, "..", "tests", "golden", "sb_v1.bin"), "rb").read()
    put("fuzz_superblock", "golden_raw", b"\0" + golden)
    put("fuzz_superblock", "golden_fixed", b"\1" + golden)
    sb = bytearray(golden)
    struct.pack_into("<Q", sb, 104, 2**64 - 2)
    put("fuzz_superblock", "events_edge", b"\1" + bytes(sb))
    sb = bytearray(golden)
    struct.pack_into("<Q", sb, 80, 2**63)
    put("fuzz_superblock", "data_offset_huge", b"\1" + bytes(sb))
    sb = bytearray(golden)
    struct.pack_into("<I", sb, 1792, 3)
    put("fuzz_superblock", "bad_ranges", b"\1" + bytes(sb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
