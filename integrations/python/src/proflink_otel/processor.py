"""ProflinkSpanProcessor(inner): holds each sampled local-root span (the transaction) through
proflink's deferral, so that the stack-trace ids the profiler reports for it, even late, are on
it when it reaches ``inner`` (the user's export processor), as the span attribute
elastic.profiler_stack_trace_ids.

Delivery is pulled (proflink_end_transaction without a callback): a callback would run on
proflink's reader thread and need the GIL, making the reader wait for Python while the profiler
drops what the socket cannot queue. A daemon thread of this package waits on the descriptor of
proflink_transactions_fd, takes the results and forwards the spans.
"""
import base64
import ctypes
import os
import select
import struct
import threading
import warnings

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.attributes import BoundedAttributes

from ._native import native
from ._spans import SAMPLED, record_start
from .resource import publish_resource

ATTRIBUTE = "elastic.profiler_stack_trace_ids"
# include/proflink.h: proflink_ended_transaction (32 bytes), then n_ids proflink_stack_count
_HEADER = struct.Struct("=16s8sII")
_ENTRY = struct.Struct("=16sI")
# Each id is repeated `count` times (the spec's counted keyword). A count is a u32: beyond this
# many values per span the attribute would only cost memory and export size, so it is cut.
MAX_VALUES = 1 << 16
_TAKE_SIZE = 64 * 1024
_DELIVERED_NOW = 0


class _Pull:
    """proflink's one pull queue, shared by every processor of the process."""

    def __init__(self):
        self.held = {}  # (trace id + transaction id) bytes -> [(span, processor), ...]
        self.held_lock = threading.Lock()
        # one drain at a time: a flush waits until spans taken by a running drain are forwarded
        self.drain_lock = threading.Lock()
        self.buf = ctypes.create_string_buffer(_TAKE_SIZE)
        self.thread = None
        self.started = False

    def watch(self):
        """Starts the daemon thread once per process (a fork child starts its own: see
        _forked). True when results can be pulled."""
        if self.started:
            return self.thread is not None
        self.started = True
        fd = native.transactions_fd()
        if fd < 0:
            self.thread = None
            return False
        self.thread = threading.Thread(target=self._loop, args=(fd,), name="proflink-otel-pull",
                                       daemon=True)
        self.thread.start()
        return True

    def _forked(self):
        """In a fork child: what the parent held is the parent's to deliver; the child has no
        pull thread (threads do not survive fork) and takes from its own queue."""
        self.held = {}
        self.held_lock = threading.Lock()
        self.drain_lock = threading.Lock()
        self.thread = None
        self.started = False

    def _loop(self, fd):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            poller.poll()
            self.drain()

    def hold(self, key, span, processor):
        with self.held_lock:
            self.held.setdefault(key, []).append((span, processor))

    def unhold(self, key, span):
        with self.held_lock:
            entries = self.held.get(key, [])
            for i, (s, _) in enumerate(entries):
                if s is span:
                    del entries[i]
                    break
            if not entries:
                self.held.pop(key, None)

    def drain(self, wait=True):
        """Takes every queued result and forwards the spans they complete. wait=False: unless
        another thread is draining (it takes what is queued, this one included, before it
        stops: it takes until the queue is empty)."""
        if not self.drain_lock.acquire(wait):
            return
        try:
            while True:
                ready = self._take()
                if not ready:
                    return
                for key, ids in ready:
                    with self.held_lock:
                        entries = self.held.get(key)
                        if not entries:
                            continue
                        span, processor = entries.pop(0)
                        if not entries:
                            del self.held[key]
                    processor._forward(span, ids)
        finally:
            self.drain_lock.release()

    def _take(self):
        """The results waiting in proflink's queue: [(trace id + transaction id, ids)]."""
        n = native.take_transactions(ctypes.addressof(self.buf), len(self.buf))
        if n < 0:  # the first result alone is larger: take it with a buffer that fits
            self.buf = ctypes.create_string_buffer(-n)
            return self._take()
        buf = self.buf
        out = []
        off = 0
        while off < n:
            trace, tx, n_ids, _ = _HEADER.unpack_from(buf, off)
            off += _HEADER.size
            ids = []
            for _ in range(n_ids):
                sid, count = _ENTRY.unpack_from(buf, off)
                off += _ENTRY.size
                b64 = base64.urlsafe_b64encode(sid).rstrip(b"=").decode()
                ids.extend([b64] * min(count, MAX_VALUES - len(ids)))
            out.append((trace + tx, ids))
        return out


