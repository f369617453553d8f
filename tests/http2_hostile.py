"""Hostile HTTP/2 clients against an unmodified Node HTTP/2 server (tests/http_matrix_node.js
h2_sync, plaintext, prior knowledge), run once with proflink preloaded (PROFLINK_HTTP=1) and once
without: the server must answer every connection with the same bytes. Each case is one
connection whose bytes are sent at once, then the answer is read until the server closes or is
quiet for a while.

http2_hostile.py LIB — prints one line per case ("same" or "DIFFERENT: ...") and exits 1 if any
answer differs."""
import os
import random
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODESRV = os.path.join(ROOT, "tests", "http_matrix_node.js")
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
TP = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def frame(ftype, flags, stream, payload):
    return (len(payload).to_bytes(3, "big") + bytes([ftype, flags]) +
            stream.to_bytes(4, "big") + payload)


def hint(value, prefix_bits, first):
    """An HPACK integer with its first byte's high bits `first`."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out, value = [first | limit], value - limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes(out + [value])


def hstr(s):
    return hint(len(s), 7, 0) + s


def literal(name, value, first=0x00):
    """A literal field with a new name: 0x00 not indexed, 0x40 indexed (dynamic table)."""
    return bytes([first]) + hstr(name) + hstr(value)


def request_block(path=b"/work?ms=1", extra=b""):
    # :method GET, :scheme http (static 2, 6), :path and :authority literal with indexed names
    return (b"\x82\x86" + hint(4, 4, 0) + hstr(path) + hint(1, 4, 0) + hstr(b"m") +
            literal(b"traceparent", TP, 0x40) + extra)


SETTINGS = frame(4, 0, 0, b"")
SETTINGS_ACK = frame(4, 1, 0, b"")


def cases():
    rnd = random.Random(3741)
    ok = frame(1, 5, 1, request_block())
    yield "garbage after the preface", PREFACE + bytes(rnd.getrandbits(8) for _ in range(300))
    yield "garbage after a request", PREFACE + SETTINGS + ok + b"\xff" * 40
    yield "a valid request (control)", PREFACE + SETTINGS + SETTINGS_ACK + ok
    big = request_block(extra=literal(b"x-pad", b"~" * 20000))
    parts = [big[i:i + 16000] for i in range(0, len(big), 16000)]
    yield "a header block over 16 KiB", (
        PREFACE + SETTINGS + frame(1, 1, 1, parts[0]) +
        b"".join(frame(9, 4 if i == len(parts) - 1 else 0, 1, p)
                 for i, p in enumerate(parts[1:], 1)))
    block = request_block()
    flood = frame(1, 1, 1, block[:3]) + b"".join(
        frame(9, 0, 1, block[3 + i:4 + i]) for i in range(len(block) - 4))
    flood += frame(9, 0, 1, b"") * 2000 + frame(9, 4, 1, block[-1:])
    yield "a CONTINUATION flood", PREFACE + SETTINGS + flood
    yield "CONTINUATION on another stream", (
        PREFACE + SETTINGS + frame(1, 1, 1, block[:5]) + frame(9, 4, 3, block[5:]))
    # dynamic table size updates: to 0, back to 4096, then over the limit
    yield "table size 0 then 4096", (
        PREFACE + SETTINGS + frame(1, 5, 1, b"\x20" + hint(4096, 5, 0x20) + request_block()))
    yield "table size over the limit", (
        PREFACE + SETTINGS + frame(1, 5, 1, hint(65536, 5, 0x20) + request_block()))
    yield "a size update after a field", (
        PREFACE + SETTINGS + frame(1, 5, 1, request_block() + b"\x20"))
    yield "an index past the tables", PREFACE + SETTINGS + frame(1, 5, 1, b"\x82\xff\x7f")
    yield "a bad Huffman string", (
        PREFACE + SETTINGS + frame(1, 5, 1, b"\x82\x86\x44\x83\xff\xff\xff"))
    yield "two traceparents, then a second stream", (
        PREFACE + SETTINGS + SETTINGS_ACK +
        frame(1, 5, 1, request_block(extra=literal(b"traceparent", TP))) +
        frame(1, 5, 3, b"\x82\x86\x84\x41\x01m\xbe"))
    yield "a preface cut, then HTTP/1.1", PREFACE[:10] + b"GET / HTTP/1.1\r\nHost: m\r\n\r\n"
    yield "HEADERS on stream 0 and even streams", (
        PREFACE + SETTINGS + frame(1, 5, 0, block) + frame(1, 5, 2, block))
    yield "a RST_STREAM then a reused stream id", (
        PREFACE + SETTINGS + frame(1, 5, 1, block) + frame(3, 0, 1, b"\0\0\0\x08") +
        frame(1, 5, 1, block))


def answer(port, data):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(0.5)
    try:
        s.sendall(data)
    except OSError:
        pass
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    s.close()
    return out


def answers(lib, tmp):
    env = dict(os.environ, PROFLINK_HTTP="1",
               ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=tmp)
    if lib:
        env["LD_PRELOAD"] = lib
    else:
        env.pop("LD_PRELOAD", None)
    log = os.path.join(tmp, "log")
    srv = subprocess.Popen(["node", NODESRV, "h2_sync", log], env=env, stdout=subprocess.PIPE,
                           text=True)
    try:
        port = int(srv.stdout.readline().split()[1])
        return [(name, answer(port, data)) for name, data in cases()]
    finally:
        srv.kill()
        srv.wait()


def main():
    lib = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        plain = answers(None, tmp)
        preloaded = answers(lib, tmp)
    bad = 0
    for (name, a), (_, b) in zip(plain, preloaded):
        if a == b:
            print("same (%d bytes): %s" % (len(a), name))
        else:
            bad += 1
            print("DIFFERENT: %s: %r / %r" % (name, a[:200], b[:200]))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
