"""The HTTP matrix: unmodified servers of many shapes under PROFLINK_HTTP=1, every request with
its own random traceparent. Each server logs its own stretches of request work (thread, start,
end, the trace id it parsed itself); build/tests/http_sampler reads every thread's Elastic record
from outside at 1 kHz, as an eBPF profiler does. Every sample taken during request R's work is
classed correct (R's trace), wrong (another trace) or missed (none).

HTTPS shapes (*_tls) are their plaintext twins behind TLS (OpenSSL, a self-signed certificate
made with the openssl command for the run), the client speaking TLS. nginx shapes are a master
and two event-loop workers compressing a file per request (gzip level 9). nginx reads its clock
once per turn of its event loop, and one turn may serve several requests whole, so its own log
cannot time them: each request's stretch is the client's, from its first byte sent to the last
byte of the answer received, in the worker that names itself in the answer (X-Worker: nginx's
$pid); a sample taken while two requests of one worker are open is left out (which one the
worker works on is not known).

http_matrix.py [--quick] [--seconds S] [--json FILE] [--lib LIB] [SHAPE[:INFLIGHT]...]
Prints one line per shape and load: samples, then correct / wrong / missed in per cent.
Exit status 0; the caller (tests/http_matrix.bats, tests/https.bats) asserts on the JSON."""
import bisect
import importlib.util
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
HELPERS = os.path.join(ROOT, "build", "tests")
PYSRV = os.path.join(ROOT, "tests", "http_matrix_servers.py")
NODESRV = os.path.join(ROOT, "tests", "http_matrix_node.js")
JDKSRV = os.path.join(ROOT, "tests", "http_matrix_jdk.java")
H2CLIENT = os.path.join(ROOT, "tests", "http2_client.js")
H2UPGRADE = os.path.join(ROOT, "tests", "http2_upgrade.py")
GRPC = os.path.join(ROOT, "tests", "grpc")  # its node_modules: npm ci (scripts/deps.sh)
GRPCPY = os.path.join(ROOT, "build", "grpcenv", "bin", "python")  # grpcio (scripts/deps.sh)

