'use strict';
// HTTP requests with 2 ms of CPU each. `server MODE PORT`: a traced server, MODE "proflink"
// (ProflinkContextManager + ProflinkSpanProcessor) or "sdk" (the SDK alone). `client PORT
// SECONDS`: keep-alive requests from 4 connections for SECONDS; prints "requests_per_s N".
const http = require('http');
const { req, dir } = require('./pkg');
const [role, a, b] = process.argv.slice(2);
const CPU_MS = 2;
const CONNECTIONS = 4;

if (role === 'server') {
  const { trace, SpanKind } = req('@opentelemetry/api');
  const { NodeTracerProvider } = req('@opentelemetry/sdk-trace-node');
  const { SimpleSpanProcessor } = req('@opentelemetry/sdk-trace-base');
  const { AsyncLocalStorageContextManager } = req('@opentelemetry/context-async-hooks');
  const { ProflinkContextManager, ProflinkSpanProcessor } = req(dir);
  const exporter = { export: (spans, done) => done({ code: 0 }), shutdown: async () => {} };
  const inner = new SimpleSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ spanProcessors: [a === 'proflink' ? new ProflinkSpanProcessor(inner) : inner] });
  provider.register({ contextManager: a === 'proflink' ? new ProflinkContextManager() : new AsyncLocalStorageContextManager() });
  const tracer = trace.getTracer('bench');
  const tick = () => new Promise((r) => setImmediate(r));
  http.createServer((request, res) => {
    tracer.startActiveSpan('GET', { kind: SpanKind.SERVER }, async (root) => {
      for (let i = 0; i < 2; i++) {
        await tracer.startActiveSpan('work', async (s) => {
          const end = process.hrtime.bigint() + BigInt(CPU_MS * 1e6 / 2);
          while (process.hrtime.bigint() < end);
          await tick();
          s.end();
        });
      }
      res.end('ok');
      root.end();
    });
  }).listen(Number(b), '127.0.0.1', () => console.log('listening'));
} else {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const until = Date.now() + Number(b) * 1000;
  let done = 0;
  const one = () => new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: Number(a), path: '/', agent }, (res) => {
      res.resume();
      res.on('end', resolve);
    }).on('error', reject);
  });
  const worker = async () => {
    while (Date.now() < until) {
      await one();
      done++;
    }
  };
  const t0 = Date.now();
  Promise.all(Array.from({ length: CONNECTIONS }, worker)).then(() => {
    console.log(`requests_per_s ${(done / ((Date.now() - t0) / 1000)).toFixed(1)}`);
    agent.destroy();
  });
}
