"""Hostile request bytes sent to an HTTPS server (tests/https.bats): heads cut at every byte,
two traceparent headers, a head over 8 KiB, Content-Length and Transfer-Encoding together, a
lying chunk size, ten pipelined requests, binary garbage, the HTTP/2 preface, a request ending
mid-head. Each case goes over its own TLS connection; everything the server answers (until it
closes, or 1.5 s of silence) is written to OUT, one block per case, with the Date header taken
out (the only line that changes between runs).

https_hostile.py PORT OUT"""
import socket
import ssl
import sys
import time

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
GET = "GET /small HTTP/1.1\r\nHost: x\r\n"
CASES = {
    "byte_by_byte": [bytes([b]) for b in (GET + "traceparent: %s\r\n\r\n" % TP).encode()],
    "two_traceparents": [(GET + "traceparent: %s\r\ntraceparent: %s\r\n\r\n" % (TP, TP)).encode()],
    "head_over_8k": [(GET + "X-Pad: %s\r\ntraceparent: %s\r\n\r\n" % ("a" * 9000, TP)).encode()],
    "cl_and_te": [("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /small HTTP/1.1\r\n"
                   "Host: x\r\ntraceparent: %s\r\n\r\n" % TP).encode()],
    "lying_chunk": [("POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "ffffffffffffffffff\r\nabc\r\n0\r\n\r\n").encode()],
    "pipelined_10": [((GET + "traceparent: %s\r\n\r\n" % TP) * 10).encode()],
    "garbage": [bytes(range(256)) * 4],
    "h2_preface": [b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00" * 9],
    "cut_mid_head": [(GET + "traceparent: 00-4bf92f35").encode()],
}


def run(port, parts):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)))
    for p in parts:
        s.sendall(p)
        if len(parts) > 1:
            time.sleep(0.002)
    s.settimeout(1.5)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except (socket.timeout, ssl.SSLError, OSError):
        pass
    s.close()
    return b"\n".join(l for l in got.split(b"\n") if not l.lower().startswith(b"date:"))


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    with open(out, "wb") as f:
        for name, parts in CASES.items():
            f.write(b"== %s\n" % name.encode() + run(port, parts) + b"\n")


main()
