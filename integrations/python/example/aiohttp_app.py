"""An asyncio (aiohttp) service traced with the OpenTelemetry Python SDK and proflink-otel:
requests interleave on one thread. GET /work?ms=N is a root (server) span with two child spans,
parse and compute, that burn N ms of CPU in 5 ms slices with an await between slices (other
requests run there). Ended spans are printed as JSON lines on stdout (or appended to
$EXPORT_FILE); under proflink, root spans carry the profiler's stack-trace ids in
elastic.profiler_stack_trace_ids.

    python aiohttp_app.py      # then: curl 'http://127.0.0.1:8080/work?ms=50'
"""
import asyncio
import signal

from aiohttp import web
from common import HOST, PORT, burn_cpu, listening, setup_tracing, work_slices
from opentelemetry import trace

import proflink_otel

# every asyncio task step publishes its own task's span (one line; a no-op without proflink)
proflink_otel.instrument()
provider, tracer = setup_tracing("proflink-python-aiohttp-example")


async def handle(request):
    path = request.path
    with tracer.start_as_current_span(f"GET {path}", kind=trace.SpanKind.SERVER) as span:
        if path != "/work":
            span.set_attribute("http.response.status_code", 404)
            return web.Response(status=404, text="not found\n")
        with tracer.start_as_current_span("parse"):
            ms = max(0, min(5000, int(request.query.get("ms", "20"))))
            burn_cpu(1)
            await asyncio.sleep(0)
        with tracer.start_as_current_span("compute") as compute:
            slices = 0
            for _ in work_slices(ms):
                slices += 1
                await asyncio.sleep(0)  # other requests run between the slices
            compute.set_attribute("work.ms", ms)
        span.set_attribute("http.response.status_code", 200)
        return web.json_response({"ms": ms, "slices": slices})


async def main():
    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, HOST, PORT)
    await site.start()
    listening(site._server.sockets[0].getsockname()[1])
    stopped = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stopped.set)
    await stopped.wait()
    await runner.cleanup()
    # delivers the root spans still held for the profiler's delay
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
