"""The test service of tests/python: the real OpenTelemetry Python SDK with proflink-otel, every
ended span (sampled or not) appended as a JSON line to $EXPORT_FILE, served threaded (Flask on
werkzeug, a thread per request) or on asyncio (aiohttp, or a plain ASGI app on uvicorn), on a
port the kernel picks (its "listening on" line on stderr says which).

  python fixture_app.py flask|aiohttp|uvicorn|aiohttp-uvloop|uvicorn-uvloop|aiohttp-other-loop
  GET /req?id=N&rounds=R&hold=K[&sampled=0]  root span "request N", child "work" doing R rounds
      of (a yield to other requests; 2 ms of CPU); in round K it appends
      "hold N <trace> <span> <root> <tid>" to $MARKER_FILE and stays on CPU until the file
      $RELEASE_DIR/N exists (at most 20 s)
  GET /pool?id=N&how=H  root span "pool N" whose work runs on a thread pool: it holds
      ("hold Na ... <tid>", span = the root) first, then ("hold Nb ...") inside a child span
      "pool-work". H: to_thread (default: asyncio.to_thread), executor / executor_ctx
      (run_in_executor of the function / of ctx.run), anyio (anyio.to_thread.run_sync); Flask:
      ctx (default: executor.submit(ctx.run, ...)), submit (executor.submit of the function)
  GET /burn?id=N&kind=zlib|sha&ms=M  root span "burn N" burning M ms of CPU in 5 ms slices in
      zlib.compress or hashlib.sha256 (native frames a sampler tells apart), a yield between
      slices (on asyncio the other requests' slices run there)
  GET /suspend?id=N  (asyncio services) root span "suspend N", child "waiting" in which it
      appends "hold N ..." as /req does, then awaits /wake?id=N (suspended inside its span)
  GET /flush   provider.force_flush()
  GET /stats   messages_received correlations registrations of proflink_get_stats, or "none"
  GET /eager?id=N  root span "eager N" creating a task whose first step enters a span and waits;
      then "hold N" in the root (PROFLINK_TEST_EAGER=1: the loop's tasks are eager, 3.12+)
PROFLINK_TEST_HOOK: "instrument" (default), "task_factory" (aiohttp: the loop's task factory
instead, as for uvloop), "none" (neither: the tests show what they do).
"""
import asyncio
import concurrent.futures
import contextvars
import hashlib
import json
import os
import sys
import threading
import time
import zlib

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

import proflink_otel

MODE = sys.argv[1]
HOOK = os.environ.get("PROFLINK_TEST_HOOK", "instrument")
if HOOK == "instrument":
    proflink_otel.instrument()
_out = open(os.environ["EXPORT_FILE"], "a")
_out_lock = threading.Lock()


class FileProcessor(SpanProcessor):
    """Exports every ended span, sampled or not (the SDK's own processors drop unsampled ones),
    so that the test sees unsampled roots pass straight through."""

    def on_end(self, s):
        sc = s.context
        line = json.dumps({
            "name": s.name, "traceId": f"{sc.trace_id:032x}", "spanId": f"{sc.span_id:016x}",
            "sampled": bool(sc.trace_flags & 1),
            "parentSpanId": f"{s.parent.span_id:016x}" if s.parent else None,
            "kind": s.kind.name, "attributes": {k: list(v) if isinstance(v, tuple) else v
                                                for k, v in s.attributes.items()}})
        with _out_lock:
            _out.write(line + "\n")
            _out.flush()


class TestSampler(Sampler):
    """Roots started with attribute test.sampled=False are recorded, not sampled; children
    follow their parent."""

    def should_sample(self, parent_context, trace_id, name, kind=None, attributes=None,
                      links=None, trace_state=None):
        parent = trace.get_current_span(parent_context).get_span_context()
        if parent.is_valid:
            sampled = bool(parent.trace_flags & 1)
        else:
            sampled = (attributes or {}).get("test.sampled") is not False
        return SamplingResult(Decision.RECORD_AND_SAMPLE if sampled else Decision.RECORD_ONLY,
                              attributes)

    def get_description(self):
        return "TestSampler"


provider = TracerProvider(
    sampler=TestSampler(),
    resource=Resource.create({"service.name": "python-fixture",
                              "service.instance.id": "fixture-instance-1"}))
provider.add_span_processor(proflink_otel.ProflinkSpanProcessor(FileProcessor()))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("fixture")
pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)


def spin(ms):
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        pass


