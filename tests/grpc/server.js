// An unmodified gRPC server in Node (@grpc/grpc-js, plaintext HTTP/2) for the HTTP matrix
// (tests/http_matrix.py); it knows nothing of proflink. The unary method /matrix.Work/Run takes
// the milliseconds of CPU to burn as its request message (decimal text) and logs the work itself
// from its own reading of the call's metadata: "w <tid> <start ns> <end ns> <trace id or ->" to
// LOG. node server.js LOG — prints "port N" (kernel-picked, 127.0.0.1).
'use strict';
const grpc = require('@grpc/grpc-js');
const fs = require('fs');

const log = fs.openSync(process.argv[2], 'a');
const bytes = { serialize: (b) => b, deserialize: (b) => b };
const service = {
  run: {
    path: '/matrix.Work/Run', requestStream: false, responseStream: false,
    requestSerialize: bytes.serialize, requestDeserialize: bytes.deserialize,
    responseSerialize: bytes.serialize, responseDeserialize: bytes.deserialize,
  },
};

function run(call, done) {
  const tp = String(call.metadata.get('traceparent')[0] || '').trim().split('-');
  const trace = tp.length === 4 && tp[1].length === 32 ? tp[1] : '-';
  const ms = Number(call.request.toString()) || 0;
  const start = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  for (;;) {
    const c = process.cpuUsage(cpu0);
    if (c.user + c.system >= ms * 1000) break;
  }
  const end = process.hrtime.bigint();
  // the JavaScript thread is the main thread: its tid is the process id
  fs.writeSync(log, `w ${process.pid} ${start} ${end} ${trace}\n`);
  done(null, Buffer.from('ok'));
}

const server = new grpc.Server();
server.addService(service, { run });
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  console.log(`port ${port}`);
});