_pull = _Pull() if native else None
if _pull is not None:
    os.register_at_fork(after_in_child=_pull._forked)


def _with_ids(span, ids):
    """A copy of the ended (read-only) ``span`` with the attribute added; exporters read the
    copy's properties. Dropped counts and the rest are the original's."""
    old = span._attributes
    attrs = BoundedAttributes(maxlen=None, attributes=dict(old or {}), immutable=False)
    attrs[ATTRIBUTE] = tuple(ids)
    attrs._immutable = True
    attrs.dropped = getattr(old, "dropped", 0)
    return ReadableSpan(
        name=span.name, context=span.context, parent=span.parent, resource=span.resource,
        attributes=attrs, events=span._events, links=span._links, kind=span.kind,
        instrumentation_info=span._instrumentation_info, status=span.status,
        start_time=span.start_time, end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope)


_checked = False


def _check_runtime_context():
    """Says once when the SDK's runtime context is not this package's: spans would then be
    published only at asyncio steps (instrument()), never on attach, so threads carry none."""
    global _checked
    if _checked:
        return
    _checked = True
    from opentelemetry import context

    from .context import ProflinkRuntimeContext
    context.get_current()  # older API versions (1.20 does) load the runtime context on first use
    if not isinstance(context._RUNTIME_CONTEXT, ProflinkRuntimeContext):
        warnings.warn("proflink-otel: the OpenTelemetry runtime context is not proflink's: set "
                      "OTEL_PYTHON_CONTEXT=proflink in the environment, or spans are not "
                      "published when they are entered")


class ProflinkSpanProcessor(SpanProcessor):
    def __init__(self, inner):
        self._inner = inner
        # Starts proflink's reader now: the profiler's registration (and its delay) is then
        # known before the first request ends, and its datagrams do not wait in the socket.
        if _pull is not None:
            _pull.watch()
            _check_runtime_context()

    def on_start(self, span, parent_context=None):
        if _pull is not None:
            record_start(span, parent_context)
            publish_resource(span.resource)
        self._inner.on_start(span, parent_context=parent_context)

    def _on_ending(self, span):
        hook = getattr(self._inner, "_on_ending", None)
        if hook is not None:
            hook(span)

    def on_end(self, span):
        # The SDK hands over a read-only copy (ReadableSpan): a local root is a span without a
        # parent or with a remote one, its own id is the transaction id.
        sc = span.context
        parent = span.parent
        if (_pull is None or sc is None or not sc.trace_flags & SAMPLED
                or (parent is not None and not parent.is_remote) or not _pull.watch()):
            return self._inner.on_end(span)
        trace_id, tx = sc.trace_id.to_bytes(16, "big"), sc.span_id.to_bytes(8, "big")
        key = trace_id + tx
        # held before proflink may hand it back: the pull thread can take the result at once
        _pull.hold(key, span, self)
        rc = native.end_transaction(trace_id, tx, sc.trace_flags & 0xFF, None, None)
        if rc < 0:  # pull queue full or disabled: goes on without the ids
            _pull.unhold(key, span)
            return self._inner.on_end(span)
        if rc == _DELIVERED_NOW:
            # no profiler yet (auto mode) or the deferral queue is full: exported now, as without
            # proflink, by this thread unless the pull thread is at it (never waits for it)
            _pull.drain(wait=False)

    def _forward(self, span, ids):
        self._inner.on_end(_with_ids(span, ids) if ids else span)

    def _deliver_held(self):
        if _pull is not None and _pull.held:
            native.flush_transactions()
            _pull.drain()

    def force_flush(self, timeout_millis=30000):
        self._deliver_held()
        return self._inner.force_flush(timeout_millis)

    def shutdown(self):
        self._deliver_held()
        return self._inner.shutdown()
