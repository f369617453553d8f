"""A raw-socket HTTP/1.1 client for the HTTP reading tests: it controls exactly how a request
head reaches the server (split into pieces with pauses, several requests on one connection).

http_client.py PORT MS TP[,TP...] [--split K] [--pause PATH] [--path PATH]
  One keep-alive connection; for each TP (a traceparent value, or "-" for no header) it sends
  `GET /spin?ms=MS` with that header, cut into K pieces sent 0.3 s apart (the cut inside the
  traceparent line), and prints "done I TID" with the serving thread's id from the answer. With
  --pause, before the next request it waits (20 s at most) until PATH.I exists. --path asks
  for PATH instead of /spin?ms=MS (then it prints the answer's length instead of a thread id)."""
import os
import socket
import sys
import time


def read_answer(s, buf):
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        rest += s.recv(4096)
    return rest[:length], rest[length:]


def main():
    port, ms, tps = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
    args = sys.argv[4:]
    split = int(args[args.index("--split") + 1]) if "--split" in args else 1
    pause = args[args.index("--pause") + 1] if "--pause" in args else None
    path = args[args.index("--path") + 1] if "--path" in args else "/spin?ms=%d" % ms
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    for i, tp in enumerate(tps):
        if pause and i > 0:
            deadline = time.monotonic() + 20
            while not os.path.exists("%s.%d" % (pause, i)) and time.monotonic() < deadline:
                time.sleep(0.05)
        head = "GET %s HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n" % path
        if tp != "-":
            head += "traceparent: %s\r\n" % tp
        head = (head + "Accept: */*\r\n\r\n").encode()
        # cut points inside the traceparent line when there is one, else evenly
        anchor = head.find(b"traceparent") if tp != "-" else -1
        cuts = [anchor + 14 + 9 * k for k in range(split - 1)] if anchor >= 0 else \
               [len(head) * (k + 1) // split for k in range(split - 1)]
        prev = 0
        for c in cuts + [len(head)]:
            s.sendall(head[prev:c])
            prev = c
            if c != len(head):
                time.sleep(0.3)
        body, buf = read_answer(s, buf)
        answer = body.decode().strip() if "--path" not in args else "%d bytes" % len(body)
        print("done %d %s" % (i, answer), flush=True)
    s.close()


main()
