"""Unmodified Python HTTP servers of several shapes for the HTTP matrix (tests/http_matrix.py).
They know nothing of proflink. Each request `GET /work?ms=N` burns N ms of CPU and the server
logs that work itself, from its own parsing of the request: one line per stretch of work,
"w <native tid> <start ns> <end ns> <trace id or ->" (CLOCK_MONOTONIC), to LOG.

http_matrix_servers.py SHAPE LOG  — prints "port N" once listening on 127.0.0.1 (a port the
kernel picked). SHAPE: threading | pool | asyncio_protocol | asyncio_streams |
asyncio_executor | handoff, or a
Debian-packaged server on that socket: gunicorn_gthread | gunicorn_sync (pre-fork, 2 workers) |
uvicorn | aiohttp; or nginx | nginx_ktls: a master and two workers compressing /big (gzip
level 9) per request, each answer naming its worker (X-Worker; http_matrix.py times them).
With HTTP_MATRIX_CERT and HTTP_MATRIX_KEY (a certificate and its key) the server speaks TLS:
ThreadingHTTPServer's listening socket wrapped by an ssl.SSLContext, asyncio's `ssl=`, nginx's
`listen ... ssl` (nginx_ktls: with kernel TLS, `ssl_conf_command Options KTLS`)."""
import asyncio
import base64
import os
import random
import ssl
import queue
import selectors
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = None
LOG_LOCK = threading.Lock()


def trace_of(head):
    """The trace id of a head's traceparent header, parsed by the server itself."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"traceparent":
            parts = value.strip().split(b"-")
            if len(parts) == 4 and len(parts[1]) == 32:
                return parts[1].decode()
    return "-"


def ms_of(head):
    target = head.split(b" ", 2)[1]
    _, _, q = target.partition(b"?ms=")
    return int(q) if q else 0


def work(ms, trace):
    """Burns ms of CPU time, logs the stretch."""
    start = time.monotonic_ns()
    end_cpu = time.thread_time() + ms / 1000
    x = 0
    while time.thread_time() < end_cpu:
        x += 1
    end = time.monotonic_ns()
    with LOG_LOCK:
        LOG.write("w %d %d %d %s\n" % (threading.get_native_id(), start, end, trace))
        LOG.flush()


def response(body=b"ok"):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def tls_context():
    """The server's TLS context when the matrix asks for TLS, else None."""
    cert = os.environ.get("HTTP_MATRIX_CERT")
    if not cert:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, os.environ["HTTP_MATRIX_KEY"])
    return ctx


def listener():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    return s


def announce(port):
    print("port %d" % port, flush=True)


