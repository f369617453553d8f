'use strict';
// ProflinkSpanProcessor(inner): holds each sampled local-root span (the transaction) through
// proflink's deferral, so that the stack-trace ids the profiler reports for it, even late, are
// on it when it reaches `inner` (the user's export processor), as the span attribute
// elastic.profiler_stack_trace_ids. Delivery is pulled (proflink_end_transaction without a
// callback): a callback would run on proflink's reader thread and make it wait for the event
// loop, and the profiler drops what the socket cannot queue meanwhile. The pipe descriptor of
// proflink_transactions_fd wakes the event loop when results wait; it never keeps it alive.
const net = require('net');
const { native } = require('./native');
const { recordStart, isLocalRoot, CONTEXT, TX_OFFSET } = require('./span_ids');
const { publishResource } = require('./resource');

const ATTRIBUTE = 'elastic.profiler_stack_trace_ids';
// include/proflink.h: proflink_ended_transaction (32 bytes), then n_ids proflink_stack_count
const HEADER_SIZE = 32;
const N_IDS_OFFSET = 24;
const ID_SIZE = 16;
const ENTRY_SIZE = 20;
// Each id is repeated `count` times (the spec's counted keyword). A count is a u32: beyond this
// many values per span the attribute would only cost memory and export size, so it is cut.
const MAX_VALUES = 1 << 16;
const TAKE_BUFFER = 64 * 1024;
const SAMPLED = 0x01;

// Shared by every processor of the process: proflink has one queue.
const held = new Map(); // "<trace hex><tx hex>" -> { span, processor }
let takeBuf = null;
let socket = null;

function watch() {
  if (socket) return;
  const fd = native.transactionsFd();
  if (fd < 0) return;
  takeBuf = Buffer.alloc(TAKE_BUFFER);
  try {
    socket = new net.Socket({ fd, readable: true, writable: false });
  } catch (_) {
    socket = false; // delivered on forceFlush / shutdown only
    return;
  }
  socket.on('data', drain);
  socket.on('error', () => {});
  socket.unref();
}

function idsOf(buf, off, n) {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const e = off + i * ENTRY_SIZE;
    const id = buf.toString('base64url', e, e + ID_SIZE);
    let count = buf.readUInt32LE(e + ID_SIZE);
    while (count-- > 0 && ids.length < MAX_VALUES) ids.push(id);
  }
  return ids;
}

function withIds(span, ids) {
  if (ids.length === 0) return span;
  // The span has ended and is read-only; exporters read `attributes`, so a view of it with one
  // more attribute is what goes on.
  return Object.create(span, {
    attributes: { value: { ...span.attributes, [ATTRIBUTE]: ids }, enumerable: true },
  });
}

// Takes every queued result and forwards the spans they complete.
function drain() {
  if (!takeBuf) return;
  for (;;) {
    let n = native.takeTransactions(takeBuf, takeBuf.length);
    if (n < 0) {
      takeBuf = Buffer.alloc(-n);
      continue;
    }
    if (n === 0) return;
    for (let off = 0; off < n;) {
      const nIds = takeBuf.readUInt32LE(off + N_IDS_OFFSET);
      const key = takeBuf.toString('hex', off, off + 16) + takeBuf.toString('hex', off + 16, off + 24);
      const ids = idsOf(takeBuf, off + HEADER_SIZE, nIds);
      off += HEADER_SIZE + nIds * ENTRY_SIZE;
      const h = held.get(key);
      if (!h) continue;
      held.delete(key);
      h.processor._inner.onEnd(withIds(h.span, ids));
    }
  }
}

class ProflinkSpanProcessor {
  constructor(inner) {
    this._inner = inner;
    // Starts proflink's reader now: the profiler's registration (and its delay) is then known
    // before the first request ends, and its datagrams do not wait in the socket's short queue.
    if (native) watch();
  }

  onStart(span, parentContext) {
    if (native) {
      recordStart(span, parentContext);
      publishResource(span.resource);
    }
    this._inner.onStart(span, parentContext);
  }

  onEnd(span) {
    const buf = native && isLocalRoot(span) ? span[CONTEXT] : null;
    if (!buf || !(buf[32] & SAMPLED)) return this._inner.onEnd(span);
    watch();
    if (!takeBuf) return this._inner.onEnd(span); // no descriptor: nothing would come back
    const rc = native.endTransaction(buf.subarray(0, 16), buf.subarray(TX_OFFSET, TX_OFFSET + 8), buf[32], null, null);
    if (rc < 0) return this._inner.onEnd(span); // pull queue full: goes on without the ids
    held.set(buf.toString('hex', 0, 16) + buf.toString('hex', TX_OFFSET, TX_OFFSET + 8), { span, processor: this });
  }

  _deliverHeld() {
    if (native && held.size > 0) {
      native.flushTransactions();
      drain();
    }
  }

  forceFlush() {
    this._deliverHeld();
    return this._inner.forceFlush();
  }

  shutdown() {
    this._deliverHeld();
    return this._inner.shutdown();
  }
}

module.exports = { ProflinkSpanProcessor, ATTRIBUTE };
