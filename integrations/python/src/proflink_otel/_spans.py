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
"""
import threading

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


class _Published(threading.local):
    buf = None  # what proflink has for this thread: a span's bytes(40), None = no trace


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
    if t.buf is not buf:
        t.buf = buf
        set_context(buf)


def publish(buf):
    """Makes ``buf`` (bytes(40) or None) this thread's context in proflink, if it is not."""
    t = tls
    if t.buf is not buf:
        t.buf = buf
        set_context(buf)
