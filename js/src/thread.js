// `QuotaEngine`: the Node bridge's engine in a worker thread, so that a call can have a deadline. A
// guest that never returns cannot be stopped on the thread that runs it; here the caller waits for
// the answer at most the hosting contract's call deadline, then terminates the thread (its SQLite
// connection closes, the open transaction is rolled back) and starts a fresh one on the same file.
// Calls stay synchronous: call and answer go through a shared buffer (the port when they do not fit),
// each side waiting on a shared cell for the other.
import { deserialize, serialize } from 'node:v8';
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';

import { ConfigError, EngineError, QuotaError, StorageError } from './component.js';

const entry = new URL('./engine-thread.js', import.meta.url);
/** How long a thread may take to load the engine (compile the component): the one wait of the host's
 * own, since nothing can read the contract before. The rest of the start (set-up, migration,
 * configuration) is the contract's `startDeadlineMs`. */
const LOAD_MS = 120_000;
/** Calls and answers up to this size go through shared memory; larger ones through the port. */
const SHARED_BYTES = 1 << 20;
/** Looks at the answer cell before sleeping on it (about 100 us). */
const SPIN_LOOKS = 400_000;

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
    // ctl: [0] a call is ready, [1] an answer is ready, [2] the call's size, [3] the answer's (-1: on the port).
    const shared = new SharedArrayBuffer(16 + SHARED_BYTES);
    this.ctl = new Int32Array(shared, 0, 4);
    this.data = new Uint8Array(shared, 16);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const workerData = { port: port2, shared, path: this.path, values: this.values, options, component: component && { dir: component.dir, module: String(component.module) } };
    // The thread runs a module file: a flag for the main script's own kind (`--input-type`) would stop it.
    const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
    this.worker = new Worker(entry, { workerData, transferList: [port2], execArgv });
    this.worker.unref();
    let r = this.receive(LOAD_MS);
    let waited = `the engine thread did not load the component within ${LOAD_MS} ms`;
    if (r?.value?.loaded) {
      // Loaded: set-up, migration and configuration now, within the contract's deadlines.
      const ms = r.value.startDeadlineMs;
      waited = `the engine thread did not open its database within ${ms} ms`;
      Atomics.store(this.ctl, 0, 1);
      Atomics.notify(this.ctl, 0);
      r = this.receive(ms);
    }
    if (r === null || r.error) {
      this.worker.terminate();
      throw r ? revive(r.error) : new EngineError(waited);
    }
    ({ migration: this.migration, summary: this.summary } = r.value);
    this.deadlineMs = callDeadlineMs ?? r.value.callDeadlineMs;
  }

  receive(ms) {
    // Most calls answer within tens of microseconds, less than waking a sleeping thread costs on a
    // virtual machine: look for the answer for a moment before sleeping on the cell.
    for (let i = 0; i < SPIN_LOOKS && Atomics.load(this.ctl, 1) === 0; i++);
    // A wake-up is not an answer: the thread may notify late (preempted between its store and its
    // notify, the answer long read and the next call already in the buffer). Only the cell says.
    const end = performance.now() + ms;
    while (Atomics.load(this.ctl, 1) === 0) {
      const left = end - performance.now();
      if (left <= 0) return null;
      Atomics.wait(this.ctl, 1, 0, left);
    }
    Atomics.store(this.ctl, 1, 0);
    return this.ctl[3] < 0 ? receiveMessageOnPort(this.port).message : deserialize(this.data.subarray(0, this.ctl[3]));
  }

  call(method, ...args) {
    const bytes = serialize({ method, args });
    if (bytes.length <= this.data.length) {
      this.data.set(bytes);
      this.ctl[2] = bytes.length;
    } else {
      this.port.postMessage({ method, args });
      this.ctl[2] = -1;
    }
    Atomics.store(this.ctl, 0, 1);
    Atomics.notify(this.ctl, 0);
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
  replaceMemberships(users, complete, now) { return this.call('replaceMemberships', users, complete, now); }
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
