"""What both example services share: the SDK set up with proflink-otel, a JSON-lines exporter,
and CPU work for the profiler to sample."""
import json
import os
import sys
import threading
import time
import uuid

# The runtime context is chosen when opentelemetry.context is first imported: set it before.
# (Usually set in the service's environment: OTEL_PYTHON_CONTEXT=proflink.)
os.environ.setdefault("OTEL_PYTHON_CONTEXT", "proflink")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import (SimpleSpanProcessor, SpanExporter,  # noqa: E402
                                            SpanExportResult)

import proflink_otel  # noqa: E402

PORT = int(os.environ.get("PORT", "8080"))
HOST = os.environ.get("HOST", "127.0.0.1")


class JsonLinesExporter(SpanExporter):
    """Prints each ended span as one JSON line (what an OTLP exporter would send)."""

    def __init__(self, path):
        self._f = open(path, "a") if path else sys.stdout
        self._lock = threading.Lock()

    def export(self, spans):
        with self._lock:
            for s in spans:
                self._f.write(json.dumps({
                    "name": s.name,
                    "traceId": f"{s.context.trace_id:032x}",
                    "spanId": f"{s.context.span_id:016x}",
                    "parentSpanId": f"{s.parent.span_id:016x}" if s.parent else None,
                    "kind": s.kind.name,
                    "attributes": {k: list(v) if isinstance(v, tuple) else v
                                   for k, v in s.attributes.items()},
                }) + "\n")
            self._f.flush()
        return SpanExportResult.SUCCESS


def setup_tracing(default_name):
    resource = Resource.create({
        "service.name": os.environ.get("OTEL_SERVICE_NAME", default_name),
        # profiles join the other telemetry of this process by it (proflink publishes it)
        "service.instance.id": str(uuid.uuid4()),
    })
    provider = TracerProvider(resource=resource)
    exporter = JsonLinesExporter(os.environ.get("EXPORT_FILE"))
    provider.add_span_processor(proflink_otel.ProflinkSpanProcessor(SimpleSpanProcessor(exporter)))
    trace.set_tracer_provider(provider)
    return provider, trace.get_tracer(default_name)


def burn_cpu(ms):
    """Busy CPU for ``ms`` milliseconds (what the profiler samples)."""
    end = time.monotonic() + ms / 1000
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x = (x * 31 + i) & 0xFFFFFFFF
    return x


def work_slices(ms, size=5):
    """Burns ``ms`` of CPU in slices of ``size`` ms, yielding after each one (an asyncio handler
    awaits there, as real handlers do)."""
    left = ms
    while left > 0:
        burn_cpu(min(size, left))
        left -= size
        yield


def listening(port):
    print(f"listening on http://{HOST}:{port} (pid {os.getpid()})", file=sys.stderr, flush=True)
