// The Node bridge itself: transactions, storage errors, traps, bulk writes, typed calls.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import Database from 'better-sqlite3';

import { ConfigError, EngineError, LocalEngine, QuotaEngine, QuotaError, SqliteBridge, StorageError } from '../src/node.js';

const here = dirname(fileURLToPath(import.meta.url));
const VALUES = { custom: { authMode: 'github', quota: { defaultQuota: 50 } } };
const ADMIN = { name: 'admin', admin: true };
const HUB = { name: 'hub', scopes: ['quota:sessions'] };
const T0 = 1_795_000_000;
const tmp = () => join(mkdtempSync(join(tmpdir(), 'quota-js-')), 'q.db');

const start = (e, user, now = T0) =>
  e.handleRequest({ method: 'POST', path: '/api/quota/sessions', body: JSON.stringify({ username: user, runtime_minutes: 5 }), caller: HUB }, now);

function balance(path, user) {
  const d = new Database(path);
  try {
    return d.prepare('SELECT balance FROM users WHERE username = ?').pluck().get(user) ?? null;
  } finally {
    d.close();
  }
}

test('a file is migrated once; a second engine on it sees the first one’s writes', () => {
  const db = tmp();
  const a = new QuotaEngine(db, VALUES);
  assert.deepEqual(a.migration, { from: 0, to: 12 });
  assert.equal(start(a, 'alice').status, 201);
  const b = new QuotaEngine(db, VALUES);
  assert.deepEqual(b.migration, { from: 12, to: 12 });
  assert.equal(JSON.parse(b.handleRequest({ method: 'GET', path: '/api/quota/me', caller: { name: 'alice' } }, T0).body).balance, 50);
  assert.equal(new Database(db).pragma('journal_mode', { simple: true }), 'wal');
});

test('configuration errors name their keys and keep the old configuration', () => {
  const e = new QuotaEngine(':memory:', VALUES);
  assert.throws(() => e.configure({ custom: { authMode: 'github', quota: { cpuRate: 'fast' } } }), (err) => {
    assert.ok(err instanceof ConfigError);
    assert.deepEqual(err.problems.map((p) => p.field), ['custom.quota.cpuRate']);
    return true;
  });
  assert.equal(start(e, 'bob').status, 201);
});

test("the summary carries the engine's settings for hosts, from the values and the engine's bounds", () => {
  for (const E of [LocalEngine, QuotaEngine]) {
    const e = new E(':memory:', { custom: { authMode: 'github', quota: { defaultQuota: 1000, defaultRuntimeMinutes: 45, liveStreamsPerUser: 3, onStorageError: 'allow' } } });
    try {
      const s = e.summary.settings;
      assert.deepEqual([s.defaultRuntimeMinutes, s.liveStreamsPerUser, s.onStorageError], [45, 3, 'allow'], E.name);
      assert.ok(s.runtimeMinutesMin >= 1 && s.runtimeMinutesMax > s.defaultRuntimeMinutes, JSON.stringify(s));
      // The gate refuses just past the bound the summary gives, and takes the bound itself.
      const ask = (m) => e.handleRequest({ method: 'POST', path: '/api/quota/sessions', caller: HUB,
        body: JSON.stringify({ username: 'ann', runtime_minutes: m, server_name: String(m) }) }, T0).status;
      assert.deepEqual([ask(s.runtimeMinutesMax + 1), ask(s.runtimeMinutesMax)], [400, 201], E.name);
      assert.ok(s.extendChoices.length > 0 && s.warnBeforeStopMinutes.length > 0 && s.sweepIntervalSeconds > 0, E.name);
    } finally {
      e.close();
    }
  }
});

