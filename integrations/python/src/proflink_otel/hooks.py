"""instrument(): the context switches the runtime context does not see.

proflink's record is per thread, context variables are per task, greenlet or ``ctx.run``: where
one thread switches between contexts without an attach, what is published must switch too.

Event loops: a task's coroutine runs step by step, each step a loop callback run in the task's
context; between steps the loop runs other tasks and waits for I/O. Each callback the hooks
follow publishes the span of the context it runs in and puts back the loop thread's own after
it, so the loop's idle time and other tasks' steps never carry a task's trace; an attach inside
such a callback publishes (``tls.step`` says the thread is followed). Anywhere else on a thread
running an event loop an attach publishes nothing (``_spans.unfollowed``): the span would stay
published once the step suspends, during other tasks' steps. Followed:

- asyncio's own loops: ``asyncio.events.Handle._run``, through which they run every callback,
  however the task was made (``loop.create_task``, ``asyncio.Task(...)`` as aiohttp does);
- uvloop: its handles are its own (Cython), but tasks are asyncio's C tasks, which schedule
  every step and wake-up through the loop's ``call_soon`` method looked up by name, and
  ``uvloop.Loop`` is a Python class: its ``call_soon``, ``call_soon_threadsafe``, ``call_later``
  and ``call_at`` wrap the callback. Its own callbacks (protocols, transports) are not followed;
- eager tasks (Python 3.12+): the first step runs inside the task factory, called by its
  creator; asyncio's eager task factories follow it as a step.

Other loops are not followed: nothing is published on their thread (one warning per kind).

Greenlets (gevent): ``greenlet.settrace`` on each thread where a span is entered once greenlet
is imported: every switch publishes the span of the context of the greenlet switched to.

Threads: ``ThreadPoolExecutor.submit`` work runs with the submitting context's span published
and nothing after; work given as ``ctx.run`` (``asyncio.to_thread``,
``run_in_executor(None, ctx.run, ...)``) with that context's. anyio's worker threads (Starlette's
``run_in_threadpool``, FastAPI's ``def`` endpoints and dependencies) run each function in a copy
of the caller's context: the function publishes that context's span around it.

Modules imported after instrument() (uvloop, anyio's asyncio backend, greenlet) are hooked when
their import ends.
"""
import asyncio
import asyncio.events
import collections.abc
import concurrent.futures
import contextvars
import functools
import importlib.abc
import sys

from opentelemetry import context as otel_context
from opentelemetry.trace.propagation import _SPAN_KEY

from . import _spans
from ._native import native
from ._spans import buf_of, publish, publish_in, set_context, tls

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
        prev, step = t.buf, t.step
        t.step = True
        publish_in(self._context.get(var))  # the context the callback runs in
        try:
            return run(self)
        finally:
            t.step = step
            if t.buf is not prev:
                t.buf = prev
                set_context(prev)

    _run.__wrapped__ = run
    asyncio.events.Handle._run = _run
    _spans.followers.append(lambda kind: issubclass(kind, asyncio.BaseEventLoop))


def _followed(callback, var):
    """``callback`` run as a followed step: the span of the context it runs in published, the
    thread's own put back after it. (publish_in written out: this runs at every step.)"""
    get = var.get

    def step(*args):
        t = tls
        prev, was = t.buf, t.step
        t.step = True
        c = get(None)
        span = c.get(_SPAN_KEY) if c else None
        if span is None:
            buf = None
        else:
            try:
                buf = span._proflink_ctx or None
            except AttributeError:
                buf = buf_of(span, prev)
        if buf is not prev:
            t.buf = buf
            set_context(buf)
        try:
            return callback(*args)
        finally:
            t.step = was
            if t.buf is not prev:
                t.buf = prev
                set_context(prev)

    return step


