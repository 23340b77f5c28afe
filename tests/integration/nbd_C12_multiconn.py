# C12: 4 connections, many pipelined writes in flight at blocks 10, 100, 1000 and
# their neighbours, FLUSH on one connection, then every connection reads exact placement.
import os

import nbd
from nbd_util import Server, check, run

BS = 4096
BLOCKS = [b + d for b in (10, 100, 1000) for d in (-1, 0, 1)]


def block_data(conn, blk, rnd):
    # Unique per (connection, block, round): a misplaced or lost write shows.
    head = b"conn%d blk%d round%d " % (conn, blk, rnd)
    return (head * (BS // len(head) + 1))[:BS]


def owner(blk):
    return blk % 4  # which connection writes this block in the final round


def wait_all(h, cookies):
    while cookies:
        h.poll(-1)
        for c in list(cookies):
            if h.aio_command_completed(c):
                cookies.remove(c)


def main(tmp):
    # Twice: small requests run inline in the reader by default; RAIDKIT_NBD_INLINE=0 sends
    # every request through the shared worker pool (out-of-order replies).
    for inline in ("1", "0"):
        os.environ["RAIDKIT_NBD_INLINE"] = inline
        one_round(tmp)


def one_round(tmp):
    srv = Server(tmp, "--size", "16M", "--block", "4096", "--threads", "8")
    hs = []
    for _ in range(4):
        h = nbd.NBD()
        h.connect_uri(srv.uri)
        check(h.can_multi_conn(), "CAN_MULTI_CONN not advertised")
        hs.append(h)
    # Rounds 0..2: every connection pipelines writes to its own neighbour blocks 4096+...,
    # and in round 2 the owner of each shared block writes it (all in flight at once).
    for rnd in range(3):
        pending = []
        for ci, h in enumerate(hs):
            cookies = []
            for blk in BLOCKS:
                if rnd < 2 or owner(blk) == ci:
                    buf = nbd.Buffer.from_bytearray(bytearray(block_data(ci, blk, rnd)))
                    cookies.append(h.aio_pwrite(buf, blk * BS))
                # private area per connection: blocks 2000 + 64*ci + blk%64
                priv = 2000 + 64 * ci + blk % 64
                buf = nbd.Buffer.from_bytearray(bytearray(block_data(ci, priv, rnd)))
                cookies.append(h.aio_pwrite(buf, priv * BS))
            pending.append((h, cookies))
        for h, cookies in pending:
            wait_all(h, cookies)
    hs[0].flush()
    # Every connection sees every block exactly where it was written.
    for ri, h in enumerate(hs):
        for blk in BLOCKS:
            got = h.pread(BS, blk * BS)
            check(got == block_data(owner(blk), blk, 2),
                  "conn %d reads block %d: %r" % (ri, blk, got[:24]))
        for ci in range(4):
            for blk in BLOCKS:
                priv = 2000 + 64 * ci + blk % 64
                check(h.pread(BS, priv * BS) == block_data(ci, priv, 2),
                      "conn %d reads private block %d of conn %d" % (ri, priv, ci))
        # Untouched neighbours of the neighbours are still zero.
        for blk in (8, 12, 98, 102, 998, 1002):
            check(h.pread(BS, blk * BS) == bytes(BS), "block %d was written" % blk)
    # Flush on another connection too, then a fresh connection agrees.
    hs[3].flush()
    for h in hs:
        h.shutdown()
    h = nbd.NBD()
    h.connect_uri(srv.uri)
    for blk in BLOCKS:
        check(h.pread(BS, blk * BS) == block_data(owner(blk), blk, 2), "fresh conn block %d" % blk)
    h.shutdown()
    srv.stop()


if __name__ == "__main__":
    run(main)