test('engines in several processes opening one new file at once all come up in WAL', async () => {
  // The switch to WAL on a new file answers busy at once to all but one; the bridge retries it.
  const { spawn } = await import('node:child_process');
  const node = join(here, '..', 'src', 'node.js');
  const opener = `import { SqliteBridge, hostingContract } from ${JSON.stringify(node)};
    const contract = hostingContract();
    new SqliteBridge(':memory:').setUp(contract); // loads the driver before the start line
    const at = Number(process.argv[2]); while (Date.now() < at) {}
    const b = new SqliteBridge(process.argv[1]);
    b.setUp(contract);
    process.stdout.write(b.conn.pragma('journal_mode', { simple: true }));`;
  for (let round = 0; round < 8; round++) {
    const path = tmp();
    const at = String(Date.now() + 400);
    const outs = await Promise.all(Array.from({ length: 5 }, () => new Promise((done) => {
      const p = spawn(process.execPath, ['--input-type=module', '-e', opener, path, at]);
      let out = '';
      p.stdout.on('data', (d) => { out += d; });
      p.stderr.on('data', (d) => { out += d; });
      p.on('close', () => done(out));
    })));
    assert.deepEqual(outs, Array(5).fill('wal'));
  }
});

test('a connection is set up with the wait and durability it was opened with (the contract’s unless given)', () => {
  const plain = new LocalEngine(tmp(), VALUES);
  const pragma = (e, name) => e.db.conn.pragma(name, { simple: true });
  assert.equal(pragma(plain, 'busy_timeout'), plain.contract.busyWaitMs);
  assert.equal(pragma(plain, 'synchronous'), 2, 'FULL');
  const chosen = new LocalEngine(tmp(), VALUES, { busyTimeoutMs: 1234, durability: 'normal' });
  assert.equal(pragma(chosen, 'busy_timeout'), 1234);
  assert.equal(pragma(chosen, 'synchronous'), 1, 'NORMAL');
  assert.equal(pragma(chosen, 'journal_mode'), 'wal');
  // A thread's start waits as long as the contract allows for the set-up, migration and configuration.
  assert.ok(chosen.contract.startDeadlineMs(1234) >= chosen.contract.migrationDeadlineMs + chosen.contract.callDeadlineMs + 1234);
});

test('a busy database fails the call as busy and changes nothing', () => {
  const db = tmp();
  const e = new QuotaEngine(db, VALUES, { busyTimeoutMs: 50 });
  const other = new Database(db);
  other.exec('BEGIN IMMEDIATE');
  try {
    assert.throws(() => start(e, 'alice'), (err) => err instanceof StorageError && err.busy);
  } finally {
    other.exec('ROLLBACK');
    other.close();
  }
  assert.equal(balance(db, 'alice'), null);
  assert.equal(start(e, 'alice').status, 201);
});

test('a constraint failure rolls the whole call back', () => {
  const db = tmp();
  const e = new QuotaEngine(db, VALUES);
  const d = new Database(db);
  d.exec("CREATE TRIGGER no_audit BEFORE INSERT ON transactions BEGIN SELECT RAISE(ABORT, 'audit refused'); END");
  d.close();
  assert.throws(
    () => e.handleRequest({ method: 'POST', path: '/admin/api/quota/users/bob', body: '{"action":"set","amount":7}', caller: ADMIN }, T0),
    (err) => err instanceof StorageError && err.kind === 'constraint' && /audit refused/.test(err.message),
  );
  assert.equal(balance(db, 'bob'), null);
  const d2 = new Database(db);
  d2.exec('DROP TRIGGER no_audit');
  d2.close();
  assert.equal(start(e, 'dan').status, 201, 'no transaction was left open');
});

const faultDir = join(here, '..', 'gen-fault');
test('a trap after a write rolls back and a fresh, configured instance goes on', async () => {
  assert.ok(existsSync(faultDir), 'gen-fault/ is missing: run `bash scripts/build-wasm.sh --fault` and `npm run build`');
  const db = tmp();
  const e = new QuotaEngine(db, VALUES, { component: fault });
  assert.throws(() => e.handleRequest({ method: 'POST', path: '/__fault/trap-after-write', caller: ADMIN }, T0), EngineError);
  assert.equal(balance(db, 'fault-written'), null);
  assert.equal(JSON.parse(start(e, 'alice').body).balance, 50);
});

