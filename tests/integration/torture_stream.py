#!/usr/bin/python3
"""Sequential-stream variant of the power-cut torture client (tests/lib/torture.py, whose
Runner, stamps, state file and verify this reuses unchanged).

  torture_stream.py run URI STATE [--seed S] [--qd N] [--max-ops N] [--blocks N]
      Like torture.py run, but every write continues one sequential stream: 1..4 blocks (4 to
      16 KiB) at the end of the previous write, wrapping at the end, with a jump to a random
      block now and then (3%), so raid5/raid6 stripe gathering holds and writes out whole
      stripes; FLUSHes and FUA writes are mixed in as in torture.py.
  torture_stream.py verify URI STATE [--label L]
      Exactly torture.py verify.
"""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TORTURE_PY = os.path.join(HERE, "..", "lib", "torture.py")


def load_torture():
    """torture.py's definitions without running its main()."""
    with open(TORTURE_PY) as f:
        src = f.read()
    src = src[: src.rindex("\nmain()")]
    ns = {"__name__": "torture", "__file__": TORTURE_PY}
    exec(compile(src, TORTURE_PY, "exec"), ns)
    return ns


class StreamRng(random.Random):
    """Runner.issue_write asks randrange(nblocks) for a start, then randint(1, 8) for a length:
    answer with the stream's position and a 1..4 block step that advances it."""

    def __init__(self, seed):
        super().__init__(seed)
        self.pos = 0

    def randrange(self, nb, *rest):
        if rest:
            return super().randrange(nb, *rest)
        if self.pos >= nb or super().random() < 0.03:
            self.pos = super().randrange(nb) if self.pos < nb else 0
        return self.pos

    def randint(self, a, b):
        n = super().randint(1, 4)
        self.pos += n
        return n


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("run", "verify"):
        sys.exit(__doc__)
    if sys.argv[1] == "verify":
        os.execv(sys.executable, [sys.executable, TORTURE_PY] + sys.argv[1:])
    t = load_torture()
    uri, path, rest = sys.argv[2], sys.argv[3], sys.argv[4:]
    args = dict(zip(rest[::2], rest[1::2]))
    rng = StreamRng(int(args.get("--seed", "1")))
    if os.path.exists(path):
        st = t["load"](path)
    else:
        st = {"key": os.urandom(32).hex(), "next_gen": 1, "dur": {}, "cand": {}, "src": {}}
    try:
        r = t["Runner"](uri, st, rng, int(args.get("--qd", "8")))
        size_blocks = r.h.get_size() // t["BLOCK"]
        st["nblocks"] = min(size_blocks, int(args.get("--blocks", str(size_blocks))))
        ops = r.run(int(args.get("--max-ops", "100000")))
    except t["nbd"].Error as e:
        sys.exit("torture_stream.py run: nbd error: %s" % e)
    t["save"](path, st)
    print("torture-run: ops=%d %s cut=%s" % (ops, " ".join("%s=%d" % kv for kv in r.n.items()),
                                            "yes" if r.err else "no"))
    try:
        r.h.shutdown()
    except t["nbd"].Error:
        pass


main()
