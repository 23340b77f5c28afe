#!/usr/bin/python3
"""Power-cut torture client for raidkit (docs/TORTURE.md). Runs /usr/bin/python3 (python3-libnbd).

  torture.py run URI STATE [--seed S] [--qd N] [--max-ops N] [--blocks N]
      Random 4 KiB-aligned writes (1..8 blocks), FUA writes and FLUSHes, up to --qd in flight,
      until a command fails (the server's members lost power) or --max-ops. Writes STATE (JSON):
      per block the durable generation and the later generations that may have landed.
  torture.py verify URI STATE [--label L]
      Read every tracked block and classify it; print one line "torture-verify L: k=v ..." and
      exit 0 when no flushed/FUA write was lost and no block holds garbage, else 1.

Every 4 KiB block is stamped: a 64-byte header (magic, block index, generation, and a BLAKE2b
MAC keyed with the run's secret over index, generation and body), then a body derived from
(key, index, generation). A keyed hash, not a CRC: XOR-combinations of valid stamps (write-hole
garbage) are not valid stamps. Generation 0 is the all-zero block of a freshly created array.

Rules checked (NBD semantics): a write acknowledged before a FLUSH was sent is durable once the
FLUSH is acknowledged; an acknowledged FUA write is durable at once; any other write issued
since the last durable one may or may not have landed (each block independently, old or new).
No two writes in flight overlap, so the order of writes to one block is known.
"""
import hashlib
import json
import os
import random
import struct
import sys

import nbd

BLOCK = 4096
MAGIC = b"RKTORT01"
ZERO = bytes(BLOCK)
HDR = struct.Struct("<8sQQ32s8x")  # 64 bytes


class Stamper:
    def __init__(self, key):
        self.key = key

    def block(self, b, g):
        if g == 0:
            return ZERO
        ix = struct.pack("<QQ", b, g)
        body = hashlib.blake2b(ix, key=self.key, digest_size=64, person=b"body").digest() * 63
        mac = hashlib.blake2b(ix + body, key=self.key, digest_size=32).digest()
        return HDR.pack(MAGIC, b, g, mac) + body

    def parse(self, b, data):
        """The generation data holds for block b, or None (garbage, misplaced, torn)."""
        if data == ZERO:
            return 0
        magic, xb, g, _ = HDR.unpack_from(data)
        if magic != MAGIC or xb != b or g == 0:
            return None
        return g if data == self.block(b, g) else None


def load(path):
    with open(path) as f:
        st = json.load(f)
    st["dur"] = {int(k): v for k, v in st["dur"].items()}
    st["cand"] = {int(k): v for k, v in st["cand"].items()}
    return st


def save(path, st):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st, f)
    os.replace(tmp, path)


def make_durable(st, b, g, src):
    """Generation g of block b is durable: older candidates can no longer appear."""
    if g > st["dur"].get(b, 0):
        st["dur"][b] = g
        st["src"][str(b)] = src
        st["cand"][b] = [x for x in st["cand"].get(b, []) if x > g]


