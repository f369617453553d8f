'use strict';
// The 40-byte proflink_context of a span, built once per span and kept on the span object, so
// that publishing it at every context switch is one FFI call with a ready buffer.
// Layout (include/proflink.h): trace_id[16] | span_id[8] | transaction_id[8] | flags | 0[7].
const { trace } = require('@opentelemetry/api');
const { CONTEXT_SIZE } = require('./native');

const CONTEXT = Symbol('proflink.context');   // Buffer(40) on the span
const LOCAL_ROOT = Symbol('proflink.localRoot'); // true on a span without a local parent
const TX_OFFSET = 24;
const FLAGS_OFFSET = 32;

function build(spanContext, txSource) {
  const buf = Buffer.alloc(CONTEXT_SIZE);
  buf.write(spanContext.traceId, 0, 16, 'hex');
  buf.write(spanContext.spanId, 16, 8, 'hex');
  if (txSource) txSource.copy(buf, TX_OFFSET, TX_OFFSET, TX_OFFSET + 8);
  else buf.write(spanContext.spanId, TX_OFFSET, 8, 'hex');
  buf[FLAGS_OFFSET] = spanContext.traceFlags & 0xff;
  return buf;
}

// Called when a span starts with the context it starts in (SpanProcessor.onStart): the parent
// span, when it is local and of the same trace, gives the local root (transaction) id.
function recordStart(span, parentContext) {
  if (span[CONTEXT]) return span[CONTEXT];
  const sc = span.spanContext();
  const parent = parentContext ? trace.getSpan(parentContext) : undefined;
  const psc = parent && parent.spanContext();
  const local = psc && !psc.isRemote && psc.traceId === sc.traceId;
  span[LOCAL_ROOT] = !local;
  span[CONTEXT] = build(sc, local ? contextOf(parent, undefined) : null);
  return span[CONTEXT];
}

// The buffer of `span`; a span the processor did not see (non-recording, or no
// ProflinkSpanProcessor registered) takes its transaction id from `outer`, the span active when
// it was entered, if that one is of the same trace, else is its own local root.
function contextOf(span, outer) {
  let buf = span[CONTEXT];
  if (buf) return buf;
  const sc = span.spanContext();
  if (!trace.isSpanContextValid(sc)) return null;
  const ob = outer && outer !== span ? outer[CONTEXT] : undefined;
  const same = ob && ob.toString('hex', 0, 16) === sc.traceId;
  buf = build(sc, same ? ob : null);
  try {
    span[CONTEXT] = buf;
  } catch (_) {
    // a frozen span object: rebuilt next time, still correct
  }
  return buf;
}

function isLocalRoot(span) {
  return span[LOCAL_ROOT] === true;
}

module.exports = { recordStart, contextOf, isLocalRoot, CONTEXT, TX_OFFSET };