const fault = { dir: faultDir, module: pathToFileURL(join(faultDir, 'quota-engine.js')) };
test('a runaway guest is stopped at the call deadline; its thread is replaced and nothing it wrote is kept', () => {
  const db = tmp();
  const e = new QuotaEngine(db, VALUES, { component: fault, callDeadlineMs: 500 });
  assert.equal(start(e, 'alice').status, 201);
  assert.throws(() => e.handleRequest({ method: 'POST', path: '/__fault/spin', caller: ADMIN }, T0), (err) => err instanceof EngineError && /deadline/.test(err.message));
  assert.equal(start(e, 'bob').status, 201, 'the fresh thread serves the same file');
  assert.equal(balance(db, 'alice'), 50);
  e.close();
});

/** A bridge whose writes fail as `conflict` (as PostgreSQL's serialization failures do) `times` times. */
class Conflicting extends SqliteBridge {
  constructor(path, times) {
    super(path);
    this.left = times;
  }

  query(sql, params) {
    if (this.left > 0 && /^\s*(INSERT|UPDATE)/i.test(sql)) {
      this.left -= 1;
      throw this.contract.failed('conflict', 'injected: could not serialize access');
    }
    return super.query(sql, params);
  }
}

test('a conflict that clears is retried as the contract says; one that never clears is a typed busy, retry', () => {
  const db = tmp();
  const retried = new LocalEngine(db, VALUES, { bridge: new Conflicting(db, 0) });
  retried.db.left = 3;
  assert.equal(start(retried, 'alice').status, 201);
  assert.equal(retried.conflictsRetried, 3);
  const stuck = new LocalEngine(db, VALUES, { bridge: new Conflicting(db, 0) });
  stuck.db.left = Infinity;
  assert.throws(() => start(stuck, 'bob'), (err) => err instanceof StorageError && err.kind === 'conflict' && err.transient && err.httpStatus === 503);
  assert.equal(stuck.conflictsRetried, stuck.contract.retry.attempts);
  assert.equal(balance(db, 'bob'), null);
});

test('a refresh over more users than a write block keeps ids and order', () => {
  const db = tmp();
  const e = new QuotaEngine(db, VALUES);
  for (let i = 0; i < 37; i++) e.adminUpdate(`u${String(i).padStart(3, '0')}`, 'set', i, {}, T0);
  const r = e.refresh({ action: 'add', amount: 10, max_balance: 40, rule_name: 'bulk' }, T0 + 60);
  assert.equal(r.users_updated, 37);
  const d = new Database(db);
  const rows = d.prepare("SELECT id, username, balance_before, balance_after FROM transactions WHERE transaction_type = 'auto_refresh' ORDER BY id").raw().all();
  d.close();
  assert.deepEqual(rows.map((x) => x[1]), Array.from({ length: 37 }, (_, i) => `u${String(i).padStart(3, '0')}`));
  assert.deepEqual(rows.map((x) => x[0]), Array.from({ length: 37 }, (_, i) => 38 + i));
  assert.ok(rows.every(([, , b, a]) => a === Math.min(40, b + 10) || (b >= 40 && a === b)));
});

test('typed calls: gate, end by server, admin refusal', () => {
  const e = new QuotaEngine(':memory:', VALUES);
  const d = e.checkStart({ username: 'cy', runtimeMinutes: 5 }, T0);
  assert.equal(d.allowed.balance, 50);
  const end = e.endSession({ username: 'cy' }, T0 + 600);
  assert.deepEqual([end.status, end.durationMinutes, end.cost, end.balance], ['completed', 10, 10, 40]);
  assert.throws(() => e.adminUpdate('cy', 'deduct', 1000, {}, T0), (err) => err instanceof QuotaError && err.kind === 'insufficient-balance');
  assert.throws(() => e.checkStart({ username: 'cy', runtimeMinutes: 5 }, 2 ** 60), RangeError);
});