def read_head(conn, buf):
    """Reads up to and including a whole head; returns (head, rest) or (None, b"")."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def serve_threading():
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            trace = "-"
            tp = self.headers.get("traceparent", "")
            parts = tp.strip().split("-")
            if len(parts) == 4 and len(parts[1]) == 32:
                trace = parts[1]
            q = self.path.partition("?ms=")[2]
            work(int(q) if q else 0, trace)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = tls_context()
    if ctx:
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    announce(srv.server_address[1])
    srv.serve_forever()


def serve_pool():
    """gthread-like: the main thread polls idle keep-alive connections; a pool thread reads the
    request of a readable one itself, works and answers, then hands the connection back."""
    ls = listener()
    announce(ls.getsockname()[1])
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ)
    back = queue.Queue()
    wake_r, wake_w = socket.socketpair()
    sel.register(wake_r, selectors.EVENT_READ)
    pool = ThreadPoolExecutor(8)

    def handle(conn):
        head, _ = read_head(conn, b"")
        if head is None:
            conn.close()
            return
        work(ms_of(head), trace_of(head))
        conn.sendall(response())
        back.put(conn)
        wake_w.send(b"x")

    while True:
        for key, _ in sel.select():
            if key.fileobj is ls:
                conn, _ = ls.accept()
                sel.register(conn, selectors.EVENT_READ)
            elif key.fileobj is wake_r:
                wake_r.recv(4096)
                while not back.empty():
                    sel.register(back.get(), selectors.EVENT_READ)
            else:
                sel.unregister(key.fileobj)
                pool.submit(handle, key.fileobj)


def serve_handoff():
    """A reader thread reads every request head and hands it to workers through a queue."""
    ls = listener()
    announce(ls.getsockname()[1])
    jobs = queue.Queue()

    def worker():
        while True:
            conn, head = jobs.get()
            work(ms_of(head), trace_of(head))
            # /big is a large answer; a HEAD request gets the answer's head only (RFC 9110)
            answer = response(b"x" * 1000000 if head.split(b" ", 2)[1].startswith(b"/big")
                              else b"ok")
            if head.startswith(b"HEAD "):
                answer = answer.partition(b"\r\n\r\n")[0] + b"\r\n\r\n"
            conn.sendall(answer)

    for _ in range(4):
        threading.Thread(target=worker, daemon=True).start()
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ)
    bufs = {}
    while True:
        for key, _ in sel.select():
            if key.fileobj is ls:
                conn, _ = ls.accept()
                bufs[conn] = b""
                sel.register(conn, selectors.EVENT_READ)
                continue
            conn = key.fileobj
            chunk = conn.recv(65536)
            if not chunk:
                sel.unregister(conn)
                del bufs[conn]
                conn.close()
                continue
            bufs[conn] += chunk
            while b"\r\n\r\n" in bufs[conn]:
                head, _, bufs[conn] = bufs[conn].partition(b"\r\n\r\n")
                jobs.put((conn, head))


def serve_asyncio_protocol():
    class Proto(asyncio.Protocol):
        def connection_made(self, transport):
            self.t = transport
            self.buf = b""

        def data_received(self, data):
            self.buf += data
            while b"\r\n\r\n" in self.buf:
                head, _, self.buf = self.buf.partition(b"\r\n\r\n")
                work(ms_of(head), trace_of(head))
                self.t.write(response())

    async def main():
        srv = await asyncio.get_running_loop().create_server(Proto, "127.0.0.1", 0,
                                                             ssl=tls_context())
        announce(srv.sockets[0].getsockname()[1])
        await srv.serve_forever()

    asyncio.run(main())


def serve_asyncio_executor():
    """asyncio streams whose handler runs the work in the default thread pool (run_in_executor,
    what FastAPI does for a plain `def` endpoint); the loop writes the answer."""
    async def handle(reader, writer):
        loop = asyncio.get_running_loop()
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()
                return
            await loop.run_in_executor(None, work, ms_of(head), trace_of(head))
            writer.write(response())
            await writer.drain()

    async def main():
        srv = await asyncio.start_server(handle, "127.0.0.1", 0)
        announce(srv.sockets[0].getsockname()[1])
        await srv.serve_forever()

    asyncio.run(main())


def serve_asyncio_streams():
    async def handle(reader, writer):
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()
                return
            work(ms_of(head), trace_of(head))
            writer.write(response())
            await writer.drain()

    async def main():
        srv = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls_context())
        announce(srv.sockets[0].getsockname()[1])
        await srv.serve_forever()

    asyncio.run(main())


def trace_of_value(tp):
    parts = (tp or "").strip().split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else "-"


def ms_of_query(q):
    _, _, v = (q or "").partition("ms=")
    return int(v) if v else 0


def log_open():
    global LOG
    if LOG is None:
        LOG = open(os.environ["HTTP_MATRIX_LOG"], "a")


def wsgi_app(environ, start_response):
    """For gunicorn: the work in the WSGI call."""
    log_open()
    work(ms_of_query(environ.get("QUERY_STRING")), trace_of_value(environ.get("HTTP_TRACEPARENT")))
    start_response("200 OK", [("Content-Length", "2")])
    return [b"ok"]


async def asgi_app(scope, receive, send):
    """For uvicorn: the work in the ASGI coroutine."""
    if scope["type"] != "http":
        return
    log_open()
    headers = dict(scope["headers"])
    tp = headers.get(b"traceparent", b"").decode()
    work(ms_of_query(scope["query_string"].decode()), trace_of_value(tp))
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def exec_on_socket(argv_for_fd):
    """Runs a packaged server (same process, exec) on a socket listening on a kernel-picked
    port, handed over by descriptor number."""
    ls = listener()
    ls.set_inheritable(True)
    announce(ls.getsockname()[1])
    os.environ["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__))
    argv = argv_for_fd(ls.fileno())
    os.execvp(argv[0], argv)


def serve_aiohttp():
    from aiohttp import web

    async def handle(request):
        work(ms_of_query(request.query_string), trace_of_value(request.headers.get("traceparent")))
        return web.Response(body=b"ok")

    app = web.Application()
    app.router.add_get("/work", handle)
    ls = listener()
    announce(ls.getsockname()[1])
    web.run_app(app, sock=ls, print=None, access_log=None)


def serve_nginx(ktls):
    """nginx (its own binary, exec'ed) on a listening socket made here, handed over the way
    nginx takes sockets on a binary upgrade (NGINX="fd;"): the kernel picks the port."""
    log = os.environ["HTTP_MATRIX_LOG"]
    d = log + ".d"
    os.makedirs(os.path.join(d, "www"), exist_ok=True)
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    # 1 MB of text that compresses slowly (random bytes in base64): gzip level 9 keeps the
    # worker 20-40 ms on the CPU per request
    rnd = random.Random(1)
    with open(os.path.join(d, "www", "big"), "wb") as f:
        f.write(base64.encodebytes(bytes(rnd.getrandbits(8) for _ in range(384 << 10))))
    ls = listener()
    ls.set_inheritable(True)
    port = ls.getsockname()[1]
    cert = os.environ.get("HTTP_MATRIX_CERT")
    tls = ""
    if cert:
        tls = "ssl_certificate %s; ssl_certificate_key %s;" % (cert, os.environ["HTTP_MATRIX_KEY"])
        if ktls:
            tls += " ssl_conf_command Options KTLS;"
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""user root;
worker_processes 2;
daemon off;
master_process on;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %(d)s/tmp/body; proxy_temp_path %(d)s/tmp/proxy;
    fastcgi_temp_path %(d)s/tmp/fcgi; uwsgi_temp_path %(d)s/tmp/uwsgi; scgi_temp_path %(d)s/tmp/scgi;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:%(port)d%(ssl)s;
        %(tls)s
        root %(d)s/www;
        sendfile off;
        gzip on; gzip_comp_level 9; gzip_types *; gzip_min_length 0;
        add_header X-Worker $pid;
    }
}
""" % {"d": d, "port": port, "ssl": " ssl" if cert else "", "tls": tls})
    announce(port)
    os.environ["NGINX"] = "%d;" % ls.fileno()
    os.execvp("nginx", ["nginx", "-e", os.path.join(d, "error.log"), "-p", d, "-c", conf])


