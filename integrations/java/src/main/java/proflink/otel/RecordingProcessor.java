/* RecordingProcessor — keeps SpanRecords: a span's record from its start to its end. */
package proflink.otel;

import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.ReadWriteSpan;
import io.opentelemetry.sdk.trace.ReadableSpan;
import io.opentelemetry.sdk.trace.SpanProcessor;

final class RecordingProcessor implements SpanProcessor {
  @Override
  public void onStart(Context parentContext, ReadWriteSpan span) {
    SpanRecords.started(span);
  }

  @Override
  public boolean isStartRequired() {
    return true;
  }

  @Override
  public void onEnd(ReadableSpan span) {
    SpanRecords.ended(span);
  }

  @Override
  public boolean isEndRequired() {
    return true;
  }
}
