// A JDK HttpServer traced by hand with the OpenTelemetry SDK and its autoconfiguration, no agent,
// for tests/java.bats: proflink's extension jar is only on its class path. `GET /work?ms=N` runs
// a SERVER span (its parent the request's traceparent) and burns N ms of CPU in it. Its
// exporter ("jsonl", registered by the test through the autoconfiguration's SPI) prints one JSON
// line per span to stdout: traceId, spanId, parentSpanId (null for a local root), attributes.
// java -cp SDK:EXT:. SdkService — prints "port N" (kernel-picked, 127.0.0.1).
import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.spi.ConfigProperties;
import io.opentelemetry.sdk.autoconfigure.spi.traces.ConfigurableSpanExporterProvider;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.Executors;

public class SdkService {
    static ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    public static class Jsonl implements ConfigurableSpanExporterProvider, SpanExporter {
        public SpanExporter createExporter(ConfigProperties config) { return new Jsonl(); }
        public String getName() { return "jsonl"; }

        public synchronized CompletableResultCode export(Collection<SpanData> spans) {
            for (SpanData s : spans) {
                StringBuilder b = new StringBuilder("{\"traceId\": \"").append(s.getTraceId())
                    .append("\", \"spanId\": \"").append(s.getSpanId()).append("\", \"parentSpanId\": ");
                SpanContext p = s.getParentSpanContext();
                b.append(p.isValid() && !p.isRemote() ? "\"" + p.getSpanId() + "\"" : "null");
                b.append(", \"attributes\": {");
                List<String> ids = s.getAttributes()
                    .get(AttributeKey.stringArrayKey("elastic.profiler_stack_trace_ids"));
                if (ids != null) {
                    b.append("\"elastic.profiler_stack_trace_ids\": [");
                    for (int i = 0; i < ids.size(); i++)
                        b.append(i > 0 ? ", \"" : "\"").append(ids.get(i)).append('"');
                    b.append(']');
                }
                System.out.println(b.append("}}"));
            }
            System.out.flush();
            return CompletableResultCode.ofSuccess();
        }

        public CompletableResultCode flush() { return CompletableResultCode.ofSuccess(); }
        public CompletableResultCode shutdown() { return CompletableResultCode.ofSuccess(); }
    }

    public static void main(String[] args) throws Exception {
        OpenTelemetry otel = AutoConfiguredOpenTelemetrySdk.initialize().getOpenTelemetrySdk();
        Tracer tracer = otel.getTracer("sdk-service");
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 128);
        s.createContext("/", ex -> {
            String tp = ex.getRequestHeaders().getFirst("traceparent");
            String[] p = tp == null ? new String[0] : tp.trim().split("-");
            Context parent = Context.root();
            if (p.length == 4)
                parent = parent.with(Span.wrap(SpanContext.createFromRemoteParent(p[1], p[2],
                    TraceFlags.getSampled(), TraceState.getDefault())));
            Span span = tracer.spanBuilder("GET /work").setSpanKind(SpanKind.SERVER)
                .setParent(parent).startSpan();
            try (Scope scope = span.makeCurrent()) {
                String q = ex.getRequestURI().getQuery();
                long ms = q != null && q.startsWith("ms=") ? Long.parseLong(q.substring(3)) : 0;
                ex.getRequestBody().readAllBytes();
                long cpu0 = mx.getCurrentThreadCpuTime(), x = 0;
                while (mx.getCurrentThreadCpuTime() - cpu0 < ms * 1000000L)
                    for (int j = 0; j < 20000; j++)
                        x = x * 31 + j;
                sink = x;
                byte[] body = "ok".getBytes();
                ex.sendResponseHeaders(200, body.length);
                try (OutputStream o = ex.getResponseBody()) {
                    o.write(body);
                }
            } finally {
                span.end();
            }
        });
        s.setExecutor(Executors.newFixedThreadPool(4));
        s.start();
        System.out.println("port " + s.getAddress().getPort());
        System.out.flush();
    }
}