def hold(id_, root_id):
    """Marks where the work is (the active span, its thread) and stays on CPU until released."""
    sc = trace.get_current_span().get_span_context()
    with open(os.environ["MARKER_FILE"], "a") as f:
        f.write(f"hold {id_} {sc.trace_id:032x} {sc.span_id:016x} {root_id:016x} "
                f"{threading.get_native_id()}\n")
    release = os.path.join(os.environ["RELEASE_DIR"], str(id_))
    end = time.monotonic() + 20
    while not os.path.exists(release) and time.monotonic() < end:
        spin(1)


_DATA = os.urandom(16384)


def burn_native(kind, ms):
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        if kind == "zlib":
            zlib.compress(_DATA, 6)
        else:
            hashlib.sha256(_DATA).digest()


def burn_slices(kind, ms):
    """Yields after each 5 ms slice of burn_native."""
    for _ in range(0, ms, 5):
        burn_native(kind, 5)
        yield


def pool_work(id_, root_id):
    hold(f"{id_}a", root_id)
    with tracer.start_as_current_span("pool-work"):
        hold(f"{id_}b", root_id)
        spin(2)
    return threading.get_native_id()


def stats():
    if not proflink_otel.active:
        return "none"
    from proflink_otel._native import native
    s = native.stats()
    return f"messages_received={s[0]} correlations={s[1]} registrations={s[2]}"


def root_attrs(q):
    return {"test.sampled": q.get("sampled") != "0"}


def listening(port):
    print(f"listening on http://127.0.0.1:{port} (pid {os.getpid()})", file=sys.stderr, flush=True)


def serve_flask():
    from flask import Flask, request
    from werkzeug.serving import make_server

    app = Flask("fixture")

    @app.route("/req")
    def req():
        q = request.args
        id_, rounds, hold_at = q.get("id", "0"), int(q.get("rounds", 5)), int(q.get("hold", 0))
        with tracer.start_as_current_span(f"request {id_}", kind=trace.SpanKind.SERVER,
                                          attributes=root_attrs(q)) as root:
            with tracer.start_as_current_span("work"):
                for r in range(1, rounds + 1):
                    time.sleep(0)
                    spin(2)
                    if r == hold_at:
                        hold(id_, root.get_span_context().span_id)
        return f"done {id_}\n"

    @app.route("/pool")
    def pool_req():
        id_ = request.args.get("id", "0")
        with tracer.start_as_current_span(f"pool {id_}", kind=trace.SpanKind.SERVER) as root:
            args = (id_, root.get_span_context().span_id)
            if request.args.get("how") == "submit":  # the function itself, not ctx.run
                tid = pool.submit(pool_work, *args).result()
            else:
                tid = pool.submit(contextvars.copy_context().run, pool_work, *args).result()
        return f"pool {id_} {tid}\n"

    @app.route("/burn")
    def burn():
        q = request.args
        with tracer.start_as_current_span(f"burn {q['id']}", kind=trace.SpanKind.SERVER):
            for _ in burn_slices(q["kind"], int(q["ms"])):
                time.sleep(0)
        return f"burnt {q['id']}\n"

    @app.route("/flush")
    def flush():
        provider.force_flush()
        return "flushed\n"

    @app.route("/stats")
    def stats_route():
        return stats() + "\n"

    server = make_server("127.0.0.1", 0, app, threaded=True)
    listening(server.server_port)
    server.serve_forever()


async def req_async(q):
    id_, rounds, hold_at = q.get("id", "0"), int(q.get("rounds", 5)), int(q.get("hold", 0))
    with tracer.start_as_current_span(f"request {id_}", kind=trace.SpanKind.SERVER,
                                      attributes=root_attrs(q)) as root:
        with tracer.start_as_current_span("work"):
            for r in range(1, rounds + 1):
                await asyncio.sleep(0)
                spin(2)
                if r == hold_at:
                    hold(id_, root.get_span_context().span_id)
    return f"done {id_}\n"


async def pool_async(q):
    id_ = q.get("id", "0")
    with tracer.start_as_current_span(f"pool {id_}", kind=trace.SpanKind.SERVER) as root:
        args = (id_, root.get_span_context().span_id)
        how = q.get("how", "to_thread")
        loop = asyncio.get_running_loop()
        if how == "to_thread":
            tid = await asyncio.to_thread(pool_work, *args)
        elif how == "executor":  # the function itself, not ctx.run
            tid = await loop.run_in_executor(None, pool_work, *args)
        elif how == "executor_ctx":
            tid = await loop.run_in_executor(None, contextvars.copy_context().run, pool_work, *args)
        elif how == "anyio":  # Starlette's run_in_threadpool, FastAPI's def endpoints
            import anyio.to_thread
            tid = await anyio.to_thread.run_sync(pool_work, *args)
    return f"pool {id_} {tid}\n"


