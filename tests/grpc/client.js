// The gRPC clients of the HTTP matrix (tests/http_matrix.py): CONNS channels (one connection
// each) to 127.0.0.1:PORT, each keeping STREAMS unary calls /matrix.Work/Run (MS milliseconds of
// work) in flight, every call with its own random traceparent in its metadata, until SECONDS have
// passed. Prints "errors N" at the end (the first error's message on stderr).
// node client.js PORT CONNS STREAMS SECONDS MS
'use strict';
const grpc = require('@grpc/grpc-js');
const crypto = require('crypto');

const [port, conns, streams, seconds, ms] = process.argv.slice(2).map(Number);
const deadline = Date.now() + seconds * 1000;
const bytes = (b) => b;
let errors = 0;
let running = 0;

function hex(n) {
  let s;
  do s = crypto.randomBytes(n).toString('hex'); while (/^0+$/.test(s));
  return s;
}

function finish() {
  if (--running === 0) {
    console.log(`errors ${errors}`);
    process.exit(0);
  }
}

function loop(client) {
  running++;
  const next = () => {
    if (Date.now() >= deadline) return finish();
    const md = new grpc.Metadata();
    md.set('traceparent', `00-${hex(16)}-${hex(8)}-01`);
    client.makeUnaryRequest('/matrix.Work/Run', bytes, bytes, Buffer.from(String(ms)), md,
                            (err) => {
                              if (err) {
                                if (errors++ === 0) console.error(err.message);
                                return finish();
                              }
                              next();
                            });
  };
  next();
}

for (let i = 0; i < conns; i++) {
  // a channel of its own: its own connection (channels otherwise share one)
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(),
                                 { 'grpc.use_local_subchannel_pool': 1 });
  for (let j = 0; j < streams; j++) loop(client);
}
setTimeout(() => { console.log(`errors ${errors + running}`); process.exit(0); },
           (seconds + 20) * 1000).unref();
