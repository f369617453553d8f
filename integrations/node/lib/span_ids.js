'use strict';
// The 40-byte proflink_context of a span, built once per span and kept on the span object, so
// that publishing it at every context switch is one FFI call with a ready buffer.
// Layout (include/proflink.h): trace_id[16] | span_id[8] | transaction_id[8] | flags | 0[7].
const { trace } = require('@opentelemetry/api');
const { CONTEXT_SIZE, addressOf } = require('./native');

const CONTEXT = Symbol('proflink.context');   // Buffer(40) on the span
const ADDRESS = Symbol('proflink.address');   // its address, what the hot path passes
const LOCAL_ROOT = Symbol('proflink.localRoot'); // true on a span without a local parent
const TX_OFFSET = 24;
const FLAGS_OFFSET = 32;

// Span buffers are slices of slabs allocated outside V8's heap (allocUnsafeSlow, larger than
// V8 ever keeps on its heap), so their addresses never change: the context manager passes the
// address instead of the Buffer. A slab lives as long as any span still holds a slice of it.
const SLAB_SIZE = 4096;
let slab = null;
let slabUsed = SLAB_SIZE;

function allocContext() {
  if (slabUsed + CONTEXT_SIZE > SLAB_SIZE) {
    slab = Buffer.allocUnsafeSlow(SLAB_SIZE);
    slabUsed = 0;
  }
  const buf = slab.subarray(slabUsed, slabUsed + CONTEXT_SIZE).fill(0);
  slabUsed += CONTEXT_SIZE;
  return buf;
}

function build(spanContext, txSource) {
  const buf = allocContext();
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
  const buf = build(sc, local ? contextOf(parent, undefined) : null);
  span[ADDRESS] = addressOf(buf);
  span[CONTEXT] = buf;
  return buf;
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
    span[ADDRESS] = addressOf(buf);
    span[CONTEXT] = buf;
  } catch (_) {
    // a frozen span object: rebuilt next time, still correct
  }
  return buf;
}

// The address of the span's buffer, 0 for a span without a valid context.
function addressOfSpan(span, outer) {
  const a = span[ADDRESS];
  if (a !== undefined) return a;
  const buf = contextOf(span, outer);
  return buf ? span[ADDRESS] || addressOf(buf) : 0;
}

function isLocalRoot(span) {
  return span[LOCAL_ROOT] === true;
}

module.exports = { recordStart, contextOf, addressOfSpan, isLocalRoot, CONTEXT, TX_OFFSET };
