# Raw NBD client checks of block status for nbd_block_status.sh (NBD protocol, "Metadata
# querying", "NBD_CMD_BLOCK_STATUS"): usage: nbd_block_status.py SOCKET SIZE.
# SET_META_CONTEXT without structured replies -> INVALID; BLOCK_STATUS without a selected context
# -> EINVAL; REQ_ONE gives one extent no longer than asked; length 0 and past the end -> EINVAL;
# NBD_CMD_CACHE succeeds; LIST_META_CONTEXT offers base:allocation.
import socket
import struct
import sys

IHAVEOPT, REP_MAGIC = 0x49484156454F5054, 0x3E889045565A9
OPT_GO, OPT_SR, OPT_LIST_META, OPT_SET_META = 7, 8, 9, 10
REP_ACK, REP_META, REP_INFO, REP_ERR_INVALID = 1, 4, 3, 2**31 + 3
CMD_CACHE, CMD_BS, FLAG_REQ_ONE = 5, 7, 1 << 3


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            fail("server closed the connection")
        b += c
    return b


def opt(s, o, data=b""):
    s.sendall(struct.pack(">QII", IHAVEOPT, o, len(data)) + data)
    reps = []
    while True:
        magic, ro, rt, ln = struct.unpack(">QIII", recvn(s, 20))
        if magic != REP_MAGIC or ro != o:
            fail("bad option reply")
        reps.append((rt, recvn(s, ln)))
        if rt != REP_META and rt != REP_INFO:
            return reps


def meta_payload(queries):
    d = struct.pack(">I", 0) + struct.pack(">I", len(queries))
    for q in queries:
        d += struct.pack(">I", len(q)) + q
    return d


def connect(path, structured, meta):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    recvn(s, 18)
    s.sendall(struct.pack(">I", 3))
    if structured:
        opt(s, OPT_SR)
    if meta:
        r = opt(s, OPT_SET_META, meta_payload([b"base:allocation"]))
        if r[0][0] != REP_META or r[-1][0] != REP_ACK:
            fail("SET_META_CONTEXT base:allocation not selected: %r" % r)
    r = opt(s, OPT_GO, struct.pack(">IH", 0, 0))
    if r[-1][0] != REP_ACK:
        fail("GO refused")
    return s


def request(s, typ, off, ln, flags=0):
    s.sendall(struct.pack(">IHHQQI", 0x25609513, flags, typ, 7, off, ln))
    magic = struct.unpack(">I", recvn(s, 4))[0]
    if magic == 0x67446698:
        err, _ = struct.unpack(">IQ", recvn(s, 12))
        return err, None
    flags, rtype, _, ln = struct.unpack(">HHQI", recvn(s, 16))
    body = recvn(s, ln)
    if rtype == 5:
        ext = [struct.unpack(">II", body[4 + 8 * i:12 + 8 * i]) for i in range((ln - 4) // 8)]
        return 0, ext
    if rtype & 0x8000:
        return struct.unpack(">I", body[:4])[0], None
    fail("unexpected reply type %d" % rtype)


def main():
    path, size = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    recvn(s, 18)
    s.sendall(struct.pack(">I", 3))
    r = opt(s, OPT_SET_META, meta_payload([b"base:allocation"]))
    if r[-1][0] != REP_ERR_INVALID:
        fail("SET_META_CONTEXT before structured replies: %r" % r)
    r = opt(s, OPT_LIST_META, meta_payload([]))
    if (REP_META, struct.pack(">I", 0) + b"base:allocation") not in r or r[-1][0] != REP_ACK:
        fail("LIST_META_CONTEXT: %r" % r)
    r = opt(s, OPT_LIST_META, meta_payload([b"x-foo:bar"]))
    if r != [(REP_ACK, b"")]:
        fail("LIST_META_CONTEXT of an unknown namespace: %r" % r)
    s.close()

    s = connect(path, True, False)
    err, _ = request(s, CMD_BS, 0, 4096)
    if err != 22:
        fail("BLOCK_STATUS without a context: error %d, want EINVAL" % err)
    s.close()

    s = connect(path, True, True)
    err, ext = request(s, CMD_BS, 0, size)
    if err or not ext or sum(e[0] for e in ext) > size:
        fail("BLOCK_STATUS whole volume: %r %r" % (err, ext))
    err, ext = request(s, CMD_BS, 0, 1 << 20, FLAG_REQ_ONE)
    if err or len(ext) != 1 or ext[0][0] > (1 << 20) or ext[0][0] == 0:
        fail("REQ_ONE: %r %r" % (err, ext))
    for off, ln, what in ((0, 0, "length 0"), (size, 512, "at the end"),
                          (size - 512, 1024, "past the end")):
        err, _ = request(s, CMD_BS, off, ln)
        if err != 22:
            fail("BLOCK_STATUS %s: error %d, want EINVAL" % (what, err))
    err, _ = request(s, CMD_CACHE, 0, 1 << 20)
    if err:
        fail("CACHE: error %d" % err)
    s.close()
    print("protocol edge cases ok")


main()
