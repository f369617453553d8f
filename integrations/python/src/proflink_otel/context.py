"""ProflinkRuntimeContext: the SDK's contextvars runtime context that also publishes the active
span to proflink on the calling thread, at every attach and detach (none when no span is
active; on a thread running an event loop, only inside a step hooks.py follows: see
_spans.publish_context). Selected the SDK's way: OTEL_PYTHON_CONTEXT=proflink (entry point group
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

        # a caller that kept these bound methods goes on through them: bind only once
        def first_attach(context):
            if self.attach is first_attach:
                self._bind()
            return self._attach(context)

        def first_detach(token):
            if self.detach is first_detach:
                self._bind()
            return self._detach(token)

        self.attach, self.detach = first_attach, first_detach

    def _bind(self):
        from ._spans import publish_context

        var = self._current_context
        set_, reset, get = var.set, var.reset, var.get

        def attach(context):
            token = set_(context)
            publish_context(context)
            return token

        def detach(token):
            reset(token)
            publish_context(get())

        self.attach, self.detach = self._attach, self._detach = attach, detach
