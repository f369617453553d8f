"""make bench: one attach + detach of a context holding a span, through proflink-otel's runtime
context (publishing to proflink each way) and through the SDK's default one, in this process
under the library. Prints "sdk_ns N" and "proflink_ns N" (best of 5 runs). Times are the
process's CPU time (every thread's: the pull thread's work counts), not wall time: a loaded
machine then changes them far less."""
import os
import time
import timeit

os.environ["OTEL_PYTHON_CONTEXT"] = "proflink"
from opentelemetry import trace  # noqa: E402
from opentelemetry.context.contextvars_context import ContextVarsRuntimeContext  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

import proflink_otel  # noqa: E402

assert proflink_otel.active, "run under the library (LD_PRELOAD)"
provider = TracerProvider()
provider.add_span_processor(proflink_otel.ProflinkSpanProcessor(
    __import__("opentelemetry.sdk.trace", fromlist=["SpanProcessor"]).SpanProcessor()))
span = provider.get_tracer("bench").start_span("root")
ctx = trace.set_span_in_context(span)
N = 200000


def per_pair(rc):
    rc.detach(rc.attach(ctx))  # the first call binds the fast path
    attach, detach = rc.attach, rc.detach

    def loop():
        for _ in range(N):
            detach(attach(ctx))

    return min(timeit.repeat(loop, number=1, repeat=5, timer=time.process_time)) / N * 1e9


print(f"sdk_ns {per_pair(ContextVarsRuntimeContext()):.0f}")
print(f"proflink_ns {per_pair(proflink_otel.ProflinkRuntimeContext()):.0f}")

# A whole request's spans, entered and left (a root and a child span): the SDK alone (its
# runtime context, its processor) against the integration (this runtime context,
# ProflinkSpanProcessor around the same processor; no profiler: roots are handed back at once).
from opentelemetry import context as otel_context  # noqa: E402
from opentelemetry.sdk.trace import SpanProcessor  # noqa: E402


def per_request(runtime, processor):
    p = TracerProvider()
    p.add_span_processor(processor)
    tracer = p.get_tracer("bench")
    otel_context._RUNTIME_CONTEXT = runtime
    n = N // 20

    def loop():
        for _ in range(n):
            with tracer.start_as_current_span("root"):
                with tracer.start_as_current_span("child"):
                    pass

    loop()
    return min(timeit.repeat(loop, number=1, repeat=5, timer=time.process_time)) / n * 1e9


sdk = per_request(ContextVarsRuntimeContext(), SpanProcessor())
pl = per_request(proflink_otel.ProflinkRuntimeContext(),
                 proflink_otel.ProflinkSpanProcessor(SpanProcessor()))
print(f"sdk_request_ns {sdk:.0f}")
print(f"proflink_request_ns {pl:.0f}")
