"""json_eval.py — evaluates Python expressions over JSON files for the bats helpers (json_get).

One interpreter answers every query of a test instead of one start per value: a request is
FILE NUL NAME NUL EXPR NUL on stdin, EXPR evaluated with NAME bound to FILE's JSON (re-read
when the file changed); the answer is "<status>\\n" then the value and a NUL: JSON for lists,
dicts, booleans and None, plain text otherwise (the error on status 1). With --once FILE NAME EXPR it
answers one query on stdout (for callers in a subshell, where no server can be kept).
It exits at the end of its input, or after IDLE_SECONDS without a request (a program started by
the test may still hold our input open)."""
import json
import os
import select
import sys

IDLE_SECONDS = 30
_cache = {}


def evaluate(path, name, expr):
    st = os.stat(path)
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    if _cache.get(path, (None,))[0] != key:
        with open(path, encoding="utf-8") as f:
            _cache[path] = (key, json.load(f))
    # bound as a global: comprehensions in EXPR have their own scope and see globals only
    v = eval(expr, {name: _cache[path][1]})
    if isinstance(v, (dict, list, bool)) or v is None:
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def serve():
    # Inherited descriptors are not ours (bats' output on fd 3, a target's command pipe...): held
    # open here, they would keep a test, or a target waiting for end of input, from ending.
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    buf = b""
    while True:
        while buf.count(b"\0") < 3:
            ready, _, _ = select.select([0], [], [], IDLE_SECONDS)
            chunk = os.read(0, 65536) if ready else b""
            if not chunk:
                return
            buf += chunk
        path, name, expr, buf = buf.split(b"\0", 3)
        try:
            status, text = 0, evaluate(path.decode(), name.decode(), expr.decode())
        except Exception as e:  # the caller's test fails on the status, with this message
            status, text = 1, f"{type(e).__name__}: {e}"
        os.write(1, b"%d\n" % status + text.encode() + b"\0")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--once":
        try:
            print(evaluate(*sys.argv[2:]))
        except Exception as e:
            sys.exit(f"{type(e).__name__}: {e}")
    else:
        serve()
