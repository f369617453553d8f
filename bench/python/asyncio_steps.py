"""make bench: the cost of a task step inside a span on asyncio's loop or uvloop, with
proflink-otel (its runtime context, instrument(): each step publishes its task's span and puts
back the loop's; ProflinkSpanProcessor) or with the SDK alone (argv[1] = hook | sdk, argv[2] =
asyncio | uvloop); the library is preloaded both ways. Prints "step_ns N" (best of 5 runs of 20
tasks x 5000 steps, in process CPU time: a loaded machine changes it far less than wall time)."""
import asyncio
import os
import sys
import time

if sys.argv[1] == "hook":
    os.environ["OTEL_PYTHON_CONTEXT"] = "proflink"
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider  # noqa: E402

provider = TracerProvider()
if sys.argv[1] == "hook":
    import proflink_otel
    assert proflink_otel.instrument()
    provider.add_span_processor(proflink_otel.ProflinkSpanProcessor(SpanProcessor()))
else:
    provider.add_span_processor(SpanProcessor())
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


if sys.argv[2] == "uvloop":
    import uvloop
    uvloop.run(main())
else:
    asyncio.run(main())
