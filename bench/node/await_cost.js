'use strict';
// Cost of one `await` inside an active span, with the context manager given as argument:
// "proflink" (ProflinkContextManager) or "als" (the SDK's AsyncLocalStorageContextManager).
// Prints "await_ns N" (median of rounds).
const { req, dir } = require('./pkg');
const { trace } = req('@opentelemetry/api');
const { BasicTracerProvider } = req('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = req('@opentelemetry/context-async-hooks');
const { ProflinkContextManager, ProflinkSpanProcessor } = req(dir);

const mode = process.argv[2];
const N = 200000;
const ROUNDS = 5;
const noop = { onStart() {}, onEnd() {}, forceFlush: async () => {}, shutdown: async () => {} };
const provider = new BasicTracerProvider({
  spanProcessors: [mode === 'proflink' ? new ProflinkSpanProcessor(noop) : noop],
});
trace.setGlobalTracerProvider(provider);
const cm = (mode === 'proflink' ? new ProflinkContextManager() : new AsyncLocalStorageContextManager()).enable();
req('@opentelemetry/api').context.setGlobalContextManager(cm);
const tracer = trace.getTracer('bench');

async function loop() {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await null;
  return Number(process.hrtime.bigint() - t) / N;
}
(async () => {
  const res = [];
  for (let r = 0; r <= ROUNDS; r++) {
    res.push(await tracer.startActiveSpan('s', async (span) => {
      const ns = await loop();
      span.end();
      return ns;
    }));
  }
  res.shift(); // warm-up
  console.log(`await_ns ${res.sort((x, y) => x - y)[res.length >> 1].toFixed(1)}`);
})();
