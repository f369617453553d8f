'use strict';
// ProflinkContextManager: the AsyncLocalStorage context manager of the OpenTelemetry SDK, plus
// publishing the active span to proflink on the JS thread. AsyncLocalStorage alone says nothing
// when a callback or an `await` resumes with another context, so an async_hooks before/after
// pair republishes the resumed context and restores the previous one afterwards (strictly
// nested, so a stack is enough). Publishing is skipped when the buffer is the one already
// published: callbacks without a span cost no FFI call at all.
// The span's context is passed by address (span_ids.js keeps it in memory that never moves).
const asyncHooks = require('async_hooks');
const { trace } = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { native } = require('./native');
const { addressOfSpan } = require('./span_ids');

class ProflinkContextManager extends AsyncLocalStorageContextManager {
  constructor() {
    super();
    this._published = 0; // address of the context proflink has for this thread, 0 = no trace
    this._publishedSpan = undefined;
    this._saved = [];
    this._hook = null;
    if (native) {
      const setContextAt = native.setContextAt;
      this._publish = (span) => {
        let at = 0;
        try {
          at = span ? addressOfSpan(span, this._publishedSpan) : 0;
        } catch (_) {
          // a foreign Span implementation that throws: publish no trace rather than let the
          // exception escape an async hook (Node aborts the process on that)
        }
        if (at === this._published) return;
        this._published = at;
        this._publishedSpan = at ? span : undefined;
        setContextAt(at);
      };
      this._hook = asyncHooks.createHook({
        before: () => {
          this._saved.push(this._publishedSpan);
          this._publish(trace.getSpan(super.active()));
        },
        after: () => {
          this._publish(this._saved.pop());
        },
      });
    }
  }

  with(context, fn, thisArg, ...args) {
    if (!this._hook) return super.with(context, fn, thisArg, ...args);
    const outer = this._publishedSpan;
    this._publish(trace.getSpan(context));
    try {
      return super.with(context, fn, thisArg, ...args);
    } finally {
      this._publish(outer);
    }
  }

  enable() {
    super.enable();
    if (this._hook) this._hook.enable();
    return this;
  }

  disable() {
    if (this._hook) {
      this._hook.disable();
      this._saved.length = 0;
      this._publish(undefined);
    }
    return super.disable();
  }
}

module.exports = { ProflinkContextManager };
