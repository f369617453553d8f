/* ResourcePublisher — the agent's resource, published once through proflink_set_resource, so
 * that the OTel process context profilers read carries this service's service.name,
 * service.instance.id and telemetry.sdk.* (profiles then join its other telemetry). */
package proflink.otel;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.resources.Resource;
import java.io.UnsupportedEncodingException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

final class ResourcePublisher {
  private ResourcePublisher() {}

  /** OTEL_RESOURCE_ATTRIBUTES syntax: "k=v,k2=v2", values percent-encoded; a key the syntax
   * cannot carry is left out rather than mangled. */
  static String attributes(Resource resource) {
    StringBuilder sb = new StringBuilder();
    for (Map.Entry<AttributeKey<?>, Object> e : resource.getAttributes().asMap().entrySet()) {
      String k = e.getKey().getKey();
      Object v = e.getValue();
      if (v == null || k.isEmpty() || !k.matches("[^\\s,=%]+")) {
        continue;
      }
      String s = v instanceof List ? joined((List<?>) v) : String.valueOf(v);
      if (sb.length() > 0) {
        sb.append(',');
      }
      sb.append(k).append('=').append(encode(s));
    }
    return sb.toString();
  }

  private static String joined(List<?> l) {
    StringBuilder sb = new StringBuilder();
    for (Object o : l) {
      if (sb.length() > 0) {
        sb.append(',');
      }
      sb.append(o);
    }
    return sb.toString();
  }

  private static String encode(String s) {
    try {
      return URLEncoder.encode(s, "UTF-8").replace("+", "%20");
    } catch (UnsupportedEncodingException e) {
      throw new AssertionError(e);
    }
  }

  static Resource publish(Resource resource) {
    String s = attributes(resource);
    if (!s.isEmpty()) {
      Native.setResource(s.getBytes(StandardCharsets.UTF_8));
    }
    return resource;
  }
}
