"""Connection end ordering (docs/ARCHITECTURE.md "Connection end"): a WRITE fully sent on a
connection that then sends DISC and closes runs before a WRITE that a new connection sends
afterwards to the same range, so the later, acknowledged and flushed write is what stays.

usage: nbd_connection_end_order.py SOCKET ROUNDS
"""
import sys

import nbd

from nbd_util import CMD_DISC, CMD_WRITE, Raw, check

MiB = 1 << 20
LEN = 8 * MiB


def main():
    path, rounds = sys.argv[1], int(sys.argv[2])
    uri = "nbd+unix:///?socket=" + path
    for i in range(rounds):
        old = bytes([0x40 + i % 64]) * LEN
        new = bytes([0xC0 + i % 64]) * 4096
        a = Raw(path)
        a.go()
        a.request(CMD_WRITE, 0, LEN, 1, data=old)
        a.request(CMD_DISC, 0, 0, 2)
        a.s.close()  # never waits for the reply
        b = nbd.NBD()
        b.connect_uri(uri)
        # The tail of the old write's range: the part a racing old write would land on last.
        b.pwrite(new, LEN - 4096)
        b.flush()
        got = b.pread(4096, LEN - 4096)
        check(got == new, "round %d: the old connection's write landed after the new "
              "connection's acknowledged, flushed write" % i)
        check(b.pread(4096, 0) == old[:4096], "round %d: the old connection's write, fully "
              "sent before DISC, did not run" % i)
        b.shutdown()
    print("PASS: %d rounds" % rounds)


main()
