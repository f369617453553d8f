// ContextSwitchBench — one attach + scope close of a context holding a recording SDK span, on
// the OpenTelemetry context storage the agent uses (thread-local), with and without the
// extension's wrapper (PublishingStorage: publishes the span through the JNI shim on both).
// Prints "plain_ns N" and "proflink_ns N": the best of 7 rounds of 2M pairs each, interleaved.
// Run under LD_PRELOAD=<proflink> with the extension jar and the API/SDK jars on the classpath
// (bench/java/run.sh).
package proflink.otel;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.SdkTracerProvider;

public final class ContextSwitchBench {
  private static final int PAIRS = 2_000_000;

  static long round(ContextStorage storage, Context ctx) {
    long t0 = System.nanoTime();
    for (int i = 0; i < PAIRS; i++) {
      Scope s = storage.attach(ctx);
      s.close();
    }
    return System.nanoTime() - t0;
  }

  public static void main(String[] args) {
    if (!Native.ACTIVE) {
      System.err.println("ContextSwitchBench: proflink is not preloaded");
      System.exit(1);
    }
    SdkTracerProvider tp = SdkTracerProvider.builder().addSpanProcessor(new RecordingProcessor()).build();
    Span span = tp.get("bench").spanBuilder("request").startSpan();
    Context ctx = Context.root().with(span);
    ContextStorage plain = ContextStorage.get();
    ContextStorage wrapped = new PublishingStorage(plain);
    long bestPlain = Long.MAX_VALUE, bestWrapped = Long.MAX_VALUE;
    for (int r = 0; r < 9; r++) {
      long p = round(plain, ctx), w = round(wrapped, ctx);
      if (r >= 2) { // two rounds of warm-up: the JIT compiles both loops
        bestPlain = Math.min(bestPlain, p);
        bestWrapped = Math.min(bestWrapped, w);
      }
    }
    System.out.printf("plain_ns %.1f%nproflink_ns %.1f%n", (double) bestPlain / PAIRS,
        (double) bestWrapped / PAIRS);
  }
}