def _follow_uvloop(module, var):
    cls = module.Loop
    if getattr(cls, "_proflink_followed", False):
        return
    soon, threadsafe, later, at = cls.call_soon, cls.call_soon_threadsafe, cls.call_later, cls.call_at

    def call_soon(self, callback, *args, context=None):
        if not callable(callback):  # the loop's own error
            return soon(self, callback, *args, context=context)
        return soon(self, _followed(callback, var), *args, context=context)

    def call_soon_threadsafe(self, callback, *args, context=None):
        if not callable(callback):
            return threadsafe(self, callback, *args, context=context)
        return threadsafe(self, _followed(callback, var), *args, context=context)

    def call_later(self, delay, callback, *args, context=None):
        if not callable(callback):
            return later(self, delay, callback, *args, context=context)
        return later(self, delay, _followed(callback, var), *args, context=context)

    def call_at(self, when, callback, *args, context=None):
        if not callable(callback):
            return at(self, when, callback, *args, context=context)
        return at(self, when, _followed(callback, var), *args, context=context)

    for f, orig in ((call_soon, soon), (call_soon_threadsafe, threadsafe), (call_later, later),
                    (call_at, at)):
        f.__wrapped__ = orig
        functools.update_wrapper(f, orig, updated=())
        setattr(cls, f.__name__, f)
    cls._proflink_followed = True
    _spans.followers.append(lambda kind: issubclass(kind, cls))


def _hook_eager_factories(var):
    """Python 3.12+: an eager task's first step runs inside the factory, called by its creator:
    that step is followed (the span of the context it runs in published, the creator's put
    back when it suspends or ends), whether the creator's own step is (a task) or not (a
    uvloop protocol callback starting a request's task)."""
    make = getattr(asyncio.tasks, "create_eager_task_factory", None)
    if make is None:
        return

    def followed(factory):
        def eager_factory(loop, coro, **kwargs):
            t = tls
            prev, was = t.buf, t.step
            t.step = True
            ctx = kwargs.get("context")
            publish_in(ctx.get(var) if ctx is not None else var.get(None))
            try:
                return factory(loop, coro, **kwargs)
            finally:
                t.step = was
                if t.buf is not prev:
                    t.buf = prev
                    set_context(prev)
        eager_factory.__wrapped__ = factory
        return eager_factory

    def create_eager_task_factory(custom_task_constructor):
        return followed(make(custom_task_constructor))

    create_eager_task_factory.__wrapped__ = make
    asyncio.tasks.create_eager_task_factory = create_eager_task_factory
    asyncio.create_eager_task_factory = create_eager_task_factory
    eager = followed(asyncio.tasks.eager_task_factory)
    asyncio.tasks.eager_task_factory = eager
    asyncio.eager_task_factory = eager


def _context_of(fn):
    """The contextvars.Context whose ``run`` ``fn`` is (directly or in a partial), else None."""
    ctx = getattr(fn, "__self__", None)
    if ctx is None and type(fn) is functools.partial:
        ctx = getattr(fn.func, "__self__", None)
    return ctx if type(ctx) is contextvars.Context else None


def _with_buf(buf, fn):
    """``fn`` run with ``buf`` published on its thread, what was there put back after."""
    def work(*args, **kwargs):
        prev = tls.buf
        publish(buf)
        try:
            return fn(*args, **kwargs)
        finally:
            publish(prev)
    return work


def _in_context_of(ctx, fn, var):
    """``fn`` (ctx.run of something) run with ctx's span published, as it is when it runs."""
    def work(*args, **kwargs):
        prev = tls.buf
        publish(_buf_in(ctx, var, prev))
        try:
            return fn(*args, **kwargs)
        finally:
            publish(prev)
    return work


def _hook_pools(var):
    submit = concurrent.futures.ThreadPoolExecutor.submit

    def _submit(self, fn, /, *args, **kwargs):
        ctx = _context_of(fn)
        if ctx is not None:
            return submit(self, _in_context_of(ctx, fn, var), *args, **kwargs)
        c = var.get(None)
        span = c.get(_SPAN_KEY) if c else None
        buf = buf_of(span, tls.buf) if span is not None else None
        if buf is None:
            return submit(self, fn, *args, **kwargs)
        return submit(self, _with_buf(buf, fn), *args, **kwargs)

    functools.update_wrapper(_submit, submit)
    concurrent.futures.ThreadPoolExecutor.submit = _submit


