'use strict';
// The test service of tests/node.bats: the real OpenTelemetry JS SDK with proflink-otel, every
// ended span (sampled or not) appended as a JSON line to $EXPORT_FILE, and hooks for the test:
//   GET /req?id=N&rounds=R&hold=K[&sampled=0]  root span "request N", child "work" doing R
//       rounds of (await; 2 ms CPU); in round K it appends "hold N <trace> <span> <root>" to
//       $MARKER_FILE and stays on CPU until the file $RELEASE_DIR/N exists (at most 20 s)
//   GET /fs      root span "fs" whose first async fs call starts libuv's thread pool
//   GET /flush   provider.forceFlush()
//   GET /stats   proflink_get_stats (messages_received correlations registrations), or "none"
const path = require('path');
const { createRequire } = require('module');
const pkgDir = path.join(__dirname, '..', '..', 'integrations', 'node');
const req = createRequire(path.join(pkgDir, 'package.json'));
const http = require('http');
const fs = require('fs');
const { trace, SpanKind } = req('@opentelemetry/api');
const { NodeTracerProvider } = req('@opentelemetry/sdk-trace-node');
const { SamplingDecision } = req('@opentelemetry/sdk-trace-base');
const { resourceFromAttributes } = req('@opentelemetry/resources');
const proflink = req(pkgDir);

const out = fs.openSync(process.env.EXPORT_FILE, 'a');
// Exports every ended span, sampled or not (the SDK's own processors drop unsampled ones), so
// the test sees that unsampled roots pass straight through.
class FileProcessor {
  onStart() {}
  onEnd(s) {
    const sc = s.spanContext();
    fs.writeSync(out, JSON.stringify({
      name: s.name, traceId: sc.traceId, spanId: sc.spanId, sampled: (sc.traceFlags & 1) === 1,
      parentSpanId: s.parentSpanContext ? s.parentSpanContext.spanId : null, attributes: s.attributes,
    }) + '\n');
  }
  forceFlush() { return Promise.resolve(); }
  shutdown() { return Promise.resolve(); }
}

// Roots started with attribute test.sampled=false are recorded but not sampled; children follow.
const sampler = {
  shouldSample(ctx, traceId, name, kind, attributes) {
    const parent = trace.getSpanContext(ctx);
    const sampled = parent ? (parent.traceFlags & 1) === 1 : attributes['test.sampled'] !== false;
    return { decision: sampled ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.RECORD };
  },
  toString() { return 'TestSampler'; },
};

const provider = new NodeTracerProvider({
  sampler,
  resource: resourceFromAttributes({ 'service.name': 'node-fixture', 'service.instance.id': 'fixture-instance-1' }),
  spanProcessors: [new proflink.ProflinkSpanProcessor(new FileProcessor())],
});
provider.register({ contextManager: new proflink.ProflinkContextManager() });
const tracer = trace.getTracer('fixture');

function spin(ms) {
  const end = Date.now() + ms;
  while (Date.now() < end);
}
const tick = () => new Promise((resolve) => setImmediate(resolve));

async function work(id, rounds, hold, rootId) {
  await tracer.startActiveSpan('work', async (span) => {
    for (let r = 1; r <= rounds; r++) {
      await tick();
      spin(2);
      if (r === hold) {
        const sc = trace.getActiveSpan().spanContext();
        fs.appendFileSync(process.env.MARKER_FILE, `hold ${id} ${sc.traceId} ${sc.spanId} ${rootId}\n`);
        const release = path.join(process.env.RELEASE_DIR, String(id));
        const end = Date.now() + 20000;
        while (!fs.existsSync(release) && Date.now() < end) spin(1);
      }
    }
    span.end();
  });
}

let stats = null;
if (proflink.active) {
  const koffi = req('koffi');
  const getStats = koffi.load(proflink.libraryPath).func('int proflink_get_stats(void *out, size_t size)');
  stats = () => {
    const b = Buffer.alloc(24);
    getStats(b, 24);
    return `messages_received=${b.readBigUInt64LE(0)} correlations=${b.readBigUInt64LE(8)} registrations=${b.readBigUInt64LE(16)}`;
  };
}

const server = http.createServer(async (request, res) => {
  const url = new URL(request.url, 'http://localhost');
  const q = (k, d) => Number(url.searchParams.get(k) || d);
  if (url.pathname === '/flush') {
    await provider.forceFlush();
    return res.end('flushed\n');
  }
  if (url.pathname === '/stats') return res.end((stats ? stats() : 'none') + '\n');
  const sampled = url.searchParams.get('sampled') !== '0';
  const name = url.pathname === '/fs' ? 'fs' : `request ${q('id', 0)}`;
  tracer.startActiveSpan(name, { kind: SpanKind.SERVER, attributes: { 'test.sampled': sampled } }, async (root) => {
    if (url.pathname === '/fs') {
      const text = await fs.promises.readFile(__filename, 'utf8');
      res.end(`fs ${text.length > 0}\n`);
    } else {
      await work(q('id', 0), q('rounds', 5), q('hold', 0), root.spanContext().spanId);
      res.end(`done ${q('id', 0)}\n`);
    }
    root.end();
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.error(`listening ${process.pid}`));
process.on('SIGTERM', () => provider.shutdown().finally(() => process.exit(0)));
