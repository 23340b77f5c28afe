# A server stop while a client is still sending a WRITE's payload: the requests received in full
# are answered, the half-received WRITE gets no reply at all, and the connection closes (NBD
# proto "Terminating the transmission phase"). Before the fix the stop answered it with EIO, a
# reply for a handle the client was still sending; libnbd drops the connection on such a reply
# ("no matching cookie found for server reply, this is probably a bug in the server": fio's nbd
# engine, 256 KiB writes at queue depth 8, SIGTERM to raidkit serve, 3 runs in 12).
import struct
import threading
import time

from nbd_util import CMD_WRITE, SIMPLE_MAGIC, Raw, Server, check, fail, run

MiB = 1024 * 1024


def main(tmp):
    srv = Server(tmp, "--size", "64M", "--block", "4096")
    r = Raw(srv.sock)
    r.go()
    # One whole write first: answered as usual.
    r.request(CMD_WRITE, 0, 4096, 1, data=b"\x5a" * 4096)
    magic, handle, err, _ = r.reply()
    check(magic == SIMPLE_MAGIC and handle == 1 and err == 0,
          "whole write: magic %x handle %d error %d" % (magic, handle, err))
    # Then a 4 MiB write whose payload stops after 256 KiB: the server's reader waits for the
    # rest inside the payload when the stop comes.
    r.request(CMD_WRITE, MiB, 4 * MiB, 2, data=b"\xa5" * (256 * 1024))
    time.sleep(0.3)
    stopper = threading.Thread(target=srv.stop)
    stopper.start()
    got = b""
    r.s.settimeout(25)
    try:
        while True:
            c = r.s.recv(65536)
            if not c:
                break
            got += c
    except OSError as e:  # a reset instead of an orderly close is fine too
        print("recv ended with %s" % e)
    stopper.join()
    if len(got) >= 16:
        magic, err, handle = struct.unpack(">IIQ", got[:16])
        fail("the half-received WRITE was answered: %d bytes after the stop (magic %x, error %d, "
             "handle %d)" % (len(got), magic, err, handle))
    check(got == b"", "%d stray bytes after the stop" % len(got))


run(main)
