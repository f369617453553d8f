"""ProflinkRuntimeContext: the SDK's contextvars runtime context that also publishes the active
span to proflink on the calling thread, at every attach and detach (none when no span is
active). Selected the SDK's way: OTEL_PYTHON_CONTEXT=proflink (entry point group
``opentelemetry_context``).

Without proflink it is the SDK's ContextVarsRuntimeContext, exactly: its methods are then the
context variable's own.

The SDK creates the runtime context while ``opentelemetry.context`` is still being imported, so
this module imports nothing that needs it (the span key, the trace API) until the first attach.
"""
from opentelemetry.context.contextvars_context import ContextVarsRuntimeContext

from ._native import native


class ProflinkRuntimeContext(ContextVarsRuntimeContext):
    def __init__(self):
        super().__init__()
        var = self._current_context
        self.get_current = var.get
        if native is None:
            # transparent: the context variable's methods, as the SDK's runtime context calls them
            self.attach, self.detach = var.set, var.reset
            return

        def first_attach(context):
            self._bind()
            return self.attach(context)

        def first_detach(token):
            self._bind()
            return self.detach(token)

        self.attach, self.detach = first_attach, first_detach

    def _bind(self):
        from opentelemetry.trace.propagation import _SPAN_KEY

        from ._spans import buf_of, publish, tls

        set_, reset, get = self._current_context.set, self._current_context.reset, self._current_context.get

        def attach(context):
            token = set_(context)
            publish(buf_of(context.get(_SPAN_KEY), tls.buf))
            return token

        def detach(token):
            reset(token)
            publish(buf_of(get().get(_SPAN_KEY), tls.buf))

        self.attach, self.detach = attach, detach