def main():
    global LOG
    os.environ["HTTP_MATRIX_LOG"] = sys.argv[2]
    py = sys.executable
    gunicorn = lambda kind, extra: lambda fd: [
        py, "-m", "gunicorn", "-k", kind, "-b", "fd://%d" % fd, "--log-level", "warning"] + extra + [
        "http_matrix_servers:wsgi_app"]
    packaged = {
        "gunicorn_gthread": gunicorn("gthread", ["-w", "1", "--threads", "8"]),
        "gunicorn_sync": gunicorn("sync", ["-w", "2"]),
        "uvicorn": lambda fd: [py, "-m", "uvicorn", "--fd", str(fd), "--log-level", "warning",
                               "http_matrix_servers:asgi_app"],
    }
    if sys.argv[1] in packaged:
        exec_on_socket(packaged[sys.argv[1]])
    if sys.argv[1] in ("nginx", "nginx_ktls"):
        serve_nginx(sys.argv[1] == "nginx_ktls")
    LOG = open(sys.argv[2], "a")
    {"threading": serve_threading, "pool": serve_pool, "handoff": serve_handoff,
     "asyncio_protocol": serve_asyncio_protocol, "asyncio_streams": serve_asyncio_streams,
     "asyncio_executor": serve_asyncio_executor,
     "aiohttp": serve_aiohttp}[sys.argv[1]]()


if __name__ == "__main__":
    main()