class Runner:
    def __init__(self, uri, st, rng, qd):
        self.h = nbd.NBD()
        self.h.connect_uri(uri)
        self.st, self.rng, self.qd = st, rng, qd
        self.stamper = Stamper(bytes.fromhex(st["key"]))
        self.busy = set()  # blocks with a write in flight
        self.inflight = {}  # cookie -> (kind, payload, buffer)
        self.acked = []  # (block, gen) acknowledged since the last FLUSH was sent
        self.flush_out = False
        self.err = None
        self.n = {"writes": 0, "fua": 0, "flushes": 0, "acked": 0, "failed": 0}

    def issue_write(self, fua):
        st, nb = self.st, self.st["nblocks"]
        for _ in range(8):
            b = self.rng.randrange(nb)
            n = min(self.rng.randint(1, 8), nb - b)
            if not any(x in self.busy for x in range(b, b + n)):
                break
        else:
            return False
        g = st["next_gen"]
        st["next_gen"] += 1
        data = b"".join(self.stamper.block(x, g) for x in range(b, b + n))
        for x in range(b, b + n):
            self.busy.add(x)
            st["cand"].setdefault(x, []).append(g)
        buf = nbd.Buffer.from_bytearray(bytearray(data))
        flags = nbd.CMD_FLAG_FUA if fua else 0
        c = self.h.aio_pwrite(buf, b * BLOCK, flags=flags)
        self.inflight[c] = ("fua" if fua else "write", (b, n, g), buf)
        self.n["fua" if fua else "writes"] += 1
        return True

    def issue_flush(self):
        c = self.h.aio_flush()
        self.inflight[c] = ("flush", self.acked, None)
        self.acked = []
        self.flush_out = True
        self.n["flushes"] += 1

    def complete(self, c):
        kind, p, _ = self.inflight.pop(c)
        try:
            self.h.aio_command_completed(c)
            ok = True
        except nbd.Error as e:
            ok = False
            self.err = self.err or str(e)
            self.n["failed"] += 1
        if kind == "flush":
            self.flush_out = False
            for b, g in p if ok else []:
                make_durable(self.st, b, g, "flush")
            return
        b, n, g = p
        for x in range(b, b + n):
            self.busy.discard(x)
            if ok and kind == "fua":
                make_durable(self.st, x, g, "fua")
            elif ok:
                self.acked.append((x, g))
        self.n["acked"] += ok

    def run(self, max_ops):
        ops = 0
        try:
            while True:
                while self.err is None and ops < max_ops and len(self.inflight) < self.qd:
                    r = self.rng.random()
                    if r < 0.08 and not self.flush_out:
                        self.issue_flush()
                    elif not self.issue_write(fua=r < 0.22):
                        break
                    ops += 1
                if not self.inflight:
                    break
                self.h.poll(-1)
                while True:
                    c = self.h.aio_peek_command_completed()
                    if c <= 0:
                        break
                    self.complete(c)
        except nbd.Error as e:  # connection gone: everything in flight stays a candidate
            self.err = self.err or str(e)
        return ops


def cmd_run(uri, path, args):
    seed = int(args.get("--seed", "1"))
    rng = random.Random(seed)
    if os.path.exists(path):
        st = load(path)
    else:
        st = {"key": os.urandom(32).hex(), "next_gen": 1, "dur": {}, "cand": {}, "src": {}}
    r = Runner(uri, st, rng, int(args.get("--qd", "8")))
    size_blocks = r.h.get_size() // BLOCK
    st["nblocks"] = min(size_blocks, int(args.get("--blocks", str(size_blocks))))
    ops = r.run(int(args.get("--max-ops", "100000")))
    save(path, st)
    print("torture-run: ops=%d %s cut=%s" % (ops, " ".join("%s=%d" % kv for kv in r.n.items()),
                                            "yes" if r.err else "no"))
    try:
        r.h.shutdown()
    except nbd.Error:
        pass


def cmd_verify(uri, path, args):
    st = load(path)
    stamper = Stamper(bytes.fromhex(st["key"]))
    h = nbd.NBD()
    h.connect_uri(uri)
    c = {"blocks": st["nblocks"], "old": 0, "new": 0, "lost_flush": 0, "lost_fua": 0,
         "garbage": 0, "read_errors": 0}
    first = []
    step = 256
    for base in range(0, st["nblocks"], step):
        n = min(step, st["nblocks"] - base)
        try:
            data = h.pread(n * BLOCK, base * BLOCK)
        except nbd.Error:
            c["read_errors"] += n
            continue
        for i in range(n):
            b = base + i
            dur, cand = st["dur"].get(b, 0), st["cand"].get(b, [])
            got = stamper.parse(b, data[i * BLOCK:(i + 1) * BLOCK])
            if got == dur:
                c["old"] += 1
                continue
            if got is not None and got in cand:
                c["new"] += 1
                continue
            if got is None:
                c["garbage"] += 1
            else:
                c["lost_" + st["src"].get(str(b), "flush")] += 1
            if len(first) < 3:
                first.append("block %d: found %s, durable gen %d, possible %s"
                             % (b, "garbage" if got is None else "gen %d" % got, dur, cand[-4:]))
    h.shutdown()
    label = args.get("--label", "")
    print("torture-verify %s: %s" % (label, " ".join("%s=%d" % kv for kv in c.items())))
    for line in first:
        print("  " + line, file=sys.stderr)
    bad = c["lost_flush"] + c["lost_fua"] + c["garbage"] + c["read_errors"]
    sys.exit(1 if bad else 0)


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("run", "verify"):
        sys.exit(__doc__)
    rest = sys.argv[4:]
    args = dict(zip(rest[::2], rest[1::2]))
    try:
        (cmd_run if sys.argv[1] == "run" else cmd_verify)(sys.argv[2], sys.argv[3], args)
    except nbd.Error as e:
        sys.exit("torture.py %s: nbd error: %s" % (sys.argv[1], e))


main()
