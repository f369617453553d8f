'use strict';
// set+clear of the JS thread's context from Node through koffi: the one-buffer
// proflink_set_context against the three-pointer proflink_set_trace + proflink_clear_trace.
// Prints "one_buffer_ns N" (as the integration calls it: the buffer's address), "one_buffer_
// object_ns N" (the Buffer itself) and "three_pointer_ns N" (median of interleaved rounds).
const { req, dir } = require('./pkg');
const { native, addressOf } = req(dir + '/lib/native.js');
if (!native) {
  console.error('proflink is not preloaded');
  process.exit(2);
}
const N = 200000;
const ROUNDS = 5;
const ctx = Buffer.allocUnsafeSlow(40).fill(0);
ctx.write('0af7651916cd43dd8448eb211c80319cb7ad6b7169203331b7ad6b716920333101', 'hex');
const trace = ctx.subarray(0, 16);
const span = ctx.subarray(16, 24);
const tx = ctx.subarray(24, 32);

const at = addressOf(ctx);

function oneBuffer() {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    native.setContextAt(at);
    native.setContextAt(0);
  }
  return Number(process.hrtime.bigint() - t) / N;
}
function oneBufferObject() {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    native.setContext(ctx);
    native.setContext(null);
  }
  return Number(process.hrtime.bigint() - t) / N;
}
function threePointer() {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    native.setTrace(trace, span, tx, 1);
    native.clearTrace();
  }
  return Number(process.hrtime.bigint() - t) / N;
}
const median = (a) => a.sort((x, y) => x - y)[a.length >> 1];
oneBuffer();
oneBufferObject();
threePointer(); // warm-up (JIT, koffi's call stubs)
const a = [];
const o = [];
const b = [];
for (let r = 0; r < ROUNDS; r++) {
  a.push(oneBuffer());
  o.push(oneBufferObject());
  b.push(threePointer());
}
console.log(`one_buffer_ns ${median(a).toFixed(1)}`);
console.log(`one_buffer_object_ns ${median(o).toFixed(1)}`);
console.log(`three_pointer_ns ${median(b).toFixed(1)}`);
