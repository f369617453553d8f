/* SpanRecords — the 40-byte proflink_context of each span (include/proflink.h: trace id, span id,
 * transaction id, flags, reserved), built once when the span starts, so that publishing it at a
 * context switch is one map lookup and one JNI call passing a ready array. The transaction id is
 * the span id of the span's local root, known exactly at the start (the parent is given there). */
package proflink.otel;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.ReadableSpan;
import java.util.concurrent.ConcurrentHashMap;

final class SpanRecords {
  static final int SIZE = 40;
  private static final int TX = 24;
  // span id (hex, as the SDK keeps it) -> record, from the span's start to its end
  private static final ConcurrentHashMap<String, byte[]> records = new ConcurrentHashMap<>();

  private SpanRecords() {}

  static void started(ReadableSpan span) {
    SpanContext sc = span.getSpanContext();
    records.put(sc.getSpanId(), build(sc, localRoot(sc, span.getParentSpanContext())));
  }

  static void ended(ReadableSpan span) {
    records.remove(span.getSpanContext().getSpanId());
  }

  /** The record of the span in ctx, null for none (no trace published). */
  static byte[] of(Context ctx) {
    Span span = ctx == null ? null : Span.fromContextOrNull(ctx);
    if (span == null) {
      return null;
    }
    SpanContext sc = span.getSpanContext();
    byte[] r = records.get(sc.getSpanId());
    if (r != null) {
      return r;
    }
    if (!sc.isValid()) {
      return null;
    }
    // a span not seen starting (ended already, not recording, or remote): its local root from
    // its parent when it is an SDK span with a known local parent, else itself
    SpanContext parent = span instanceof ReadableSpan ? ((ReadableSpan) span).getParentSpanContext() : null;
    return build(sc, parent == null ? null : localRoot(sc, parent));
  }

  /** The transaction id bytes of a span with this parent, null for itself. */
  private static byte[] localRoot(SpanContext sc, SpanContext parent) {
    if (!parent.isValid() || parent.isRemote() || !parent.getTraceId().equals(sc.getTraceId())) {
      return null;
    }
    byte[] pr = records.get(parent.getSpanId());
    if (pr == null) {
      return null;
    }
    byte[] tx = new byte[8];
    System.arraycopy(pr, TX, tx, 0, 8);
    return tx;
  }

  private static byte[] build(SpanContext sc, byte[] tx) {
    byte[] r = new byte[SIZE];
    System.arraycopy(sc.getTraceIdBytes(), 0, r, 0, 16);
    byte[] span = sc.getSpanIdBytes();
    System.arraycopy(span, 0, r, 16, 8);
    System.arraycopy(tx != null ? tx : span, 0, r, TX, 8);
    r[32] = sc.getTraceFlags().asByte();
    return r;
  }
}
