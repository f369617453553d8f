"""The 40-byte proflink_context of a span and what is published on each thread.

A span's context (include/proflink.h: trace_id[16] span_id[8] transaction_id[8] flags
reserved[7]) is built once, as an immutable bytes object kept on the span, so that publishing
it at every context switch is one ctypes call passing a ready buffer. The transaction id is
the span id of the span's local root: ProflinkSpanProcessor.on_start knows it exactly (the
parent context is given there); a span it did not see (non-recording, or no processor
registered) takes it from the span published when it was first entered, if that one belongs to
the same trace, else is its own local root.

``publish`` keeps, per thread, the buffer proflink has for it, and calls proflink only when it
changes: entering a context without a span where none is published costs no call at all.
An attach publishes only where what it publishes cannot outlive its step: on a plain thread,
or inside a step hooks.py follows (``step``); on a thread running an event loop anywhere else,
nothing (``unfollowed``).
"""
import sys
import threading
import warnings
from asyncio.events import _get_running_loop as _running_loop

from opentelemetry import trace as trace_api
from opentelemetry.trace.propagation import _SPAN_KEY

from ._native import native

_CTX = "_proflink_ctx"  # attribute on the span: its bytes(40), or False (no valid context)
TX = slice(24, 32)
SAMPLED = 0x01
_PAD = bytes(7)


def _build(sc, tx):
    return (sc.trace_id.to_bytes(16, "big") + sc.span_id.to_bytes(8, "big") + tx
            + bytes((sc.trace_flags & 0xFF,)) + _PAD)


def record_start(span, parent_context):
    """Called when a span starts (SpanProcessor.on_start): its buffer, with its local root."""
    sc = span.get_span_context()
    parent = trace_api.get_current_span(parent_context)
    psc = parent.get_span_context()
    local = psc.is_valid and not psc.is_remote and psc.trace_id == sc.trace_id
    pbuf = buf_of(parent, None) if local else None
    buf = _build(sc, pbuf[TX] if pbuf else sc.span_id.to_bytes(8, "big"))
    try:
        setattr(span, _CTX, buf)
    except AttributeError:
        pass  # a span type that takes no attributes: rebuilt when entered
    return buf


def buf_of(span, outer):
    """The buffer of ``span`` (None for no span or an invalid one); ``outer`` is the buffer
    published when it is entered (gives the local root of a span the processor did not see)."""
    if span is None:
        return None
    try:
        return getattr(span, _CTX) or None
    except AttributeError:
        pass
    sc = span.get_span_context()
    if not sc.is_valid:
        buf = False
    else:
        tid = sc.trace_id.to_bytes(16, "big")
        same = outer is not None and outer[:16] == tid and not sc.is_remote
        buf = _build(sc, outer[TX] if same else sc.span_id.to_bytes(8, "big"))
    try:
        setattr(span, _CTX, buf)
    except AttributeError:
        pass  # a span type that takes no attributes: rebuilt next time, still correct
    return buf or None


def _thread_local():
    """The thread-local base class: a thread's own, also where gevent has patched
    ``threading.local`` into a per-greenlet one (proflink's record is per thread)."""
    monkey = sys.modules.get("gevent.monkey")
    if monkey is not None:
        return monkey.get_original("_thread", "_local")
    return threading.local


class _Published(_thread_local()):
    buf = None  # what proflink has for this thread: a span's bytes(40), None = no trace
    # True while a hook of hooks.py follows this thread's switches (an event-loop callback it
    # wraps, a thread whose greenlet switches it traces): it publishes what runs next and puts
    # back what was there, so an attach may publish
    step = False
    traced = False  # its greenlet switches are traced (hooks.py)


tls = _Published()
set_context = native.set_context if native else None


def publish_context(c):
    """Publishes the span of the OTel context ``c`` (None or no span: no trace), if it is not
    what this thread has; ``publish(buf_of(...))`` in one call: the hot path of every span."""
    span = c.get(_SPAN_KEY) if c else None
    t = tls
    if span is None:
        buf = None
    else:
        try:
            buf = span._proflink_ctx or None
        except AttributeError:
            buf = buf_of(span, t.buf)
        if (buf is not None and buf is not t.buf and (guards or _running_loop() is not None)
                and not t.step):
            buf = unfollowed(buf)
    if t.buf is not buf:
        t.buf = buf
        set_context(buf)


def publish_in(c):
    """publish_context for the hooks, which follow the switch they publish at."""
    span = c.get(_SPAN_KEY) if c else None
    t = tls
    if span is None:
        buf = None
    else:
        try:
            buf = span._proflink_ctx or None
        except AttributeError:
            buf = buf_of(span, t.buf)
    if t.buf is not buf:
        t.buf = buf
        set_context(buf)


# hooks.py's checks of a thread that switches between contexts other than by event-loop
# callbacks (greenlets): each takes the buffer about to be published and returns it, or None
guards = []
# hooks.py's tests of an event loop's type: True when instrument() follows such loops
followers = []
_warned = set()


def unfollowed(buf):
    """``buf`` about to be published by an attach outside a followed step: published on a plain
    thread; None on a thread running an event loop (the span would stay published once its task
    step suspends, during other tasks' steps: never wrong, so nothing) or where a guard says so."""
    loop = _running_loop()
    if loop is not None:
        _unfollowed_loop(type(loop))
        return None
    for g in guards:
        buf = g(buf)
        if buf is None:
            break
    return buf


def _unfollowed_loop(kind):
    """Says once per kind of loop that nothing is published on its thread, unless instrument()
    follows it (its own callbacks that run outside the steps it follows: nothing, silently)."""
    if kind in _warned or any(f(kind) for f in followers):
        return
    _warned.add(kind)
    name = f"{kind.__module__}.{kind.__qualname__}"
    why = ("call proflink_otel.instrument() once at start" if not followers else
           "proflink-otel cannot follow its task steps")
    warnings.warn(f"proflink-otel: spans entered on the thread of event loop {name} are not "
                  f"published ({why}): a task's span would be shown during other tasks' steps",
                  stacklevel=4)


def publish(buf):
    """Makes ``buf`` (bytes(40) or None) this thread's context in proflink, if it is not."""
    t = tls
    if t.buf is not buf:
        t.buf = buf
        set_context(buf)
