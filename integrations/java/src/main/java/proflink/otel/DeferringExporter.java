/* DeferringExporter — wraps each span exporter the agent configures: a sampled local root (the
 * transaction) is ended through proflink's deferral and exported once proflink hands it back,
 * with the stack-trace ids the profiler reported for it, even late, in
 * elastic.profiler_stack_trace_ids; every other span is exported at once, untouched. */
package proflink.otel;

import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

final class DeferringExporter implements SpanExporter {
  private final SpanExporter delegate;

  DeferringExporter(SpanExporter delegate) {
    this.delegate = delegate;
  }

  @Override
  public CompletableResultCode export(Collection<SpanData> spans) {
    List<SpanData> now = new ArrayList<>(spans.size());
    boolean drain = false;
    for (SpanData s : spans) {
      SpanContext sc = s.getSpanContext();
      SpanContext parent = s.getParentSpanContext();
      boolean localRoot = !parent.isValid() || parent.isRemote();
      if (!localRoot || !sc.isSampled() || !Pull.watch()) {
        now.add(s);
        continue;
      }
      byte[] ids = new byte[24];
      System.arraycopy(sc.getTraceIdBytes(), 0, ids, 0, 16);
      System.arraycopy(sc.getSpanIdBytes(), 0, ids, 16, 8);
      String key = sc.getTraceId() + sc.getSpanId();
      // held before proflink may hand it back: the pull thread can take the result at once
      Pull.hold(key, s, this);
      int rc = Native.endTransaction(ids, sc.getTraceFlags().asByte() & 0xff);
      if (rc < 0) { // the pull queue is full: goes on without the ids
        Pull.unhold(key, s);
        now.add(s);
      } else if (rc == 0) { // delivered at once (no profiler yet, or the deferral queue is full)
        drain = true;
      }
    }
    CompletableResultCode result =
        now.isEmpty() ? CompletableResultCode.ofSuccess() : forward(now);
    if (drain) {
      Pull.drain(false);
    }
    return result;
  }

  /** Exports through the wrapped exporter: one call at a time, as the SDK promises it. */
  CompletableResultCode forward(Collection<SpanData> spans) {
    synchronized (this) {
      return delegate.export(spans);
    }
  }

  @Override
  public CompletableResultCode flush() {
    Pull.deliverHeld();
    return delegate.flush();
  }

  @Override
  public CompletableResultCode shutdown() {
    Pull.deliverHeld();
    return delegate.shutdown();
  }

  @Override
  public String toString() {
    return "ProflinkDeferringExporter{" + delegate + "}";
  }
}
