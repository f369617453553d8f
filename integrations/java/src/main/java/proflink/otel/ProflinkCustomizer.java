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
    ContextStorage.addWrapper(PublishingStorage::new);
    Native.followVirtualThreads();
    c.addResourceCustomizer((resource, config) -> ResourcePublisher.publish(resource));
    c.addTracerProviderCustomizer((builder, config) -> builder.addSpanProcessor(new RecordingProcessor()));
    c.addSpanExporterCustomizer((exporter, config) -> new DeferringExporter(exporter));
  }

  /** Last: the resource it publishes is the one the other customizers made. */
  @Override
  public int order() {
    return Integer.MAX_VALUE;
  }
}
