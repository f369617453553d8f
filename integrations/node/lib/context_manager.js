'use strict';
// ProflinkContextManager: the AsyncLocalStorage context manager of the OpenTelemetry SDK, plus
// publishing the active span to proflink on the JS thread. AsyncLocalStorage alone says nothing
// when a callback or an `await` resumes with another context, so an async_hooks before/after
// pair republishes the resumed context and restores the previous one afterwards (strictly
// nested, so a stack is enough). Publishing is skipped when the buffer is the one already
// published: callbacks without a span cost no FFI call at all.
const asyncHooks = require('async_hooks');
const { trace } = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { native } = require('./native');
const { contextOf } = require('./span_ids');

class ProflinkContextManager extends AsyncLocalStorageContextManager {
  constructor() {
    super();
    this._published = null; // the Buffer proflink has for this thread, null = no trace
    this._publishedSpan = undefined;
    this._saved = [];
    this._hook = null;
    if (native) {
      const setContext = native.setContext;
      this._publish = (span) => {
        const buf = span ? contextOf(span, this._publishedSpan) : null;
        if (buf === this._published) return;
        this._published = buf;
        this._publishedSpan = buf ? span : undefined;
        setContext(buf);
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