test('a typed refusal names the same top-up as the REST 403', () => {
  const values = { custom: { authMode: 'github', quota: { defaultQuota: 0, refreshRules: {
    daily: { enabled: true, schedule: '0 3 * * *', action: 'add', amount: 5, maxBalance: 5 },
    monthly: { enabled: true, schedule: '0 0 1 * *', action: 'add', amount: 100 } } } } };
  const e = new QuotaEngine(':memory:', values);
  const d = e.checkStart({ username: 'cy', runtimeMinutes: 30 }, T0);
  const rest = JSON.parse(e.handleRequest({ method: 'POST', path: '/api/quota/sessions', body: JSON.stringify({ username: 'cy', runtime_minutes: 30 }), caller: HUB }, T0).body);
  assert.equal(rest.error, d.refused.message);
  // The daily 5 is not enough for 30; the monthly 100 is.
  assert.equal(d.refused.nextRefresh.rule, 'monthly');
  assert.equal(d.refused.nextRefresh.balance, 105);
  assert.deepEqual(rest.next_refresh, { rule: 'monthly', at: new Date(d.refused.nextRefresh.at * 1000).toISOString().slice(0, 19), balance: 105 });
  // 480 credits: five monthly runs, the fifth brings 505.
  assert.equal(e.checkStart({ username: 'cy', runtimeMinutes: 480 }, T0).refused.nextRefresh.balance, 505);
});

test('typed calls with groups: a snapshot, a restricted accelerator, the reported groups', () => {
  const values = { custom: { authMode: 'github', quota: { defaultQuota: 50, groups: { lab: { accelerators: ['phx'] } } },
    accelerators: { phx: { quotaRate: 2 } } } };
  const e = new QuotaEngine(':memory:', values);
  assert.deepEqual(e.replaceMemberships([['Ann', ['lab']], ['bo', []]], true, T0), { changed: 1, users: 1 });
  assert.ok(e.checkStart({ username: 'ann', accelerator: 'phx', runtimeMinutes: 5 }, T0).allowed, 'stored: ann is in lab');
  const f = e.checkStart({ username: 'bo', accelerator: 'phx', runtimeMinutes: 5 }, T0);
  assert.match(f.forbidden.message, /^Cannot start container: accelerator `phx` \(phx\) is only for members of the groups lab\./);
  assert.ok(e.checkStart({ username: 'bo', accelerator: 'phx', runtimeMinutes: 5, groups: ['lab'] }, T0).allowed, 'reported');
  // Any order, repeats ignored, any iterable; then stored.
  assert.ok(e.checkStart({ username: 'cy', accelerator: 'phx', runtimeMinutes: 5, groups: new Set(['zz', 'lab']) }, T0).allowed);
  assert.ok(e.checkStart({ username: 'cy', accelerator: 'phx', runtimeMinutes: 5, serverName: 'b' }, T0).allowed, 'stored');
  // A bad name is named by its place in the list; a line break never splits a name in two.
  const invalid = (re) => (err) => err instanceof QuotaError && err.kind === 'invalid' && re.test(err.message);
  assert.throws(() => e.checkStart({ username: 'cy', runtimeMinutes: 5, serverName: 'c', groups: ['lab', 'x\ny'] }, T0),
    invalid(/^groups\[1\]: must not contain the control character '\\n'$/));
  assert.throws(() => e.checkStart({ username: 'cy', runtimeMinutes: 5, serverName: 'c', groups: ['zz', 'x\u0007', 'lab'] }, T0),
    invalid(/^groups\[1\]: must not contain the control character/));
  // Names are data: a path, spaces at either end.
  assert.ok(e.checkStart({ username: 'cy', runtimeMinutes: 5, serverName: 'e', groups: [' /course/101 ', 'lab'] }, T0).allowed);
  assert.throws(() => e.checkStart({ username: 'cy', runtimeMinutes: 5, serverName: 'c', groups: ['lab', 7] }, T0),
    invalid(/^groups\[1\]: must be a string$/));
  assert.ok(e.checkStart({ username: 'cy', runtimeMinutes: 5, serverName: 'c', groups: [] }, T0).allowed, 'in no group now');
  assert.ok(e.checkStart({ username: 'cy', accelerator: 'phx', runtimeMinutes: 5, serverName: 'd' }, T0).forbidden, 'stored: none');
  assert.throws(() => e.replaceMemberships([['ann', ['a\u0001b']]], false, T0), (err) => err instanceof QuotaError && /users\[0\]\.groups\[0\]/.test(err.message));
  e.close();
});

