"""Concurrent traced requests for the end-to-end suite's HTTP scenario.

http_load.py PORT CONC SEQ MS
  CONC clients at once, each making SEQ requests one after the other, every request on a new
  connection (the server gives each connection its own thread) with a traceparent of its own
  (random trace and parent ids, sampled): GET /spin?ms=MS. Prints one line per request:
  "TRACE_ID PARENT_ID TID", TID being the serving thread's id (the answer's body)."""
import http.client
import os
import sys
import threading

port, conc, seq, ms = (int(a) for a in sys.argv[1:5])
lines, lock = [], threading.Lock()


def client():
    for _ in range(seq):
        trace, parent = os.urandom(16).hex(), os.urandom(8).hex()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/spin?ms=%d" % ms,
                  headers={"traceparent": "00-%s-%s-01" % (trace, parent), "Connection": "close"})
        r = c.getresponse()
        body = r.read().decode().strip()
        c.close()
        if r.status != 200:
            raise SystemExit("status %d" % r.status)
        with lock:
            lines.append("%s %s %s" % (trace, parent, body))


threads = [threading.Thread(target=client) for _ in range(conc)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("\n".join(lines))