# shape: (server command without LOG, client mode, work ms per request)
SHAPES = {
    "py_threading": ([PY, PYSRV, "threading"], "keepalive", 5),
    "py_pool_3ms_apart": ([PY, PYSRV, "pool"], "spaced", 5),
    "py_handoff": ([PY, PYSRV, "handoff"], "keepalive", 5),
    "py_asyncio_protocol": ([PY, PYSRV, "asyncio_protocol"], "keepalive", 5),
    "py_asyncio_streams": ([PY, PYSRV, "asyncio_streams"], "keepalive", 5),
    "py_asyncio_pipelined": ([PY, PYSRV, "asyncio_protocol"], "pipelined", 5),
    "py_asyncio_executor": ([PY, PYSRV, "asyncio_executor"], "keepalive", 5),
    "c_epoll_inline": ([os.path.join(HELPERS, "target_http_epoll"), "inline"], "keepalive", 5),
    "c_epoll_batch": ([os.path.join(HELPERS, "target_http_epoll"), "batch"], "keepalive", 5),
    "c_epoll_rr": ([os.path.join(HELPERS, "target_http_epoll"), "rr"], "keepalive", 6),
    "c_epoll_pipelined": ([os.path.join(HELPERS, "target_http_epoll"), "inline"], "pipelined", 5),
    "c_epoll_slow_heads": ([os.path.join(HELPERS, "target_http_epoll"), "inline"], "pieces", 5),
    "node_sync": (["node", NODESRV, "sync"], "keepalive", 5),
    "node_immediate": (["node", NODESRV, "immediate"], "keepalive", 5),
    "node_timeout": (["node", NODESRV, "timeout"], "keepalive", 5),
    "node_slow_heads": (["node", NODESRV, "sync"], "pieces", 5),
    # HTTP/2 (plaintext, prior knowledge): h2 = one connection per request in flight, each with
    # one stream at a time; h2_streams = one connection carrying every request in flight
    "node_h2_sync": (["node", NODESRV, "h2_sync"], "h2", 5),
    "node_h2_immediate": (["node", NODESRV, "h2_immediate"], "h2", 5),
    "node_h2_streams": (["node", NODESRV, "h2_sync"], "h2_streams", 5),
    # every header block over 16 KiB (HEADERS + CONTINUATION): proflink gives the connections up
    "node_h2_huge_headers": (["node", NODESRV, "h2_sync"], "h2_huge", 5),
    # HTTP/2 after `Upgrade: h2c` (one connection per request in flight): the upgraded request
    # (stream 1), then one stream at a time
    "py_h2c_upgrade": ([PY, H2UPGRADE, "server"], "h2c_upgrade", 5),
    # h2 over TLS (ALPN h2, Python's ssl on both ends), one connection per request in flight
    "py_h2_tls": ([PY, H2UPGRADE, "server"], "h2_tls", 5),
    # gRPC (plaintext HTTP/2, unary calls, traceparent in the metadata): grpc = one channel per
    # call in flight, grpc_streams = one channel carrying every call in flight
    "grpc_node": (["node", os.path.join(GRPC, "server.js")], "grpc", 5),
    "grpc_node_streams": (["node", os.path.join(GRPC, "server.js")], "grpc_streams", 5),
    "grpc_python": ([GRPCPY, os.path.join(GRPC, "server.py")], "grpc", 5),
    "gunicorn_gthread": ([PY, PYSRV, "gunicorn_gthread"], "keepalive", 5),
    "gunicorn_sync": ([PY, PYSRV, "gunicorn_sync"], "keepalive", 5),
    "uvicorn": ([PY, PYSRV, "uvicorn"], "keepalive", 5),
    "aiohttp": ([PY, PYSRV, "aiohttp"], "keepalive", 5),
    "jdk_pool": (["java", JDKSRV], "keepalive", 5),
    "jdk_pool_3ms_apart": (["java", JDKSRV], "spaced", 5),
    "py_threading_tls": ([PY, PYSRV, "threading"], "keepalive", 5),
    "py_asyncio_protocol_tls": ([PY, PYSRV, "asyncio_protocol"], "keepalive", 5),
    "py_asyncio_streams_tls": ([PY, PYSRV, "asyncio_streams"], "keepalive", 5),
    "py_asyncio_pipelined_tls": ([PY, PYSRV, "asyncio_protocol"], "pipelined", 5),
    "nginx_gzip": ([PY, PYSRV, "nginx"], "gzip", 0),
    "nginx_gzip_tls": ([PY, PYSRV, "nginx"], "gzip", 0),
    "nginx_gzip_ktls": ([PY, PYSRV, "nginx_ktls"], "gzip", 0),
}
# shapes whose server and client speak TLS
TLS_SHAPES = {"py_h2_tls", "py_threading_tls", "py_asyncio_protocol_tls", "py_asyncio_streams_tls",
              "py_asyncio_pipelined_tls", "nginx_gzip_tls", "nginx_gzip_ktls"}
# proflink-otel's services (tests/python/matrix_apps.py, run by this interpreter: the virtualenv
# build/pyenv): the integration alone publishes (PROFLINK_HTTP=0)
PYAPPS = os.path.join(ROOT, "tests", "python", "matrix_apps.py")
INTEGRATION = {"PROFLINK_HTTP": "0", "OTEL_PYTHON_CONTEXT": "proflink"}
for _name in ("fastapi_async_asyncio", "fastapi_async_uvloop", "fastapi_def_asyncio",
              "fastapi_def_uvloop", "aiohttp", "gevent", "gunicorn_uvicorn", "django_wsgi",
              "django_asgi"):
    SHAPES["otel_" + _name] = ([PY, PYAPPS, _name], "keepalive", 5, INTEGRATION)
# what a shape needs, by prefix: a program on PATH, or a Python module (run with python3 -m); not
# "either": tests/node is a directory, so a module lookup finds "node" where Node.js is absent
NEEDS_PROGRAM = {"node_": "node", "jdk_": "java", "grpc_": "node", "nginx_": "nginx"}
# ... or a file (npm packages installed by scripts/deps.sh)
NEEDS_FILE = {"grpc_": os.path.join(GRPC, "node_modules", "@grpc", "grpc-js", "package.json"),
              "grpc_python": GRPCPY}
