"""http_rps.py PORT SECONDS THREADS — keep-alive GET /work?ms=0 requests, each with its own
traceparent, from THREADS connections for SECONDS; prints "requests_per_s N"."""
import random
import socket
import sys
import threading
import time

sys.path.insert(0, __file__.rsplit("/", 3)[0] + "/tests")
from http_matrix import read_response  # noqa: E402


def run(port, deadline, counts, i):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf, n = b"", 0
    while time.monotonic() < deadline:
        tp = "00-%032x-%016x-01" % (random.getrandbits(128) | 1, random.getrandbits(64) | 1)
        s.sendall(("GET /work?ms=0 HTTP/1.1\r\nHost: b\r\ntraceparent: %s\r\n\r\n" % tp).encode())
        buf, _ = read_response(s, buf)
        n += 1
    counts[i] = n


port, seconds, k = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
counts = [0] * k
deadline = time.monotonic() + seconds
ts = [threading.Thread(target=run, args=(port, deadline, counts, i)) for i in range(k)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("requests_per_s %.0f" % (sum(counts) / seconds))
