"""Python services as deployed, for the attribution matrix of proflink-otel (tests/http_matrix.py
runs them; tests/python/test_matrix.py asserts on it): each traced by OpenTelemetry's own
instrumentation of its framework (server span from the request's traceparent), with the SDK
set up the docs' way (OTEL_PYTHON_CONTEXT=proflink, proflink_otel.instrument(),
ProflinkSpanProcessor around a batch processor). `GET /work?ms=N` burns N ms of CPU in 1 ms
chunks with a switch between them (await, a greenlet yield, or the thread's time slice); each
chunk logs itself with the trace id the service parsed from the request's traceparent (ground
truth that does not go through OpenTelemetry), as tests/http_matrix_servers.py's work() does.
uvicorn imports the application inside its running loop: there instrument() is called after
the loop started (aiohttp's service calls it before).

  matrix_apps.py SHAPE LOG   prints "port N" once listening on 127.0.0.1 (kernel-picked port)

SHAPE: fastapi_async_asyncio | fastapi_async_uvloop (uvicorn, `async def` endpoint) |
fastapi_def_asyncio | fastapi_def_uvloop (uvicorn, `def` endpoint: anyio's worker threads) |
aiohttp (aiohttp's server on asyncio) | gevent (gunicorn's gevent worker, WSGI) |
gunicorn_uvicorn (gunicorn, 2 uvicorn workers on uvloop, forked after the app's SDK set-up) |
django_wsgi (Django under gunicorn's gthread worker) | django_asgi (Django's ASGI app on uvicorn,
uvloop)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/: http_matrix_servers' work() and logging

import http_matrix_servers as hms  # noqa: E402

CHUNK_MS = 1


def setup_sdk():
    """The docs' recipe: instrument() and the processor around the user's export processor."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    import proflink_otel

    class Drop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    proflink_otel.instrument()
    provider = TracerProvider()
    provider.add_span_processor(proflink_otel.ProflinkSpanProcessor(BatchSpanProcessor(Drop())))
    trace.set_tracer_provider(provider)
    return provider


def chunks(ms, trace_id):
    """N chunks of work, each logged; the caller switches between them."""
    hms.log_open()
    for _ in range(max(1, ms // CHUNK_MS)):
        hms.work(CHUNK_MS, trace_id)
        yield


def fastapi_app(endpoint):
    import asyncio

    from fastapi import FastAPI, Request
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    setup_sdk()
    app = FastAPI()
    if endpoint == "async":
        @app.get("/work")
        async def work(request: Request, ms: int = 5):
            for _ in chunks(ms, hms.trace_of_value(request.headers.get("traceparent"))):
                await asyncio.sleep(0)
            return "ok"
    else:
        @app.get("/work")
        def work(request: Request, ms: int = 5):
            for _ in chunks(ms, hms.trace_of_value(request.headers.get("traceparent"))):
                pass
            return "ok"
    FastAPIInstrumentor.instrument_app(app)
    return app


def wsgi_gevent_app():
    import gevent
    from opentelemetry.instrumentation.wsgi import OpenTelemetryMiddleware

    setup_sdk()

    def app(environ, start_response):
        tp = hms.trace_of_value(environ.get("HTTP_TRACEPARENT"))
        for _ in chunks(hms.ms_of_query(environ.get("QUERY_STRING")), tp):
            gevent.sleep(0)
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    return OpenTelemetryMiddleware(app)


def django_setup():
    import django
    from django.conf import settings
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    settings.configure(DEBUG=False, ALLOWED_HOSTS=["*"], ROOT_URLCONF=__name__, MIDDLEWARE=[],
                       SECRET_KEY="matrix", INSTALLED_APPS=[])
    setup_sdk()
    DjangoInstrumentor().instrument()
    django.setup()


def django_work(request):
    from django.http import HttpResponse

    tp = hms.trace_of_value(request.headers.get("traceparent"))
    for _ in chunks(hms.ms_of_query(request.META.get("QUERY_STRING")), tp):
        pass
    return HttpResponse(b"ok")


def _urls():
    from django.urls import path
    return [path("work", django_work)]


# ASGI/WSGI applications by the name the servers import (this module, as matrix_apps:NAME)
def __getattr__(name):
    if name == "urlpatterns":
        return _urls()
    made = {
        "fastapi_async": lambda: fastapi_app("async"),
        "fastapi_def": lambda: fastapi_app("def"),
        "wsgi_gevent": wsgi_gevent_app,
        "django_wsgi": lambda: (django_setup(), __import__("django.core.wsgi").core.wsgi
                                .get_wsgi_application())[1],
        "django_asgi": lambda: (django_setup(), __import__("django.core.asgi").core.asgi
                                .get_asgi_application())[1],
    }.get(name)
    if made is None:
        raise AttributeError(name)
    value = made()
    globals()[name] = value
    return value


def serve_aiohttp():
    from aiohttp import web
    from opentelemetry import trace
    from opentelemetry.propagate import extract

    import asyncio

    setup_sdk()
    tracer = trace.get_tracer("matrix")

    async def handle(request):
        # aiohttp's server has no OpenTelemetry instrumentation of its own: the span the way
        # such instrumentations make it (server span from the extracted context)
        with tracer.start_as_current_span("GET /work", context=extract(request.headers),
                                          kind=trace.SpanKind.SERVER):
            tp = hms.trace_of_value(request.headers.get("traceparent"))
            for _ in chunks(hms.ms_of_query(request.query_string), tp):
                await asyncio.sleep(0)
        return web.Response(body=b"ok")

    app = web.Application()
    app.router.add_get("/work", handle)
    ls = hms.listener()
    hms.announce(ls.getsockname()[1])
    web.run_app(app, sock=ls, print=None, access_log=None)


def main():
    shape = sys.argv[1]
    os.environ["HTTP_MATRIX_LOG"] = sys.argv[2]
    os.environ["PYTHONPATH"] = HERE + os.pathsep + os.path.dirname(HERE)
    py = sys.executable
    uvicorn = lambda loop, app: lambda fd: [
        py, "-m", "uvicorn", "--fd", str(fd), "--loop", loop, "--log-level", "warning",
        "--no-access-log", "matrix_apps:" + app]
    gunicorn = lambda kind, extra, app: lambda fd: [
        py, "-m", "gunicorn", "-k", kind, "-b", "fd://%d" % fd, "--log-level", "warning"] + extra + [
        "matrix_apps:" + app]
    servers = {
        "fastapi_async_asyncio": uvicorn("asyncio", "fastapi_async"),
        "fastapi_async_uvloop": uvicorn("uvloop", "fastapi_async"),
        "fastapi_def_asyncio": uvicorn("asyncio", "fastapi_def"),
        "fastapi_def_uvloop": uvicorn("uvloop", "fastapi_def"),
        "gevent": gunicorn("gevent", ["-w", "1", "--worker-connections", "100"], "wsgi_gevent"),
        "gunicorn_uvicorn": gunicorn("uvicorn.workers.UvicornWorker", ["-w", "2", "--preload"],
                                     "fastapi_async"),
        "django_wsgi": gunicorn("gthread", ["-w", "1", "--threads", "8"], "django_wsgi"),
        "django_asgi": uvicorn("uvloop", "django_asgi"),
    }
    if shape == "aiohttp":
        hms.LOG = open(sys.argv[2], "a")
        serve_aiohttp()
        return
    # the server runs in this process (exec) on a socket listening on a kernel-picked port,
    # handed over by descriptor number
    ls = hms.listener()
    ls.set_inheritable(True)
    hms.announce(ls.getsockname()[1])
    argv = servers[shape](ls.fileno())
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
