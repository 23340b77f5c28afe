# NBD option and flow checks over TLS (run by nbd_tls.sh): argv = MODE SOCKET CADIR.
#   require: plaintext options get NBD_REP_ERR_TLS_REQD, EXPORT_NAME ends the session.
#   state:   STRUCTURED_REPLY negotiated before STARTTLS does not survive it (a READ after GO
#            gets a simple reply); a second STARTTLS inside TLS gets NBD_REP_ERR_INVALID;
#            STRUCTURED_REPLY sent again after STARTTLS is honoured (structured reply).
#   slow:    120 READs of 4 KiB are sent and no reply is read for 1 s, then all are read: every
#            one is answered (the writer sends replies with data; small ones sent inline first and
#            not taken by the full socket wait in the transport for its flush).
#   slow-writes URI: libnbd queues 3,000 small WRITEs and reads no reply for 2 s, then polls:
#            every write is answered (their header-only replies are the ones sent inline).
import socket
import ssl
import struct
import sys
import time

NBD_MAGIC, IHAVEOPT, REP_MAGIC = 0x4E42444D41474943, 0x49484156454F5054, 0x3E889045565A9
OPT_EXPORT_NAME, OPT_LIST, OPT_STARTTLS, OPT_INFO, OPT_GO, OPT_SR = 1, 3, 5, 6, 7, 8
REP_ACK, ERR_INVALID, ERR_TLS_REQD = 1, 2**31 + 3, 2**31 + 5
SIMPLE, STRUCT = 0x67446698, 0x668E33EF


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def recv_all(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("server closed after %d of %d bytes" % (len(b), n))
        b += c
    return b


def greet(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    magic, opt, _ = struct.unpack(">QQH", recv_all(s, 18))
    if magic != NBD_MAGIC or opt != IHAVEOPT:
        fail("bad greeting")
    s.sendall(struct.pack(">I", 3))  # FIXED_NEWSTYLE | NO_ZEROES
    return s


def option(s, opt, data=b""):
    s.sendall(struct.pack(">QII", IHAVEOPT, opt, len(data)) + data)


def reply(s):
    """One option reply: (type, payload)."""
    magic, _, typ, ln = struct.unpack(">QIII", recv_all(s, 20))
    if magic != REP_MAGIC:
        fail("bad option reply magic %x" % magic)
    return typ, recv_all(s, ln)


def go(s):
    option(s, OPT_GO, struct.pack(">I", 0) + struct.pack(">H", 0))
    while True:
        typ, _ = reply(s)
        if typ == REP_ACK:
            return
        if typ >= 2**31:
            fail("GO refused with %x" % typ)


def read_magic(s):
    s.sendall(struct.pack(">IHHQQI", 0x25609513, 0, 0, 7, 0, 512))
    return struct.unpack(">I", recv_all(s, 4))[0]


def require(path):
    s = greet(path)
    for opt, data in ((OPT_LIST, b""), (OPT_SR, b""), (OPT_INFO, struct.pack(">IH", 0, 0)),
                      (OPT_GO, struct.pack(">IH", 0, 0)), (99, b"")):
        option(s, opt, data)
        typ, _ = reply(s)
        if typ != ERR_TLS_REQD:
            fail("plaintext option %d under --tls require got %x, want TLS_REQD" % (opt, typ))
    option(s, OPT_EXPORT_NAME, b"")
    try:
        got = s.recv(1)
    except OSError:
        got = b""
    if got:
        fail("EXPORT_NAME in plaintext under --tls require was answered")
    print("require: LIST/SR/INFO/GO/unknown got TLS_REQD; EXPORT_NAME closed the session")


def tls(s, cadir):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadir + "/ca-cert.pem")
    ctx.check_hostname = False
    return ctx.wrap_socket(s, server_hostname="localhost")


def state(path, cadir):
    s = greet(path)
    option(s, OPT_SR)
    if reply(s)[0] != REP_ACK:
        fail("STRUCTURED_REPLY in plaintext (--tls on) not acknowledged")
    option(s, OPT_STARTTLS)
    if reply(s)[0] != REP_ACK:
        fail("STARTTLS not acknowledged")
    t = tls(s, cadir)
    option(t, OPT_STARTTLS)
    typ, _ = reply(t)
    if typ != ERR_INVALID:
        fail("second STARTTLS inside TLS got %x, want INVALID" % typ)
    go(t)
    m = read_magic(t)
    if m != SIMPLE:
        fail("READ after STARTTLS got reply magic %x: structured replies survived STARTTLS" % m)
    t.close()
    s = greet(path)
    option(s, OPT_STARTTLS)
    reply(s)
    t = tls(s, cadir)
    option(t, OPT_SR)
    if reply(t)[0] != REP_ACK:
        fail("STRUCTURED_REPLY after STARTTLS not acknowledged")
    go(t)
    if read_magic(t) != STRUCT:
        fail("STRUCTURED_REPLY negotiated inside TLS not used")
    t.close()
    print("state: nothing negotiated before STARTTLS survives it; second STARTTLS refused")


def slow(path, cadir):
    s = greet(path)
    option(s, OPT_STARTTLS)
    reply(s)
    t = tls(s, cadir)
    go(t)
    n, blk = 120, 4096  # 480 KiB of replies: more than the socket holds
    t.sendall(b"".join(struct.pack(">IHHQQI", 0x25609513, 0, 0, i + 1, i * blk, blk)
                       for i in range(n)))
    time.sleep(1)  # the server fills the socket; the rest of its replies wait
    seen = set()
    for i in range(n):
        magic, err, cookie = struct.unpack(">IIQ", recv_all(t, 16))
        if magic != SIMPLE or err:
            fail("reply %d: magic %x error %d" % (i, magic, err))
        recv_all(t, blk)
        seen.add(cookie)
    if seen != set(range(1, n + 1)):
        fail("%d distinct cookies of %d" % (len(seen), n))
    t.close()
    print("slow: %d reads of %d bytes sent before any reply was read, every one answered"
          % (n, blk))


def slow_writes(uri):
    import nbd  # python3-libnbd: its aio calls queue commands that go out only as it polls

    h = nbd.NBD()
    h.set_uri_allow_local_file(True)
    h.connect_uri(uri)
    n, blk = 3000, 512
    errs = []
    for i in range(n):
        buf = nbd.Buffer.from_bytearray(bytearray([i % 251]) * blk)
        h.aio_pwrite(buf, i * blk, completion=lambda e, i=i: errs.append(i) if e[0] else 1)
    time.sleep(2)  # what was sent is served; its replies wait, unread, on the socket
    deadline = time.monotonic() + 60
    while h.aio_in_flight() > 0:
        if time.monotonic() > deadline:
            fail("%d of %d writes still in flight after 60 s" % (h.aio_in_flight(), n))
        h.poll(1000)
    if errs:
        fail("%d writes failed (first: %d)" % (len(errs), errs[0]))
    for i in (0, n // 2, n - 1):
        if h.pread(blk, i * blk) != bytes([i % 251]) * blk:
            fail("block %d read back after the pipelined writes differs" % i)
    h.shutdown()
    print("slow-writes: %d writes queued before any reply was read, every one answered" % n)


if sys.argv[1] == "require":
    require(sys.argv[2])
elif sys.argv[1] == "slow-writes":
    slow_writes(sys.argv[2])
elif sys.argv[1] == "slow":
    slow(sys.argv[2], sys.argv[3])
else:
    state(sys.argv[2], sys.argv[3])
