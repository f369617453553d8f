"""HTTP/2 by `Upgrade: h2c` for the HTTP matrix (tests/http_matrix.py), both ends written out
here (no HTTP/2 library implements the server side of the upgrade in Python or Node).

python3 http2_upgrade.py server LOG — a thread-per-connection server that knows nothing of
proflink; prints "port N" (kernel-picked, 127.0.0.1). Each connection starts with an HTTP/1.1
request `GET /work?ms=N` carrying `Upgrade: h2c`: the server answers 101, sends its SETTINGS,
works N ms of CPU for it (stream 1) and answers it as HTTP/2; then every HEADERS frame is a
request of its own, worked on and answered the same way. Each stretch of work is logged from the
server's own reading of the request: "w <native tid> <start ns> <end ns> <trace id or ->"
(CLOCK_MONOTONIC) to LOG. Header blocks are decoded only as far as this file's client encodes
them (static-table fields and literals never indexed, no Huffman coding).

python3 http2_upgrade.py client PORT CONNS SECONDS MS — CONNS connections, each upgraded, then
one request at a time, every one with its own random traceparent, until SECONDS have passed.
Prints "errors N".

With HTTP_MATRIX_CERT and HTTP_MATRIX_KEY set, the server speaks h2 over TLS instead (Python's
ssl, ALPN "h2", the client's preface first, no upgrade); `client-tls` is its client, with the
same arguments. This is HTTP/2 as browsers and proxies speak it to a TLS-terminating server."""
import random
import socket
import socketserver
import os
import ssl
import sys
import threading
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
LOCK = threading.Lock()


def frame(ftype, flags, stream, payload):
    return (len(payload).to_bytes(3, "big") + bytes([ftype, flags]) +
            stream.to_bytes(4, "big") + payload)


def read_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise OSError("connection closed")
        out += chunk
    return out


def read_frame(s):
    h = read_exact(s, 9)
    n = int.from_bytes(h[:3], "big")
    return h[3], h[4], int.from_bytes(h[5:9], "big") & 0x7fffffff, read_exact(s, n)


def trace_of(tp):
    p = tp.strip().split("-")
    return p[1] if len(p) == 4 and len(p[1]) == 32 else "-"


def work(log, ms, trace):
    start = time.monotonic_ns()
    cpu0 = time.thread_time()
    while time.thread_time() - cpu0 < ms / 1000.0:
        pass
    end = time.monotonic_ns()
    with LOCK:
        log.write("w %d %d %d %s\n" % (threading.get_native_id(), start, end, trace))


def decode_block(b):
    """The fields of this file's client: 0x8N static fields, 0x0N literals (indexed name or a
    new one), lengths below 127, no Huffman."""
    static = {1: ":authority", 4: ":path"}
    fields, i = {}, 0
    while i < len(b):
        if b[i] & 0x80:
            i += 1
            continue
        idx = b[i] & 0x0f
        i += 1
        if idx:
            name = static[idx]
        else:
            n = b[i]
            name = b[i + 1:i + 1 + n].decode()
            i += 1 + n
        n = b[i]
        fields[name] = b[i + 1:i + 1 + n].decode()
        i += 1 + n
    return fields


def ms_of(path):
    return int(path.split("?ms=")[1]) if "?ms=" in path else 0


RESPONSE_HEADERS = b"\x88"  # :status 200


def answer(s, stream):
    s.sendall(frame(1, 4, stream, RESPONSE_HEADERS) + frame(0, 1, stream, b"ok"))