def _in_own_context(fn, var):
    """``fn`` run inside a context copied from its caller (anyio's workers): that context's
    span published around it."""
    def work(*args):
        prev = tls.buf
        publish_in(var.get(None))
        try:
            return fn(*args)
        finally:
            publish(prev)
    return work


def _follow_anyio(module, var):
    backend = module.AsyncIOBackend
    orig = backend.__dict__["run_sync_in_worker_thread"].__func__

    async def run_sync_in_worker_thread(cls, func, *args, **kwargs):
        return await orig(cls, _in_own_context(func, var), *args, **kwargs)

    functools.update_wrapper(run_sync_in_worker_thread, orig)
    backend.run_sync_in_worker_thread = classmethod(run_sync_in_worker_thread)


def _follow_greenlets(module, var):
    """Each thread that enters a span while greenlet is imported traces its greenlet switches
    from then on (greenlet.settrace is per thread): the span of the greenlet switched to."""
    settrace = module.settrace

    def trace_this_thread(buf):
        t = tls
        if not t.traced:
            prev = settrace(None)

            def switched(event, args):
                if event == "switch" or event == "throw":
                    ctx = args[1].gr_context
                    publish_in(ctx.get(var) if ctx is not None else None)
                if prev is not None:
                    prev(event, args)

            settrace(switched)
            t.traced = True
        return buf

    _spans.guards.append(trace_this_thread)


class _OnImport(importlib.abc.MetaPathFinder):
    """Runs a hook on a module when its import ends (modules imported after instrument())."""

    def __init__(self):
        self.todo = {}

    def find_spec(self, name, path=None, target=None):
        hooks = self.todo.get(name)
        if hooks is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            del self.todo[name]
            spec.loader = _HookedLoader(spec.loader, hooks)
        return spec


class _HookedLoader(importlib.abc.Loader):
    def __init__(self, loader, hooks):
        self._loader = loader
        self._hooks = hooks

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        for hook in self._hooks:
            hook(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


_on_import = _OnImport()


def _when_imported(name, hook):
    module = sys.modules.get(name)
    if module is not None:
        hook(module)
        return
    _on_import.todo.setdefault(name, []).append(hook)
    if _on_import not in sys.meta_path:
        sys.meta_path.insert(0, _on_import)


def instrument():
    """Publishes the right span at asyncio and uvloop task steps, greenlet switches and work
    handed to threads (see the module's doc). Call it once, anywhere before or after the event
    loop starts. Returns True when the hooks are in place, False without proflink (then nothing
    is changed)."""
    global _installed
    if native is None:
        return False
    if not _installed:
        var = _context_var()
        if var is None:
            return False
        _hook_handles(var)
        _hook_eager_factories(var)
        _hook_pools(var)
        _when_imported("uvloop", lambda m: _follow_uvloop(m, var))
        _when_imported("anyio._backends._asyncio", lambda m: _follow_anyio(m, var))
        _when_imported("greenlet", lambda m: _follow_greenlets(m, var))
        _installed = True
    return True


class _Steps(collections.abc.Coroutine):
    """A task's coroutine, publishing the task's span around each step (task_factory)."""

    __slots__ = ("_coro", "_var")

    def __init__(self, coro, var):
        self._coro = coro
        self._var = var

    def _step(self, method, *args):
        t = tls
        prev, was = t.buf, t.step
        t.step = True
        c = self._var.get(None)  # inside the step: the task's context
        publish(buf_of(c.get(_SPAN_KEY), prev) if c else None)
        try:
            return method(*args)
        finally:
            t.step = was
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
    """An event-loop task factory that publishes each task's span around its steps, for a loop
    instrument() does not follow: ``loop.set_task_factory(proflink_otel.task_factory)``."""
    var = _context_var()
    if native is not None and var is not None:
        coro = _Steps(coro, var)
    return asyncio.Task(coro, loop=loop, **kwargs)
