// The worker-thread side of `QuotaEngine` (src/thread.js): one `LocalEngine`, one call at a time.
// Each answer is posted on the port, then the shared cell is set and notified, so the caller,
// waiting on the cell with its deadline, finds the answer ready to take.
import { writeSync } from 'node:fs';
import { format } from 'node:util';
import { workerData } from 'node:worker_threads';

import { LocalEngine } from './node.js';

// A worker's console goes through its parent's event loop, which is blocked while it waits for an
// answer: enough output (jco's JCO_DEBUG log) would stall both. Written to the file descriptors here.
for (const [name, fd] of [['log', 1], ['info', 1], ['debug', 1], ['warn', 2], ['error', 2]]) {
  console[name] = (...args) => void writeSync(fd, `${format(...args)}\n`);
}

const { port, cell: buffer, path, values, options, component } = workerData;
const cell = new Int32Array(buffer);

function reply(msg) {
  port.postMessage(msg);
  Atomics.store(cell, 0, 1);
  Atomics.notify(cell, 0);
}

function plain(e) {
  return { name: e?.name ?? 'Error', message: e?.message ?? String(e), kind: e?.kind, problems: e?.problems, transient: e?.transient, httpStatus: e?.httpStatus };
}

let engine = null;
try {
  const other = component ? { component: { dir: component.dir, instantiate: (await import(component.module)).instantiate } } : {};
  engine = new LocalEngine(path, values, { ...options, ...other });
  reply({ value: { migration: engine.migration, summary: engine.summary, callDeadlineMs: engine.contract.callDeadlineMs } });
} catch (e) {
  reply({ error: plain(e) });
}

port.on('message', ({ method, args }) => {
  try {
    const value = engine[method](...args);
    reply({ value });
  } catch (e) {
    reply({ error: plain(e) });
  }
});
