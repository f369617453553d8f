"""instrument(): the context switches the runtime context does not see.

asyncio: a task's coroutine runs step by step, each step inside ``task_context.run`` from an
event-loop callback (a Handle); between steps the loop runs other tasks and waits for I/O.
Context variables follow the task, but proflink's record is per thread, so each callback
publishes the span of the context it runs in and restores the loop thread's own afterwards:
the loop's idle time and other tasks' steps never carry a task's trace. The hook is on
``asyncio.events.Handle._run``, through which every asyncio loop runs every callback, however
the task was made (``loop.create_task``, ``asyncio.Task(...)`` as aiohttp does); only the first
step of an eager task (Python 3.12+) runs inside its creator's callback instead, and is published
through attach and detach alone.
uvloop runs its own handles: there, ``loop.set_task_factory(proflink_otel.task_factory)``
wraps each task's coroutine instead.

Thread pools: ``concurrent.futures`` workers run what they are given in their own context, so
the runtime context publishes what the work attaches; work given as ``ctx.run`` (what
``asyncio.to_thread`` and ``run_in_executor(None, ctx.run, ...)`` submit) switches contexts
without an attach, so the work item publishes that context's span around it.
"""
import asyncio.events
import collections.abc
import concurrent.futures.thread
import contextvars
import functools

from opentelemetry import context as otel_context
from opentelemetry.trace.propagation import _SPAN_KEY

from ._native import native
from ._spans import buf_of, publish, publish_context, set_context, tls

_installed = False


def _context_var():
    """The context variable holding the OTel context (this package's runtime context, or the
    SDK's default one, which keeps it the same way)."""
    otel_context.get_current()  # older API versions (1.20 does) load the runtime context on first use
    return getattr(otel_context._RUNTIME_CONTEXT, "_current_context", None)


def _buf_in(ctx, var, outer):
    """The span buffer of contextvars.Context ``ctx`` (None: no span there)."""
    c = ctx.get(var)
    return buf_of(c.get(_SPAN_KEY), outer) if c else None


def _hook_handles(var):
    run = asyncio.events.Handle._run

    def _run(self):
        t = tls
        prev = t.buf
        publish_context(self._context.get(var))  # the context the callback runs in
        try:
            return run(self)
        finally:
            if t.buf is not prev:
                t.buf = prev
                set_context(prev)

    _run.__wrapped__ = run
    asyncio.events.Handle._run = _run


def _work_fn(item):
    """The callable of a work item: ``fn`` up to Python 3.13, ``task[0]`` from 3.14 on."""
    fn = getattr(item, "fn", None)
    if fn is None:
        task = getattr(item, "task", None)
        fn = task[0] if isinstance(task, tuple) and task else None
    return fn


def _hook_work_items(var):
    run = concurrent.futures.thread._WorkItem.run

    def _run(self, *args, **kwargs):
        fn = _work_fn(self)
        ctx = getattr(fn, "__self__", None)
        if ctx is None and type(fn) is functools.partial:
            ctx = getattr(fn.func, "__self__", None)
        if type(ctx) is not contextvars.Context:
            return run(self, *args, **kwargs)
        prev = tls.buf
        publish(_buf_in(ctx, var, prev))
        try:
            return run(self, *args, **kwargs)
        finally:
            publish(prev)

    _run.__wrapped__ = run
    concurrent.futures.thread._WorkItem.run = _run


def instrument():
    """Publishes the right span at asyncio task steps and ``ctx.run`` thread-pool work (see the
    module's doc). Call it once, anywhere before or after the event loop starts. Returns True
    when the hooks are in place, False without proflink (then nothing is changed)."""
    global _installed
    if native is None:
        return False
    if not _installed:
        var = _context_var()
        if var is None:
            return False
        _hook_handles(var)
        _hook_work_items(var)
        _installed = True
    return True


class _Steps(collections.abc.Coroutine):
    """A task's coroutine, publishing the task's span around each step (task_factory)."""

    __slots__ = ("_coro", "_var")

    def __init__(self, coro, var):
        self._coro = coro
        self._var = var

    def _step(self, method, *args):
        prev = tls.buf
        c = self._var.get(None)  # inside the step: the task's context
        publish(buf_of(c.get(_SPAN_KEY), prev) if c else None)
        try:
            return method(*args)
        finally:
            publish(prev)

    def send(self, value):
        return self._step(self._coro.send, value)

    def throw(self, *args):
        return self._step(self._coro.throw, *args)

    def close(self):
        return self._coro.close()

    def __await__(self):
        return self

    def __next__(self):
        return self.send(None)

    def __iter__(self):
        return self


def task_factory(loop, coro, **kwargs):
    """An event-loop task factory for loops whose callbacks instrument() cannot see (uvloop):
    ``loop.set_task_factory(proflink_otel.task_factory)``."""
    var = _context_var()
    if native is not None and var is not None:
        coro = _Steps(coro, var)
    return asyncio.Task(coro, loop=loop, **kwargs)