NEEDS_MODULE = {"gunicorn_": "gunicorn", "uvicorn": "uvicorn", "aiohttp": "aiohttp",
                "otel_": "proflink_otel", "otel_fastapi": "fastapi", "otel_fastapi_async_uvloop": "uvloop",
                "otel_fastapi_def_uvloop": "uvloop", "otel_gevent": "gevent",
                "otel_gunicorn": "gunicorn", "otel_django": "django"}
LOADS = (1, 4, 16)


def client(port, mode, ms, deadline, errors, tls=False, log=None):
    """One keep-alive connection sending requests until deadline. pipelined: two requests per
    write; spaced: 3 ms between a response and the next request; pieces: each head in three
    writes 2 ms apart; gzip: GET /big with Accept-Encoding: gzip (nginx shapes: each request's
    stretch goes to log). tls: over TLS, the server's certificate not checked (self-signed)."""
    ctx = None
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    try:
        s = None
        while time.monotonic() < deadline:
            if s is None:  # first, or the server closed after its answer (pre-fork sync)
                s = socket.create_connection(("127.0.0.1", port))
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if ctx:
                    s = ctx.wrap_socket(s)
                buf = b""
            n = 2 if mode == "pipelined" else 1
            out = b""
            for _ in range(n):
                tp = "00-%032x-%016x-01" % (random.getrandbits(128) | 1, random.getrandbits(64) | 1)
                if mode == "gzip":
                    out += ("GET /big HTTP/1.1\r\nHost: m\r\nAccept-Encoding: gzip\r\n"
                            "traceparent: %s\r\n\r\n" % tp).encode()
                    continue
                out += ("GET /work?ms=%d HTTP/1.1\r\nHost: m\r\ntraceparent: %s\r\n\r\n"
                        % (ms, tp)).encode()
            if mode == "pieces":  # a slow client: the head in 3 writes, 2 ms apart
                k = len(out) // 3
                for part in (out[:k], out[k:2 * k]):
                    s.sendall(part)
                    time.sleep(0.002)
                out = out[2 * k:]
            sent = time.monotonic_ns()
            s.sendall(out)
            for _ in range(n):
                buf, close = read_response(s, buf)
            if mode == "gzip":
                # the worker takes the request only once its previous call returns, which can be
                # after the client got the previous answer whole: the first ms are left out
                with LOG_LOCK, open(log, "a") as f:
                    f.write("w %s %d %d %s\n" % (WORKER.get(threading.get_ident(), "0"),
                                                 sent + CLIENT_GUARD_NS,
                                                 time.monotonic_ns(), tp.split("-")[1]))
            if close:
                s.close()
                s = None
            if mode == "spaced":
                time.sleep(0.003)
        if s:
            s.close()
    except OSError as e:
        errors.append(str(e))


def h2_clients(port, mode, inflight, seconds, ms, errors):
    """HTTP/2 clients (tests/http2_client.js, tests/grpc/client.js): inflight connections of one
    stream each (h2, grpc), or one connection with inflight streams (h2_streams, grpc_streams)."""
    conns, streams = (1, inflight) if mode.endswith("_streams") else (inflight, 1)
    pad = 20000 if mode == "h2_huge" else 0
    if mode in ("h2c_upgrade", "h2_tls"):
        cmd = [PY, H2UPGRADE, "client-tls" if mode == "h2_tls" else "client", str(port),
               str(conns), str(seconds), str(ms)]
    else:
        cmd = ["node", H2CLIENT if mode.startswith("h2") else os.path.join(GRPC, "client.js")]
        cmd += [str(port), str(conns), str(streams), str(seconds), str(ms), str(pad)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    last = (r.stdout.split("\n")[-2:-1] or [""])[0].split()
    if r.returncode != 0 or len(last) != 2 or last[1] != "0":
        errors.append("h2 client: %s %s" % (r.stdout.strip(), r.stderr.strip()))


LOG_LOCK = threading.Lock()
CLIENT_GUARD_NS = 5000000
WORKER = {}  # client thread -> the worker named by its last answer (X-Worker)


def read_response(s, buf):
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length, close, chunked = 0, False, False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
        elif name.strip().lower() == b"connection":
            close = value.strip().lower() == b"close"
        elif name.strip().lower() == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name.strip().lower() == b"x-worker":
            WORKER[threading.get_ident()] = value.strip().decode()
    if chunked:
        return read_chunks(s, rest), close
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("connection closed")
        rest += chunk
    return rest[length:], close


def read_chunks(s, rest):
    """Skips a chunked body; returns the bytes after it."""
    while True:
        while b"\r\n" not in rest:
            rest += recv_some(s)
        line, _, rest = rest.partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        if size == 0:
            while b"\r\n" not in rest:  # no trailers: the empty line
                rest += recv_some(s)
            return rest.partition(b"\r\n")[2]
        while len(rest) < size + 2:
            rest += recv_some(s)
        rest = rest[size + 2:]


def recv_some(s):
    chunk = s.recv(65536)
    if not chunk:
        raise OSError("connection closed")
    return chunk


def certificate(tmp):
    """A self-signed certificate and its key for 127.0.0.1, made with the openssl command."""
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1"],
                       check=True, capture_output=True)
    return cert, key


