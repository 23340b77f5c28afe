"""Clients that do not read their replies, and clients that never finish the handshake, against
a running `raidkit serve` (C20_client_never_reads.sh, nbd_nonreading_latency.sh).

usage: nbd_nonreader.py c20|latency SOCKET SERVER_PID CAP_BYTES [HANDSHAKE_TIMEOUT_S]
"""
import os
import select
import signal
import socket
import struct
import sys
import threading
import time

import nbd

from nbd_util import (CMD_READ, IHAVEOPT, NBD_MAGIC, REP_ACK, REP_INFO, REP_MAGIC, REQ_MAGIC,
                      check, fail)

MiB = 1 << 20


def hog(path, nreq, length, rcvbuf=4096, sustained=False):
    """A client with a 4 KiB receive buffer that pipelines nreq READs of length bytes and never
    reads a reply. sustained: keep sending requests (in a thread) until the socket is closed."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(path)

    def recv(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            check(c, "hog: server closed during the handshake")
            b += c
        return b

    magic, opt, _ = struct.unpack(">QQH", recv(18))
    check(magic == NBD_MAGIC and opt == IHAVEOPT, "hog: bad greeting")
    s.sendall(struct.pack(">I", 3))
    s.sendall(struct.pack(">QII", IHAVEOPT, 7, 6) + struct.pack(">IH", 0, 0))  # GO ""
    size = 0
    while True:
        m, _, typ, ln = struct.unpack(">QIII", recv(20))
        check(m == REP_MAGIC, "hog: bad option reply")
        data = recv(ln)
        if typ == REP_INFO and struct.unpack(">H", data[:2])[0] == 0:
            size = struct.unpack(">Q", data[2:10])[0]
        if typ != REP_INFO:
            check(typ == REP_ACK, "hog: GO refused (%x)" % typ)
            break
    span = max(size // length, 1)

    def req(i):
        return struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_READ, i, (i % span) * length, length)

    s.sendall(b"".join(req(i) for i in range(nreq)))
    if sustained:
        def more():
            i = nreq
            try:
                while True:
                    s.sendall(req(i))  # blocks once the server stops reading us
                    i += 1
            except OSError:
                pass
        threading.Thread(target=more, daemon=True).start()
    return s


def timed_reads(uri, count, length, size_span):
    h = nbd.NBD()
    h.connect_uri(uri)
    lat = []
    for i in range(count):
        off = (i * 7919 * length) % size_span
        t0 = time.monotonic()
        h.pread(length, off)
        lat.append(time.monotonic() - t0)
    h.shutdown()
    return lat


def proc_status(pid, key):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    fail("no %s in /proc/%d/status" % (key, pid))


def counts(pid):
    return len(os.listdir("/proc/%d/task" % pid)), len(os.listdir("/proc/%d/fd" % pid))


def wait_counts(pid, base, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        now = counts(pid)
        if now[0] <= base[0] and now[1] <= base[1]:
            return
        if time.monotonic() > deadline:
            fail("%s: threads/fds %s, baseline %s" % (what, now, base))
        time.sleep(0.2)


def c20(path, pid, cap, hs_timeout):
    uri = "nbd+unix:///?socket=" + path
    base = counts(pid)
    # Three connections pipeline 128 x 1 MiB READs each and never read.
    hogs = [hog(path, 128, MiB) for _ in range(3)]
    time.sleep(1.5)
    for length, n in ((4096, 20), (MiB, 5)):
        lat = timed_reads(uri, n, length, 64 * MiB)
        print("other client: %d x %d-byte reads, max %.3f s" % (n, length, max(lat)))
        check(max(lat) < 1.0, "a %d-byte read took %.2f s beside non-reading clients"
              % (length, max(lat)))
    rss = proc_status(pid, "VmRSS") * 1024
    print("server RSS %.1f MiB with 3 non-reading clients (cap %.0f MiB)" % (rss / MiB, cap / MiB))
    check(rss < cap, "server RSS %d exceeds its request-memory cap %d" % (rss, cap))
    for s in hogs:
        s.close()
    wait_counts(pid, base, 10, "after the non-reading clients left")
    if os.environ.get("RK_ASAN") != "1":  # ASan's quarantine keeps freed memory resident
        deadline = time.monotonic() + 10
        while proc_status(pid, "VmRSS") * 1024 > 48 * MiB:
            check(time.monotonic() < deadline, "server RSS still %d KiB 10 s after the "
                  "non-reading clients left" % proc_status(pid, "VmRSS"))
            time.sleep(0.25)
        print("server RSS back to %.1f MiB after they left" % (proc_status(pid, "VmRSS") / 1024))

    # 500 connections that never finish the handshake.
    socks = []
    for _ in range(500):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.setblocking(False)
        socks.append(s)
    t0 = time.monotonic()
    open_ = set(socks)
    while open_ and time.monotonic() - t0 < hs_timeout + 10:
        r, _, _ = select.select(list(open_)[:900], [], [], 0.5)
        for s in r:
            try:
                while True:
                    d = s.recv(4096)
                    if not d:
                        open_.discard(s)
                        break
            except BlockingIOError:
                pass
            except OSError:
                open_.discard(s)
    took = time.monotonic() - t0
    check(not open_, "%d of 500 half-open connections still open after %.1f s"
          % (len(open_), took))
    check(took >= hs_timeout * 0.9, "half-open connections closed after %.1f s, before the "
          "%.1f s handshake timeout" % (took, hs_timeout))
    print("500 half-open connections closed after %.1f s (timeout %.1f s)" % (took, hs_timeout))
    for s in socks:
        s.close()
    wait_counts(pid, base, 10, "after the half-open connections")
    # The server still serves.
    timed_reads(uri, 3, 4096, MiB)


def latency(path, pid, cap):
    uri = "nbd+unix:///?socket=" + path
    quiet = sorted(timed_reads(uri, 300, 4096, 64 * MiB))
    hogs = [hog(path, 128, MiB, sustained=True), hog(path, 256, 4096, sustained=True)]
    time.sleep(1.0)
    busy = sorted(timed_reads(uri, 300, 4096, 64 * MiB))
    for s in hogs:
        s.close()
    p = lambda v, q: v[min(len(v) - 1, int(len(v) * q))]
    print("4 KiB read latency quiet: median %.2f ms p99 %.2f ms; beside non-readers: median "
          "%.2f ms p99 %.2f ms max %.2f ms" % (p(quiet, .5) * 1e3, p(quiet, .99) * 1e3,
                                              p(busy, .5) * 1e3, p(busy, .99) * 1e3,
                                              busy[-1] * 1e3))
    check(p(busy, .99) < 0.1, "p99 4 KiB read latency %.1f ms beside non-reading clients"
          % (p(busy, .99) * 1e3))
    check(busy[-1] < 1.0, "a 4 KiB read took %.2f s beside non-reading clients" % busy[-1])


def main():
    # A read stuck inside libnbd never returns to Python: the default SIGALRM action ends us.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(30)
    mode, path, pid, cap = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode == "c20":
        c20(path, pid, cap, float(sys.argv[5]))
    else:
        latency(path, pid, cap)
    print("PASS")


main()
