// The HTTP/2 clients of the HTTP matrix (tests/http_matrix.py): CONNS plaintext prior-knowledge
// connections to 127.0.0.1:PORT, each keeping STREAMS requests `GET /work?ms=MS` in flight, every
// one with its own random traceparent, until SECONDS have passed. Prints "errors N" at the end
// (the first error's message on stderr). PAD: a header `x-pad` of that many bytes in every request
// (20000: a header block over 16 KiB, sent as HEADERS and CONTINUATION frames).
// node http2_client.js PORT CONNS STREAMS SECONDS MS [PAD]
'use strict';
const http2 = require('http2');
const crypto = require('crypto');

const [port, conns, streams, seconds, ms, pad] = process.argv.slice(2).map(Number);
const padding = pad ? { 'x-pad': '~'.repeat(pad) } : {};
const deadline = Date.now() + seconds * 1000;
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

function loop(session) {
  running++;
  const next = () => {
    if (Date.now() >= deadline) return finish();
    const req = session.request({ ':path': `/work?ms=${ms}`,
                                  traceparent: `00-${hex(16)}-${hex(8)}-01`, ...padding });
    req.on('error', (e) => { if (errors++ === 0) console.error(e.message); finish(); });
    req.resume();
    req.on('end', next);
    req.end();
  };
  next();
}

const sessions = [];
for (let i = 0; i < conns; i++) {
  const s = http2.connect(`http://127.0.0.1:${port}`);
  s.on('error', (e) => { if (errors++ === 0) console.error(e.message); });
  sessions.push(s);
  for (let j = 0; j < streams; j++) loop(s);
}
setTimeout(() => { console.log(`errors ${errors + running}`); process.exit(0); },
           (seconds + 20) * 1000).unref();
