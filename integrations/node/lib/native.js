'use strict';
// The preloaded proflink library, bound through koffi (no compiled addon). proflink is found
// only if the process already has it mapped (LD_PRELOAD, or linked by the program): loading it
// late would not give it the static TLS that profilers read, so a path that is not mapped yet is
// never loaded. Without it, or when proflink is disabled, `native` is null and every caller
// falls back to doing nothing.
const fs = require('fs');

// The apmint profiler recognises the library by this file name; the musl build matches too.
const LIBRARY_NAME = /\/elastic-jvmti-linux-proflink-[^/]*\.so$/;
// sizeof(proflink_context): trace_id[16] span_id[8] transaction_id[8] flags, reserved[7]
const CONTEXT_SIZE = 40;

function mappedLibrary() {
  let maps;
  try {
    maps = fs.readFileSync('/proc/self/maps', 'utf8');
  } catch (_) {
    return null;
  }
  for (const line of maps.split('\n')) {
    const path = line.slice(line.indexOf('/'));
    if (line.includes('/') && LIBRARY_NAME.test(path)) return path;
  }
  return null;
}

function bind(path) {
  const koffi = require('koffi');
  const lib = koffi.load(path);
  const f = {
    setContext: lib.func('void proflink_set_context(const void *ctx)'),
    // The same call taking the address of memory that never moves (see span_ids.js): koffi
    // passes an integer faster than it pins and unwraps a Buffer, and this is the hot path.
    setContextAt: lib.func('void proflink_set_context(uintptr_t ctx)'),
    swapContext: lib.func('int proflink_swap_context(const void *next, void *prev)'),
    setTrace: lib.func('void proflink_set_trace(const void *trace, const void *span, const void *tx, uint8_t flags)'),
    clearTrace: lib.func('void proflink_clear_trace(void)'),
    endTransaction: lib.func('int proflink_end_transaction(const void *trace, const void *tx, uint8_t flags, void *fn, void *user)'),
    takeTransactions: lib.func('long proflink_take_transactions(void *buf, size_t cap)'),
    transactionsFd: lib.func('int proflink_transactions_fd(void)'),
    flushTransactions: lib.func('int proflink_flush_transactions(void)'),
    setResource: lib.func('int proflink_set_resource(const char *attributes)'),
    getStats: lib.func('int proflink_get_stats(void *out, size_t size)'),
  };
  // A disabled proflink (…_ENABLED=false, PROFLINK_INCLUDE/EXCLUDE) answers -1: treat it as
  // absent so that the hot path does not pay FFI calls that do nothing.
  if (f.getStats(Buffer.alloc(8), 8) < 0) return null;
  return f;
}

let native = null;
const path = process.env.PROFLINK_OTEL_DISABLE === '1' ? null : mappedLibrary();
if (path) {
  try {
    native = bind(path);
  } catch (e) {
    // an older proflink without the calls this package needs: stay transparent, say why once
    process.emitWarning(`proflink-otel: ${path} not usable (${e.message}); profiling correlation is off`);
    native = null;
  }
}

// The address of a Buffer's first byte (only for memory that V8 never moves).
const addressOf = native ? (buf) => Number(require('koffi').address(buf)) : () => 0;

module.exports = { native, libraryPath: native ? path : null, CONTEXT_SIZE, addressOf };
