"""proflink-otel: the OpenTelemetry Python integration of proflink (see the "Python" section of
proflink's docs/api.md).

- ProflinkRuntimeContext: OTEL_PYTHON_CONTEXT=proflink; publishes the active span on the calling
  thread at every attach and detach (on an event loop's thread, only inside a followed step).
- instrument(): asyncio and uvloop task steps, greenlet switches and work handed to threads
  (thread pools, anyio's workers) publish their own context.
- ProflinkSpanProcessor(inner): sampled local roots reach ``inner`` with the profiler's
  stack-trace ids in elastic.profiler_stack_trace_ids.

Names are imported on first use: the SDK loads ProflinkRuntimeContext while
``opentelemetry.context`` is being imported, before the rest of the package can be.
"""
import importlib

from ._native import native as _native

__version__ = "0.1.0"
# True when the preloaded proflink is found and active
active = _native is not None
library_path = _native.path if _native else None

_WHERE = {
    "ProflinkRuntimeContext": ("context", "ProflinkRuntimeContext"),
    "ProflinkSpanProcessor": ("processor", "ProflinkSpanProcessor"),
    "STACK_TRACE_IDS_ATTRIBUTE": ("processor", "ATTRIBUTE"),
    "instrument": ("hooks", "instrument"),
    "task_factory": ("hooks", "task_factory"),
    "publish_resource": ("resource", "publish_resource"),
}

__all__ = sorted(_WHERE) + ["active", "library_path"]


def __getattr__(name):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'proflink_otel' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{where[0]}", __name__), where[1])
    globals()[name] = value
    return value


def __dir__():
    return __all__
