// An unmodified Node http server for the HTTP matrix (tests/http_matrix.py); it knows nothing
// of proflink. Each request `GET /work?ms=N` burns N ms of CPU, logged by the server itself from
// its own parsing of the request: "w <tid> <start ns> <end ns> <trace id or ->" to LOG.
// node http_matrix_node.js sync|immediate|timeout|h2_sync|h2_immediate LOG — prints "port N"
// (kernel-picked, 127.0.0.1). sync: the work runs in the request handler; immediate: after
// setImmediate; timeout: in a 1 ms timer; h2_*: the same on an HTTP/2 server (plaintext, prior
// knowledge: http2.createServer).
'use strict';
const http = require('http');
const http2 = require('http2');
const fs = require('fs');

const [mode, logPath] = process.argv.slice(2);
const log = fs.openSync(logPath, 'a');

function work(req, res) {
  const tp = (req.headers.traceparent || '').trim().split('-');
  const trace = tp.length === 4 && tp[1].length === 32 ? tp[1] : '-';
  const ms = Number((req.url.split('?ms=')[1]) || 0);
  const start = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  let x = 0;
  for (;;) {
    const c = process.cpuUsage(cpu0);
    if (c.user + c.system >= ms * 1000) break;
    x++;
  }
  const end = process.hrtime.bigint();
  // the JavaScript thread is the main thread: its tid is the process id
  fs.writeSync(log, `w ${process.pid} ${start} ${end} ${trace}\n`);
  // no date: tests/http2_hostile.py compares answers byte for byte
  if (h2) res.sendDate = false;
  res.writeHead(200, { 'Content-Length': '2' });
  res.end('ok');
}

const h2 = mode.startsWith('h2_');
const server = (h2 ? http2 : http).createServer((req, res) => {
  req.resume();
  if (mode.endsWith('immediate')) setImmediate(() => work(req, res));
  else if (mode === 'timeout') setTimeout(() => work(req, res), 1);
  else work(req, res);
});
if (!h2) server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(`port ${server.address().port}`));
