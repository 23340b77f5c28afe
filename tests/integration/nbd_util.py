# Shared helpers for the nbd_*.sh integration tests: start/stop nbd_test_server on a private unix
# socket, a tiny raw NBD client for requests libnbd refuses to send, and pass/fail/skip exits.
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

NBD_MAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REP_MAGIC = 0x3E889045565A9
REQ_MAGIC = 0x25609513
SIMPLE_MAGIC = 0x67446698
STRUCT_MAGIC = 0x668E33EF
REP_ACK, REP_SERVER, REP_INFO = 1, 2, 3
REP_ERR_UNSUP, REP_ERR_INVALID, REP_ERR_UNKNOWN, REP_ERR_TOO_BIG = (
    2**31 + 1, 2**31 + 3, 2**31 + 6, 2**31 + 9)
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM, CMD_WZ = 0, 1, 2, 3, 4, 6
EPERM, EIO, EINVAL, ENOSPC = 1, 5, 22, 28


def skip(msg):
    print("SKIP: " + msg, file=sys.stderr)
    sys.exit(77)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def server_bin():
    b = os.path.join(os.environ.get("RAIDKIT_BUILD_DIR", ""), "nbd_test_server")
    if not os.access(b, os.X_OK):
        skip("nbd_test_server not built (RAIDKIT_BUILD_DIR=%s)" % os.environ.get("RAIDKIT_BUILD_DIR"))
    return b


class Server:
    """nbd_test_server on $tmp/sock.N; stop() requires exit status 0 after SIGTERM."""

    count = 0
    live = []

    def __init__(self, tmp, *args, listen=None):
        Server.count += 1
        self.sock = os.path.join(tmp, "sock.%d" % Server.count)
        self.log = os.path.join(tmp, "server.%d.log" % Server.count)
        self.uri = "nbd+unix:///?socket=" + self.sock
        listen = listen or "unix:" + self.sock
        with open(self.log, "w") as lf:
            self.proc = subprocess.Popen([server_bin(), "--listen", listen] + list(args),
                                         stderr=lf, stdout=subprocess.DEVNULL)
        Server.live.append(self)
        for _ in range(200):
            if "ready" in open(self.log).read():
                return
            if self.proc.poll() is not None:
                fail("server %s exited with %d: %s" % (args, self.proc.returncode,
                                                       open(self.log).read()))
            time.sleep(0.05)
        fail("server did not become ready")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("server did not exit within 20 s of SIGTERM")
        check(rc == 0, "server exited with %d after SIGTERM: %s" % (rc, open(self.log).read()))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def tmpdir():
    return tempfile.mkdtemp(prefix="rk-nbd.")


def run(main):
    """Run main(tmp) with a private temp dir, removed afterwards."""
    tmp = tmpdir()
    try:
        main(tmp)
    finally:
        for s in Server.live:
            s.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")


class Raw:
    """A minimal raw NBD client: fixed newstyle handshake by hand, requests by hand."""

    def __init__(self, path, client_flags=3):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.connect(path)
        magic, opt, flags = struct.unpack(">QQH", self.recv(18))
        check(magic == NBD_MAGIC and opt == IHAVEOPT, "bad greeting")
        check(flags == 3, "handshake flags %d, want FIXED_NEWSTYLE|NO_ZEROES" % flags)
        self.s.sendall(struct.pack(">I", client_flags))
        self.structured = False

    def recv(self, n):
        b = b""
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                raise EOFError("connection closed after %d of %d bytes" % (len(b), n))
            b += c
        return b

    def option(self, opt, data=b""):
        self.s.sendall(struct.pack(">QII", IHAVEOPT, opt, len(data)) + data)

    def opt_reply(self):
        magic, opt, typ, ln = struct.unpack(">QIII", self.recv(20))
        check(magic == REP_MAGIC, "bad option reply magic %x" % magic)
        return opt, typ, self.recv(ln)

    def go(self, name=b"", structured=False):
        if structured:
            self.option(8)
            _, typ, _ = self.opt_reply()
            check(typ == REP_ACK, "STRUCTURED_REPLY not acked")
            self.structured = True
        self.option(7, struct.pack(">I", len(name)) + name + struct.pack(">H", 0))
        info = {}
        while True:
            _, typ, data = self.opt_reply()
            if typ == REP_INFO:
                info[struct.unpack(">H", data[:2])[0]] = data[2:]
                continue
            check(typ == REP_ACK, "GO failed with %x" % typ)
            break
        self.size, self.tflags = struct.unpack(">QH", info[0])
        return info

    def request(self, typ, off, length, handle, flags=0, data=b""):
        self.s.sendall(struct.pack(">IHHQQI", REQ_MAGIC, flags, typ, handle, off, length) + data)

    def reply(self, read_len=0):
        """Return (magic, handle, error, data) of one whole reply; structured: all chunks."""
        magic = struct.unpack(">I", self.recv(4))[0]
        if magic == SIMPLE_MAGIC:
            err, handle = struct.unpack(">IQ", self.recv(12))
            data = self.recv(read_len) if (read_len and not err) else b""
            return magic, handle, err, data
        check(magic == STRUCT_MAGIC, "bad reply magic %x" % magic)
        data, err = b"", 0
        while True:
            flags, typ, handle, ln = struct.unpack(">HHQI", self.recv(16))
            payload = self.recv(ln)
            if typ == 1:
                data += payload[8:]
            elif typ >= 2**15:
                err = struct.unpack(">I", payload[:4])[0]
            if flags & 1:
                return magic, handle, err, data
            check(struct.unpack(">I", self.recv(4))[0] == STRUCT_MAGIC, "bad chunk magic")

    def closed(self, timeout=5):
        """True when the server closed the connection (EOF) within timeout."""
        r, _, _ = select.select([self.s], [], [], timeout)
        return bool(r) and self.s.recv(1) == b""