def serve_frames(s, log):
    """Every HEADERS frame after the client's preface is a request: worked on and answered."""
    while True:
        ftype, flags, stream, payload = read_frame(s)
        if ftype == 4 and not flags & 1:
            s.sendall(frame(4, 1, 0, b""))
        elif ftype == 1:
            f = decode_block(payload)
            work(log, ms_of(f.get(":path", "")), trace_of(f.get("traceparent", "")))
            answer(s, stream)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        s, log = self.request, self.server.log
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if self.server.tls:
                s = self.server.tls.wrap_socket(s, server_side=True)
                if s.selected_alpn_protocol() != "h2" or read_exact(s, len(PREFACE)) != PREFACE:
                    return
                s.sendall(frame(4, 0, 0, b""))
                serve_frames(s, log)
                return
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                if not chunk:
                    return
                head += chunk
            lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
            hdrs = {k.strip().lower(): v.strip()
                    for k, _, v in (ln.partition(":") for ln in lines[1:])}
            if hdrs.get("upgrade") != "h2c":
                return
            s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                      b"Upgrade: h2c\r\n\r\n" + frame(4, 0, 0, b""))
            work(log, ms_of(lines[0].split()[1]), trace_of(hdrs.get("traceparent", "")))
            answer(s, 1)
            if read_exact(s, len(PREFACE)) != PREFACE:
                return
            serve_frames(s, log)
        except (OSError, ssl.SSLError):
            pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def hstr(b):
    return bytes([len(b)]) + b


def client(port, seconds, ms, errors, tls=False):
    deadline = time.monotonic() + seconds
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def tp():
            return ("00-%032x-%016x-01" % (random.getrandbits(128) | 1,
                                           random.getrandbits(64) | 1)).encode()

        def until_end(stream):
            while True:
                ftype, flags, sid, _ = read_frame(s)
                if sid == stream and ftype in (0, 1) and flags & 1:
                    return
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE  # the run's self-signed certificate
            ctx.set_alpn_protocols(["h2"])
            s = ctx.wrap_socket(s)
            s.sendall(PREFACE + frame(4, 0, 0, b""))
            stream = 1
        else:
            stream = upgrade(s, ms, tp, until_end)
        while time.monotonic() < deadline:
            block = (b"\x82\x86" + b"\x04" + hstr(b"/work?ms=%d" % ms) + b"\x01" + hstr(b"m") +
                     b"\x00" + hstr(b"traceparent") + hstr(tp()))
            s.sendall(frame(1, 5, stream, block))
            until_end(stream)
            stream += 2
        s.close()
    except (OSError, ssl.SSLError) as e:
        errors.append(str(e))


def upgrade(s, ms, tp, until_end):
    """The first request, upgraded to h2c and answered as stream 1; the next stream's id."""
    s.sendall(b"GET /work?ms=%d HTTP/1.1\r\nHost: m\r\nConnection: Upgrade, HTTP2-Settings\r\n"
              b"Upgrade: h2c\r\nHTTP2-Settings: \r\ntraceparent: %s\r\n\r\n" % (ms, tp()))
    head = b""
    while b"\r\n\r\n" not in head:
        head += read_exact(s, 1)
    if not head.startswith(b"HTTP/1.1 101"):
        raise OSError("no upgrade: %r" % head)
    s.sendall(PREFACE + frame(4, 0, 0, b""))
    until_end(1)
    return 3


def main():
    if sys.argv[1] == "server":
        srv = Server(("127.0.0.1", 0), Handler)
        srv.log = open(sys.argv[2], "a", buffering=1)
        srv.tls = None
        if os.environ.get("HTTP_MATRIX_CERT"):
            srv.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            srv.tls.load_cert_chain(os.environ["HTTP_MATRIX_CERT"], os.environ["HTTP_MATRIX_KEY"])
            srv.tls.set_alpn_protocols(["h2"])
        print("port %d" % srv.server_address[1], flush=True)
        srv.serve_forever()
    else:
        port, conns, seconds, ms = (int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
                                    int(sys.argv[5]))
        errors = []
        tls = sys.argv[1] == "client-tls"
        threads = [threading.Thread(target=client, args=(port, seconds, ms, errors, tls))
                   for _ in range(conns)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            print(errors[0], file=sys.stderr)
        print("errors %d" % len(errors))


if __name__ == "__main__":
    main()
