"""A threaded Flask service traced with the OpenTelemetry Python SDK and proflink-otel: each
request runs on its own thread. GET /work?ms=N is a root (server) span with two child spans,
parse and compute, that burn N ms of CPU in 5 ms slices. Ended spans are printed as JSON lines
on stdout (or appended to $EXPORT_FILE); under proflink, root spans carry the profiler's
stack-trace ids in elastic.profiler_stack_trace_ids.

    python flask_app.py        # then: curl 'http://127.0.0.1:8080/work?ms=50'
"""
import signal
import sys

from common import HOST, PORT, burn_cpu, listening, setup_tracing, work_slices
from flask import Flask, jsonify, request
from opentelemetry import trace
from werkzeug.serving import make_server

provider, tracer = setup_tracing("proflink-python-flask-example")
app = Flask(__name__)


@app.route("/<path:path>")
def handle(path):
    with tracer.start_as_current_span(f"GET /{path}", kind=trace.SpanKind.SERVER) as span:
        if path != "work":
            span.set_attribute("http.response.status_code", 404)
            return "not found\n", 404
        with tracer.start_as_current_span("parse"):
            ms = max(0, min(5000, int(request.args.get("ms", "20"))))
            burn_cpu(1)
        with tracer.start_as_current_span("compute") as compute:
            slices = sum(1 for _ in work_slices(ms))
            compute.set_attribute("work.ms", ms)
        span.set_attribute("http.response.status_code", 200)
        return jsonify(ms=ms, slices=slices)


def main():
    server = make_server(HOST, PORT, app, threaded=True)

    def stop(*_):
        # delivers the root spans still held for the profiler's delay, then exits
        provider.shutdown()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    listening(server.server_port)
    server.serve_forever()


if __name__ == "__main__":
    main()
