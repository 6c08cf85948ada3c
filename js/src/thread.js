// `QuotaEngine`: the Node bridge's engine in a worker thread, so that a call can have a deadline. A
// guest that never returns cannot be stopped on the thread that runs it; here the caller waits for
// the answer at most the hosting contract's call deadline, then terminates the thread (its SQLite
// connection closes, the open transaction is rolled back) and starts a fresh one on the same file.
// Calls stay synchronous: the caller blocks on a shared cell the thread sets with each answer.
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';

import { ConfigError, EngineError, QuotaError, StorageError } from './core.js';

const entry = new URL('./engine-thread.js', import.meta.url);
/** How long a thread may take to open its database and start the engine. */
const START_MS = 120_000;

function revive(e) {
  switch (e.name) {
    case 'StorageError': return new StorageError(e.kind, e.message, { transient: e.transient, httpStatus: e.httpStatus });
    case 'QuotaError': return new QuotaError(e.kind, e.message);
    case 'ConfigError': return new ConfigError(e.problems);
    case 'EngineError': return new EngineError(e.message);
    case 'RangeError': return new RangeError(e.message);
    case 'TypeError': return new TypeError(e.message);
    default: return Object.assign(new Error(e.message), { name: e.name });
  }
}

/**
 * The engine over a SQLite file (or `:memory:`, whose data goes with a stopped thread), every call
 * one transaction in a worker thread, stopped at the call deadline (`callDeadlineMs`, the hosting
 * contract's unless given). Options: `durability`, `busyTimeoutMs`, `callDeadlineMs`, and for
 * tests `component: {dir, module}` (another transpiled component: its directory and JS module URL).
 */
export class QuotaEngine {
  constructor(path, values, options = {}) {
    this.path = path;
    this.options = options;
    this.values = values;
    this.start();
  }

  start() {
    const { component, callDeadlineMs, ...options } = this.options;
    this.cell = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const workerData = { port: port2, cell: this.cell.buffer, path: this.path, values: this.values, options, component: component && { dir: component.dir, module: String(component.module) } };
    // The thread runs a module file: a flag for the main script's own kind (`--input-type`) would stop it.
    const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
    this.worker = new Worker(entry, { workerData, transferList: [port2], execArgv });
    this.worker.unref();
    const r = this.receive(START_MS);
    if (r === null || r.error) {
      this.worker.terminate();
      throw r ? revive(r.error) : new EngineError(`the engine thread did not start within ${START_MS} ms`);
    }
    ({ migration: this.migration, summary: this.summary } = r.value);
    this.deadlineMs = callDeadlineMs ?? r.value.callDeadlineMs;
  }

  receive(ms) {
    if (Atomics.wait(this.cell, 0, 0, ms) === 'timed-out') return null;
    Atomics.store(this.cell, 0, 0);
    return receiveMessageOnPort(this.port)?.message ?? null;
  }

  call(method, ...args) {
    this.port.postMessage({ method, args });
    const r = this.receive(this.deadlineMs);
    if (r === null) {
      this.worker.terminate();
      this.start();
      throw new EngineError(`the engine call ran past its deadline (${this.deadlineMs} ms); it was stopped and changed nothing`);
    }
    if (r.error) throw revive(r.error);
    return r.value;
  }

  configure(values) {
    this.summary = this.call('configure', values);
    this.values = values;
    return this.summary;
  }

  migrate() { return this.call('migrate'); }
  handleRequest(req, now) { return this.call('handleRequest', req, now); }
  checkStart(req, now) { return this.call('checkStart', req, now); }
  endSession(req, now) { return this.call('endSession', req, now); }
  cleanupStale(now) { return this.call('cleanupStale', now); }
  adminUpdate(username, action, value, opts, now) { return this.call('adminUpdate', username, action, value, opts, now); }
  refresh(body, now) { return this.call('refresh', body, now); }
  parseQuotaInput(field, text) { return this.call('parseQuotaInput', field, text); }
  estimateCost(accelerator, runtimeMinutes) { return this.call('estimateCost', accelerator, runtimeMinutes); }
  refreshPreview(body, users) { return this.call('refreshPreview', body, users); }

  close() {
    try {
      this.call('close');
    } finally {
      this.worker.terminate();
    }
  }
}
