'use strict';
// An HTTP service traced with the OpenTelemetry JS SDK and proflink-otel. Each request is a
// root (server) span with child spans doing CPU work across awaits. Ended spans are printed as
// JSON lines on stdout (or appended to $EXPORT_FILE); root spans carry the profiler's
// stack-trace ids in elastic.profiler_stack_trace_ids when run under proflink.
//
//   node example/server.js            # then: curl 'http://127.0.0.1:8080/work?ms=50'
const http = require('http');
const fs = require('fs');
const { trace, SpanKind, SpanStatusCode } = require('@opentelemetry/api');
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
const { SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { ProflinkContextManager, ProflinkSpanProcessor } = require('proflink-otel');

const PORT = Number(process.env.PORT || 8080);
const HOST = process.env.HOST || '127.0.0.1';

// Prints each ended span as one JSON line (what an OTLP exporter would send).
class JsonLinesExporter {
  constructor(file) {
    this.fd = file ? fs.openSync(file, 'a') : 1;
  }
  export(spans, done) {
    for (const s of spans) {
      const sc = s.spanContext();
      fs.writeSync(this.fd, JSON.stringify({
        name: s.name,
        traceId: sc.traceId,
        spanId: sc.spanId,
        parentSpanId: s.parentSpanContext ? s.parentSpanContext.spanId : null,
        kind: s.kind,
        attributes: s.attributes,
      }) + '\n');
    }
    done({ code: 0 });
  }
  shutdown() {
    return Promise.resolve();
  }
}

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME || 'proflink-node-example' }),
  spanProcessors: [new ProflinkSpanProcessor(new SimpleSpanProcessor(new JsonLinesExporter(process.env.EXPORT_FILE)))],
});
provider.register({ contextManager: new ProflinkContextManager() });
const tracer = trace.getTracer('proflink-node-example');

// Busy CPU for `ms` milliseconds (what the profiler samples).
function burnCpu(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) {
    for (let i = 0; i < 10000; i++) x = (x * 31 + i) | 0;
  }
  return x;
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

async function handle(ms) {
  const parsed = await tracer.startActiveSpan('parse', async (span) => {
    burnCpu(1);
    await tick();
    span.end();
    return ms;
  });
  // the work in slices, with awaits between them, as real handlers do
  const slices = await tracer.startActiveSpan('compute', async (span) => {
    let n = 0;
    for (let left = parsed; left > 0; left -= 5, n++) {
      burnCpu(Math.min(5, left));
      await tick();
    }
    span.setAttribute('work.ms', parsed);
    span.end();
    return n;
  });
  return { ms: parsed, slices };
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  tracer.startActiveSpan(`${req.method} ${url.pathname}`, { kind: SpanKind.SERVER }, async (span) => {
    try {
      if (url.pathname !== '/work') {
        res.writeHead(404).end('not found\n');
        span.setAttribute('http.response.status_code', 404);
        return;
      }
      const ms = Math.max(0, Math.min(5000, Number(url.searchParams.get('ms') || 20)));
      const result = await handle(ms);
      span.setAttribute('http.response.status_code', 200);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result) + '\n');
    } catch (e) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(e) });
      res.writeHead(500).end('error\n');
    } finally {
      span.end();
    }
  });
});

server.listen(PORT, HOST, () => console.error(`listening on http://${HOST}:${PORT} (pid ${process.pid})`));

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    server.close();
    // delivers the root spans still held for the profiler's delay, then exits
    provider.shutdown().finally(() => process.exit(0));
  });
}
