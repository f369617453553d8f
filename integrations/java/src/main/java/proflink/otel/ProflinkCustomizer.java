/* ProflinkCustomizer — the extension's entry point, found by the agent's autoconfiguration
 * (META-INF/services): where proflink is active and the only provider, it wraps the context
 * storage, keeps span records, wraps the span exporters and publishes the resource; elsewhere it
 * changes nothing. */
package proflink.otel;

import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.sdk.autoconfigure.spi.AutoConfigurationCustomizer;
import io.opentelemetry.sdk.autoconfigure.spi.AutoConfigurationCustomizerProvider;

public final class ProflinkCustomizer implements AutoConfigurationCustomizerProvider {
  @Override
  public void customize(AutoConfigurationCustomizer c) {
    if (!Native.ACTIVE) {
      return;
    }
    // before the storage wraps anything: its first attach on a virtual thread finds Carrier on
    // the bootstrap loader
    if (hasVirtualThreads()) {
      VirtualThreads.install();
    }
    ContextStorage.addWrapper(PublishingStorage::new);
    // proflink's reader now: the profiler's registration (and its delay) is then known before
    // the first request ends, and its datagrams do not wait in the socket
    Pull.watch();
    c.addResourceCustomizer((resource, config) -> ResourcePublisher.publish(resource));
    c.addTracerProviderCustomizer((builder, config) -> builder.addSpanProcessor(new RecordingProcessor()));
    c.addSpanExporterCustomizer((exporter, config) -> new DeferringExporter(exporter));
  }

  private static boolean hasVirtualThreads() {
    try {
      Thread.class.getMethod("isVirtual");
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /** Last: the resource it publishes is the one the other customizers made. */
  @Override
  public int order() {
    return Integer.MAX_VALUE;
  }
}