test('the engine thread\'s log waits while its pipe is full instead of failing with EAGAIN', async () => {
  // Node makes stdio pipes non-blocking; a parent that reads slowly fills one (CI saw EAGAIN from a
  // JCO_DEBUG log). A real FIFO, filled until the kernel refuses, then one line written from a thread
  // that says when its first attempt was refused, then drained: the line arrives whole, after the fill.
  const { execFileSync } = await import('node:child_process');
  const { Worker } = await import('node:worker_threads');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const nodePath = await import('node:path');
  const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), 'quota-pipe-'));
  const fifo = nodePath.join(dir, 'pipe');
  execFileSync('mkfifo', [fifo]);
  const { O_RDONLY, O_WRONLY, O_NONBLOCK } = fs.constants;
  const r = fs.openSync(fifo, O_RDONLY | O_NONBLOCK);
  const w = fs.openSync(fifo, O_WRONLY | O_NONBLOCK);
  const chunk = Buffer.alloc(4096, 'x');
  let filled = 0;
  for (;;) {
    try { filled += fs.writeSync(w, chunk); } catch (e) { assert.equal(e.code, 'EAGAIN'); break; }
  }
  const writer = new Worker(`const { workerData: { fd, module }, parentPort } = require('node:worker_threads');
    const { writeSync } = require('node:fs');
    import(module).then(({ writeAll }) => {
      let refused = 0;
      writeAll(fd, 'the whole line\\n', (f, b) => {
        try { return writeSync(f, b); } catch (e) { if (refused++ === 0) parentPort.postMessage('refused'); throw e; }
      });
      parentPort.postMessage(refused);
    });`, { eval: true, workerData: { fd: w, module: new URL('../src/blocking-write.js', import.meta.url).href } });
  const next = () => new Promise((resolve, reject) => {
    writer.once('message', resolve);
    writer.once('error', reject);
  });
  assert.equal(await next(), 'refused', 'the pipe was full when the line was first written');
  const read = [];
  const drain = () => {
    const buf = Buffer.alloc(65536);
    for (;;) {
      let n;
      try { n = fs.readSync(r, buf); } catch (e) { if (e.code === 'EAGAIN') return; throw e; }
      if (n === 0) return;
      read.push(Buffer.from(buf.subarray(0, n)));
    }
  };
  drain();
  const refusals = await next();
  drain();
  await writer.terminate();
  fs.closeSync(w);
  fs.closeSync(r);
  fs.rmSync(dir, { recursive: true });
  const all = Buffer.concat(read).toString();
  assert.ok(refusals >= 1, 'at least one refused attempt was retried');
  assert.equal(all.length, filled + 'the whole line\n'.length);
  assert.ok(all.endsWith('x'.repeat(10) + 'the whole line\n'), 'the line follows the fill, whole');
});

test('a wake-up that comes late or from elsewhere never hands either side the wrong bytes', async () => {
  // A thread preempted between storing its cell and notifying it wakes the other side late, when
  // the cell is already back to 0 and the buffer holds the next call. Another thread notifying
  // both cells without pause makes that the rule rather than a rare ordering: every answer must
  // still be the answer to its own call.
  const { Worker } = await import('node:worker_threads');
  const e = new QuotaEngine(':memory:', VALUES);
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const noise = new Worker(`const { workerData: { ctl, stop } } = require('node:worker_threads');
    const cells = new Int32Array(ctl, 0, 4);
    while (Atomics.load(stop, 0) === 0) { Atomics.notify(cells, 0); Atomics.notify(cells, 1); }`,
  { eval: true, workerData: { ctl: e.ctl.buffer, stop } });
  try {
    for (let i = 1; i <= 2000; i++) {
      const user = `u${i}`.padEnd(1 + (i % 97), 'x');
      const minutes = 1 + (i % 480);
      assert.equal(e.estimateCost(null, minutes).estimatedCost, minutes, `call ${i}: the cost of ${minutes} minutes`);
      const r = e.adminUpdate(user, 'set', i, {}, T0);
      assert.equal(r.balance, i, `call ${i}: ${user}'s new balance`);
    }
  } finally {
    Atomics.store(stop, 0, 1);
    await noise.terminate();
    e.close();
  }
});
