"""make bench: the cost of an asyncio task step inside a span, with proflink-otel's hook
(instrument(): each step publishes its task's span and restores the loop's) or without it
(argv[1] = hook | plain); the library is preloaded both ways and the runtime context is
proflink-otel's. Prints "step_ns N" (best of 5 runs of 20 tasks x 5000 steps, in process CPU
time: a loaded machine changes it far less than wall time)."""
import asyncio
import os
import sys
import time

os.environ["OTEL_PYTHON_CONTEXT"] = "proflink"
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider  # noqa: E402

import proflink_otel  # noqa: E402

if sys.argv[1] == "hook":
    assert proflink_otel.instrument()
provider = TracerProvider()
provider.add_span_processor(proflink_otel.ProflinkSpanProcessor(SpanProcessor()))
tracer = provider.get_tracer("bench")
TASKS, STEPS = 20, 5000


async def task():
    with tracer.start_as_current_span("task"):
        for _ in range(STEPS):
            await asyncio.sleep(0)


async def main():
    best = None
    for _ in range(5):
        t = time.process_time()
        await asyncio.gather(*(task() for _ in range(TASKS)))
        dt = (time.process_time() - t) / (TASKS * STEPS)
        best = dt if best is None else min(best, dt)
    print(f"step_ns {best * 1e9:.0f}")


asyncio.run(main())
