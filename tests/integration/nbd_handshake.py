# Handshake checks below what nbdinfo shows: unknown and oversized options get error replies
# and the connection lives, LIST, INFO/GO name checks, EXPORT_NAME, ABORT (libnbd + raw client).
import struct
import sys

import nbd
from nbd_util import (REP_ACK, REP_ERR_INVALID, REP_ERR_TOO_BIG, REP_ERR_UNKNOWN, REP_ERR_UNSUP,
                      REP_INFO, REP_SERVER, Raw, check)

sock = sys.argv[1]

# libnbd in opt mode: LIST_META_CONTEXT offers exactly base:allocation (block status); go on.
h = nbd.NBD()
h.set_opt_mode(True)
h.set_export_name("disk")
h.connect_unix(sock)
ctxs = []
h.opt_list_meta_context(lambda name: ctxs.append(name))
check(ctxs == ["base:allocation"], "LIST_META_CONTEXT gave %s" % ctxs)
names = []
h.opt_list(lambda n, d: names.append(n))
check(names == ["disk"], "opt_list gave %s" % names)
h.set_export_name("nope")
try:
    h.opt_info()
    check(False, "unknown export accepted by INFO")
except nbd.Error:
    pass
h.set_export_name("")  # the default export is ours too
h.opt_go()
check(h.get_size() == 32 << 20, "size %d" % h.get_size())
check(h.pread(4096, 0) == bytes(4096), "read after opt_go")
h.shutdown()

# Raw: unknown option numbers, an oversized option, bad lengths; the session survives each.
r = Raw(sock)
for opt in (0x1234, 5, 11, 0xFFFFFFFF):
    r.option(opt, b"abc")
    o, typ, _ = r.opt_reply()
    check(o == opt and typ == REP_ERR_UNSUP, "option %#x: reply %#x" % (opt, typ))
for opt in (9, 10):  # LIST/SET_META_CONTEXT with a truncated payload (SET also lacks structured)
    r.option(opt, b"abc")
    o, typ, _ = r.opt_reply()
    check(o == opt and typ == REP_ERR_INVALID, "option %#x: reply %#x" % (opt, typ))
r.option(0x99, bytes(100000))
o, typ, _ = r.opt_reply()
check(typ == REP_ERR_TOO_BIG, "100 kB option: reply %#x, want TOO_BIG" % typ)
r.option(3, b"x")  # LIST with data
check(r.opt_reply()[1] == REP_ERR_INVALID, "LIST with data not INVALID")
r.option(8, b"x")  # STRUCTURED_REPLY with data
check(r.opt_reply()[1] == REP_ERR_INVALID, "STRUCTURED_REPLY with data not INVALID")
r.option(7, struct.pack(">I", 100) + b"disk" + struct.pack(">H", 0))  # name length too big
check(r.opt_reply()[1] == REP_ERR_INVALID, "GO with bad name length not INVALID")
r.option(6, struct.pack(">I", 5) + b"other" + struct.pack(">H", 0))
check(r.opt_reply()[1] == REP_ERR_UNKNOWN, "INFO of an unknown export not UNKNOWN")
r.option(3)
_, typ, data = r.opt_reply()
check(typ == REP_SERVER and data == struct.pack(">I", 4) + b"disk", "LIST reply %r" % data)
check(r.opt_reply()[1] == REP_ACK, "LIST not ended by ACK")
r.option(6, struct.pack(">I", 4) + b"disk" + struct.pack(">HHHH", 3, 1, 2, 3))
infos = {}
while True:
    _, typ, data = r.opt_reply()
    if typ != REP_INFO:
        check(typ == REP_ACK, "INFO ended with %#x" % typ)
        break
    infos[struct.unpack(">H", data[:2])[0]] = data[2:]
check(infos.get(1) == b"disk", "NBD_INFO_NAME %r" % infos.get(1))
check(infos.get(2) == b"test disk", "NBD_INFO_DESCRIPTION %r" % infos.get(2))
check(struct.unpack(">III", infos[3]) == (4096, 4096, 1 << 20), "BLOCK_SIZE %r" % infos[3])
r.go(b"disk")
check(r.size == 32 << 20, "GO size")
r.request(0, 0, 4096, 1)
check(r.reply(4096)[2:] == (0, bytes(4096)), "read after raw GO")

# EXPORT_NAME: size + flags, no zero padding (we asked for NO_ZEROES); unknown name: closed.
r = Raw(sock)
r.option(1, b"disk")
size, flags = struct.unpack(">QH", r.recv(10))
check(size == 32 << 20 and flags & 1, "EXPORT_NAME reply")
r.request(0, 4096, 4096, 2)
check(r.reply(4096)[1:3] == (2, 0), "read after EXPORT_NAME")
r = Raw(sock)
r.option(1, b"wrong")
check(r.closed(), "EXPORT_NAME of an unknown export kept the session")
r = Raw(sock)
r.option(2)
check(r.opt_reply()[1] == REP_ACK and r.closed(), "ABORT")
r = Raw(sock)
r.s.sendall(bytes(16))  # an option header without the IHAVEOPT magic
check(r.closed(), "garbage option header kept the session")
r = Raw(sock, client_flags=0x4)  # unknown client flag: refused
check(r.closed(), "unknown client flags accepted")
r = Raw(sock, client_flags=0x1)  # without NO_ZEROES, EXPORT_NAME pads with 124 zeros
r.option(1, b"")
size, flags = struct.unpack(">QH", r.recv(10))
check(r.recv(124) == bytes(124), "EXPORT_NAME padding")
r.request(0, 0, 4096, 3)
check(r.reply(4096)[1:3] == (3, 0), "read after padded EXPORT_NAME")
print("raw handshake checks ok")