def warm_up(port, tls=False):
    """Waits until the server answers (a server that imports its framework after listening:
    its requests would otherwise wait out part of the run), with a request without a trace."""
    deadline = time.monotonic() + 60
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port))
            if tls:
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
                s = ctx.wrap_socket(s)
            s.sendall(b"GET /work?ms=1 HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n")
            read_response(s, b"")
            s.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("port %d: no answer" % port)
            time.sleep(0.1)


def tls_offset(pid, lib_env):
    inspect = os.path.join(ROOT, "build", "proflink-inspect")
    for _ in range(100):
        r = subprocess.run([inspect, "--json", "--no-threads", str(pid)], capture_output=True,
                           text=True)
        try:
            j = json.loads(r.stdout)
            if j.get("tls_offset") is not None:
                return j["tls_offset"]
        except ValueError:
            pass
        time.sleep(0.05)
    raise SystemExit("pid %d: no TLS offset from proflink-inspect: %s" % (pid, r.stderr))


def run_one(shape, inflight, seconds, lib, tmp):
    cmd, mode, ms = SHAPES[shape][:3]
    log = os.path.join(tmp, "%s_%d.log" % (shape, inflight))
    samples = os.path.join(tmp, "%s_%d.samples" % (shape, inflight))
    env = dict(os.environ, LD_PRELOAD=lib, PROFLINK_HTTP="1",
               ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=tmp)
    tls = shape in TLS_SHAPES
    if tls:
        env["HTTP_MATRIX_CERT"], env["HTTP_MATRIX_KEY"] = certificate(tmp)
    env.update(SHAPES[shape][3] if len(SHAPES[shape]) > 3 else {})
    srv = subprocess.Popen(cmd + [log], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        line = srv.stdout.readline()
        if not line.startswith("port "):
            raise SystemExit("%s: no port: %s %s" % (shape, line, srv.stderr.read()))
        port = int(line.split()[1])
        if len(SHAPES[shape]) > 3:
            warm_up(port, tls)
        off = tls_offset(srv.pid, env)
        sampler = subprocess.Popen([os.path.join(HELPERS, "http_sampler"), "1000", str(off),
                                    samples, str(srv.pid)])
        time.sleep(0.3)  # the sampler has read every thread pointer
        errors = []
        if mode.startswith("h2") or mode.startswith("grpc"):
            h2_clients(port, mode, inflight, seconds, ms, errors)
        else:
            deadline = time.monotonic() + seconds
            clients = [threading.Thread(target=client,
                                        args=(port, mode, ms, deadline, errors, tls, log))
                       for _ in range(inflight)]
            for c in clients:
                c.start()
            for c in clients:
                c.join()
        sampler.send_signal(signal.SIGTERM)
        sampler.wait()
    finally:
        if shape.startswith("nginx_"):
            srv.terminate()  # nginx's master stops its workers on SIGTERM, not on SIGKILL
            try:
                srv.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        srv.kill()
        srv.wait()
    return classify(log, samples), errors


def ktls_available():
    """The kernel's TLS module is loaded (nginx's `ssl_conf_command Options KTLS` needs it)."""
    try:
        with open("/proc/sys/net/ipv4/tcp_available_ulp") as f:
            return "tls" in f.read().split()
    except OSError:
        return False


def classify(log, samples):
    """Samples of each logged stretch: correct, wrong, missed; a sample inside two stretches of
    one thread (nginx: two requests open in one worker) is left out (ambiguous)."""
    stretches = {}
    if not os.path.exists(log):
        open(log, "w").close()  # no work logged: every count stays 0, the caller sees it
    with open(log) as f:
        for line in f:
            p = line.split()
            if len(p) == 5 and p[0] == "w":
                stretches.setdefault(int(p[1]), []).append((int(p[2]), int(p[3]), p[4]))
    starts, reach = {}, {}
    for tid, v in stretches.items():
        v.sort()
        starts[tid] = [s for s, _, _ in v]
        # reach[tid][i]: the latest end among stretches before i (overlapping ones: nginx)
        r, m = [], -1
        for _, e, _ in v:
            r.append(m)
            m = max(m, e)
        reach[tid] = r
    res = {"correct": 0, "wrong": 0, "missed": 0, "untraced_work": 0, "ambiguous": 0,
           "requests": sum(len(v) for v in stretches.values())}
    with open(samples) as f:
        for line in f:
            p = line.split()
            if len(p) != 5:
                continue
            t0, t1, tid, got = int(p[0]), int(p[1]), int(p[3]), p[4]
            if tid not in stretches:
                continue
            i = bisect.bisect_right(starts[tid], t0) - 1
            if i < 0:
                continue
            s, e, want = stretches[tid][i]
            if t1 > e:
                continue  # not inside one stretch of work
            if reach[tid][i] >= t0:
                res["ambiguous"] += 1  # inside two stretches (two requests open): unknown
                continue
            if want == "-":
                res["untraced_work"] += 1
            elif got == want:
                res["correct"] += 1
            elif got == "-":
                res["missed"] += 1
            else:
                res["wrong"] += 1
    return res


def pct(r, k):
    n = r["correct"] + r["wrong"] + r["missed"]
    return 100.0 * r[k] / n if n else 0.0


def main():
    args = sys.argv[1:]
    seconds, out, lib = 4.0, None, os.path.join(ROOT, "build", "libproflink.so")
    wanted = []
    while args:
        a = args.pop(0)
        if a == "--seconds":
            seconds = float(args.pop(0))
        elif a == "--json":
            out = args.pop(0)
        elif a == "--lib":
            lib = args.pop(0)
        else:
            wanted.append(a)
    runs = []
    for w in wanted or list(SHAPES):
        shape, _, load = w.partition(":")
        for n in ([int(load)] if load else LOADS):
            runs.append((shape, n))
    absent = [(p, n) for p, n in NEEDS_PROGRAM.items() if shutil.which(n) is None]
    absent += [(p, n) for p, n in NEEDS_MODULE.items() if importlib.util.find_spec(n) is None]
    absent += [(p, n) for p, n in NEEDS_FILE.items() if not os.path.exists(n)]
    for prefix, name in absent:
        kept = [r for r in runs if not r[0].startswith(prefix)]
        if len(kept) < len(runs):  # only shapes that were asked for
            print("%s is not installed: %s* shapes left out" % (name, prefix), flush=True)
        runs = kept
    if any(r[0].endswith("_ktls") for r in runs) and not ktls_available():
        runs = [r for r in runs if not r[0].endswith("_ktls")]
        print("the kernel has no tls module (tcp_available_ulp): *_ktls shapes left out",
              flush=True)
    results = []
    tmp = tempfile.mkdtemp(prefix="http_matrix.")
    try:
        print("%-22s %3s %6s %6s %8s %7s %7s" % ("shape", "in", "reqs", "samples", "correct%",
                                                "wrong%", "missed%"), flush=True)
        for shape, n in runs:
            r, errors = run_one(shape, n, seconds, lib, tmp)
            total = r["correct"] + r["wrong"] + r["missed"]
            print("%-22s %3d %6d %6d %8.1f %7.1f %7.1f%s" % (
                shape, n, r["requests"], total, pct(r, "correct"), pct(r, "wrong"),
                pct(r, "missed"), "  client errors: %s" % errors[:1] if errors else ""),
                flush=True)
            results.append(dict(r, shape=shape, inflight=n, samples=total,
                                correct_pct=pct(r, "correct"), wrong_pct=pct(r, "wrong"),
                                missed_pct=pct(r, "missed"), client_errors=len(errors)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
