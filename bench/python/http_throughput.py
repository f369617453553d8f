"""make bench: HTTP requests with 2 ms of CPU each inside a root and a child span, served
threaded (the standard library's ThreadingHTTPServer, a thread per connection), on asyncio
(aiohttp) or by FastAPI on uvicorn and uvloop (`async def` or `def` endpoint), with the SDK alone or with proflink-otel (its runtime context, instrument(),
ProflinkSpanProcessor) under the library. Spans go to an exporter that drops them.

  python http_throughput.py server threaded|asyncio|fastapi_async|fastapi_def sdk|proflink  ("listening PORT" on stdout)
  python http_throughput.py client PORT SECONDS   ("requests_per_s N", "server_cpu_us_per_request
                                                   N" from the server's CPU clock; 4 keep-alive
                                                   connections)
"""
import asyncio
import os
import sys
import time

CPU_MS = 2
CONNECTIONS = 4


def spin(ms):
    """``ms`` of this thread's CPU time (not wall time: the same work however loaded the
    machine is)."""
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


def cpu_ns():
    """The server's CPU time so far, every thread's (ended ones too), in ns."""
    return str(time.process_time_ns()).encode()


def setup(variant):
    if variant == "proflink":
        os.environ["OTEL_PYTHON_CONTEXT"] = "proflink"
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    processor = SimpleSpanProcessor(Drop())
    if variant == "proflink":
        import proflink_otel
        assert proflink_otel.active, "run under the library (LD_PRELOAD)"
        proflink_otel.instrument()
        processor = proflink_otel.ProflinkSpanProcessor(processor)
    provider.add_span_processor(processor)
    global PROVIDER
    PROVIDER = provider
    return provider.get_tracer("bench")


def serve_threaded(tracer):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes

        def do_GET(self):
            if self.path == "/cpu":
                body = cpu_ns()
            else:
                with tracer.start_as_current_span("GET /"):
                    with tracer.start_as_current_span("work"):
                        spin(CPU_MS)
                body = b"ok\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_port}", flush=True)
    server.serve_forever()


def serve_asyncio(tracer):
    from aiohttp import web

    async def handle(request):
        with tracer.start_as_current_span("GET /"):
            await asyncio.sleep(0)
            with tracer.start_as_current_span("work"):
                spin(CPU_MS)
        return web.Response(text="ok\n")

    async def main():
        app = web.Application()
        app.router.add_get("/", handle)
        app.router.add_get("/cpu", lambda request: asyncio.sleep(0, web.Response(body=cpu_ns())))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(f"listening {site._server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_fastapi(tracer, endpoint):
    """FastAPI on uvicorn and uvloop, traced by OpenTelemetry's FastAPI instrumentation (the
    server span), the work in a child span: an `async def` endpoint (an await first) or a
    `def` one (anyio's worker threads)."""
    import socket

    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import Response
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    app = FastAPI()
    if endpoint == "async":
        @app.get("/")
        async def root():
            await asyncio.sleep(0)
            with tracer.start_as_current_span("work"):
                spin(CPU_MS)
            return Response(b"ok\n")
    else:
        @app.get("/")
        def root():
            with tracer.start_as_current_span("work"):
                spin(CPU_MS)
            return Response(b"ok\n")

    @app.get("/cpu")
    async def cpu():
        return Response(cpu_ns())

    FastAPIInstrumentor.instrument_app(app, tracer_provider=PROVIDER, excluded_urls="cpu")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"listening {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, loop="uvloop", lifespan="off", log_level="warning",
                                  access_log=False)).run(sockets=[sock])


async def client(port, seconds):
    count = 0
    end = time.perf_counter() + seconds
    request = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()

    async def conn():
        nonlocal count
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.perf_counter() < end:
            writer.write(request)
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            count += 1
        writer.close()

    async def server_cpu():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /cpu HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = await reader.read()
        writer.close()
        return int(data.split(b"\r\n\r\n", 1)[1])

    cpu0 = await server_cpu()
    t = time.perf_counter()
    await asyncio.gather(*(conn() for _ in range(CONNECTIONS)))
    print(f"requests_per_s {count / (time.perf_counter() - t):.0f}")
    print(f"server_cpu_us_per_request {(await server_cpu() - cpu0) / count / 1000:.0f}")


if __name__ == "__main__":
    if sys.argv[1] == "client":
        asyncio.run(client(int(sys.argv[2]), float(sys.argv[3])))
    else:
        tracer = setup(sys.argv[3])
        {"threaded": serve_threaded, "asyncio": serve_asyncio,
         "fastapi_async": lambda t: serve_fastapi(t, "async"),
         "fastapi_def": lambda t: serve_fastapi(t, "def")}[sys.argv[2]](tracer)
