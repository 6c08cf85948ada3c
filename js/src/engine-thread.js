// The worker-thread side of `QuotaEngine` (src/thread.js): one `LocalEngine`, one call at a time.
// The thread waits on a shared cell for a call, runs it, writes the answer into the shared buffer
// (or posts it on the port when it does not fit) and wakes the caller. It never returns to its event
// loop: a call costs two futex wake-ups, not two trips through event loops.
import { format } from 'node:util';
import { deserialize, serialize } from 'node:v8';
import { receiveMessageOnPort, workerData } from 'node:worker_threads';

import { writeAll } from './blocking-write.js';
import { LocalEngine } from './node.js';

// A worker's console goes through its parent's event loop, which is blocked while it waits for an
// answer: enough output (a debugging log) would stall both. Written to the file descriptors here,
// waiting while a pipe is full (src/blocking-write.js).
for (const [name, fd] of [['log', 1], ['info', 1], ['debug', 1], ['warn', 2], ['error', 2]]) {
  console[name] = (...args) => writeAll(fd, `${format(...args)}\n`);
}

const { port, shared, path, values, options, component } = workerData;
const ctl = new Int32Array(shared, 0, 4);
const data = new Uint8Array(shared, 16);

/** Sleeps until the caller has set `ctl[0]`: a wake-up alone may be a late one for an earlier call. */
function awaitCall() {
  while (Atomics.load(ctl, 0) === 0) Atomics.wait(ctl, 0, 0);
  Atomics.store(ctl, 0, 0);
}

function reply(msg) {
  const bytes = serialize(msg);
  if (bytes.length <= data.length) {
    data.set(bytes);
    ctl[3] = bytes.length;
  } else {
    port.postMessage(msg);
    ctl[3] = -1;
  }
  Atomics.store(ctl, 1, 1);
  Atomics.notify(ctl, 1);
}

function plain(e) {
  return { name: e?.name ?? 'Error', message: e?.message ?? String(e), kind: e?.kind, problems: e?.problems, transient: e?.transient, httpStatus: e?.httpStatus };
}

let engine = null;
try {
  const other = component ? { component: { dir: component.dir, instantiate: (await import(component.module)).instantiate } } : {};
  // Once loaded, the caller learns how long the rest of the start may take (from the contract) and
  // says it has read that before this thread goes on.
  const loaded = (contract) => {
    reply({ value: { loaded: true, startDeadlineMs: contract.startDeadlineMs(options.busyTimeoutMs) } });
    awaitCall();
  };
  engine = new LocalEngine(path, values, { ...options, ...other, loaded });
  reply({ value: { migration: engine.migration, summary: engine.summary, callDeadlineMs: engine.contract.callDeadlineMs } });
} catch (e) {
  reply({ error: plain(e) });
}

for (;;) {
  // The next call often follows at once (a queue of work): look for it a moment before sleeping.
  for (let i = 0; i < 20_000 && Atomics.load(ctl, 0) === 0; i++);
  awaitCall();
  try {
    const { method, args } = ctl[2] < 0 ? receiveMessageOnPort(port).message : deserialize(data.subarray(0, ctl[2]));
    reply({ value: engine[method](...args) });
  } catch (e) {
    reply({ error: plain(e) });
  }
}