async def burn_async(q):
    with tracer.start_as_current_span(f"burn {q['id']}", kind=trace.SpanKind.SERVER):
        for _ in burn_slices(q["kind"], int(q["ms"])):
            await asyncio.sleep(0)
    return f"burnt {q['id']}\n"


_events = {}


def _event(id_):
    return _events.setdefault(id_, asyncio.Event())


async def suspend_async(q):
    """Enters its spans, says where ("hold"), then waits for /wake inside them: the task stays
    suspended inside its span while the loop runs other tasks or waits for I/O."""
    id_ = q.get("id", "0")
    with tracer.start_as_current_span(f"suspend {id_}", kind=trace.SpanKind.SERVER) as root:
        with tracer.start_as_current_span("waiting"):
            sc = trace.get_current_span().get_span_context()
            with open(os.environ["MARKER_FILE"], "a") as f:
                f.write(f"hold {id_} {sc.trace_id:032x} {sc.span_id:016x} "
                        f"{root.get_span_context().span_id:016x} {threading.get_native_id()}\n")
            await _event(id_).wait()
            spin(2)
    return f"woken {id_}\n"


async def eager_async(q):
    """Root span "eager N"; a child task (eager when the loop's task factory is
    asyncio.eager_task_factory: its first step runs here, in this step) enters a span and
    waits; back in this step, still inside the root only: "hold N" (span = the root)."""
    id_ = q.get("id", "0")
    with tracer.start_as_current_span(f"eager {id_}", kind=trace.SpanKind.SERVER) as root:
        async def child():
            with tracer.start_as_current_span("eager-child"):
                await _event(id_).wait()

        task = asyncio.get_running_loop().create_task(child())
        hold(id_, root.get_span_context().span_id)
        _event(id_).set()
        await task
    return f"eager {id_}\n"


async def wake_async(q):
    _event(q.get("id", "0")).set()
    return "set\n"


async def flush_async(q):
    provider.force_flush()
    return "flushed\n"


async def stats_async(q):
    return stats() + "\n"


# the asyncio services' routes: path -> async (query dict) -> response text
ROUTES = {"/req": req_async, "/pool": pool_async, "/burn": burn_async, "/flush": flush_async,
          "/stats": stats_async, "/suspend": suspend_async, "/wake": wake_async,
          "/eager": eager_async}


async def set_hook():
    if HOOK == "task_factory":
        asyncio.get_running_loop().set_task_factory(proflink_otel.task_factory)
    if os.environ.get("PROFLINK_TEST_EAGER") == "1":  # Python 3.12+
        asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)


def run_on(loop, main):
    if loop == "uvloop":
        import uvloop
        uvloop.run(main())
    elif loop == "other":
        # an asyncio-compatible loop proflink-otel does not know: uvloop's compiled loop in a
        # class of its own (not uvloop.Loop, whose methods instrument() wraps)
        import uvloop.loop

        class OtherLoop(uvloop.loop.Loop, asyncio.AbstractEventLoop):
            pass

        with asyncio.Runner(loop_factory=OtherLoop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())


def serve_aiohttp(loop="asyncio"):
    from aiohttp import web

    def route(fn):
        async def handle(request):
            return web.Response(text=await fn(request.query))
        return handle

    async def main():
        await set_hook()
        app = web.Application()
        app.add_routes([web.get(path, route(fn)) for path, fn in ROUTES.items()])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        listening(site._server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    run_on(loop, main)


def serve_uvicorn(loop="asyncio"):
    """A plain ASGI app on uvicorn, on asyncio's loop or uvloop (the socket is bound and
    listening before uvicorn serves it: connections wait in its backlog)."""
    import socket
    import urllib.parse

    import uvicorn

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        q = dict(urllib.parse.parse_qsl(scope["query_string"].decode()))
        text = await ROUTES[scope["path"]](q)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": text.encode()})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    listening(sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, loop=loop, lifespan="off", log_level="warning",
                                           access_log=False))

    async def main():
        await set_hook()
        await server.serve(sockets=[sock])

    run_on(loop, main)


if __name__ == "__main__":
    {"flask": serve_flask, "aiohttp": serve_aiohttp, "uvicorn": serve_uvicorn,
     "uvicorn-uvloop": lambda: serve_uvicorn("uvloop"),
     "aiohttp-uvloop": lambda: serve_aiohttp("uvloop"),
     "aiohttp-other-loop": lambda: serve_aiohttp("other")}[MODE]()
