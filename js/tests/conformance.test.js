// The host conformance suite (tests/conformance/faults.json), as the Node bridge meets it: storage
// faults through a wrapper around its own SQLite bridge, guest faults through the fault-injection
// component, every expectation as the file states it for every host.
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import Database from 'better-sqlite3';

import { EngineError, LocalEngine, QuotaEngine, SqliteBridge, StorageError, hostingContract } from '../src/node.js';

const here = dirname(fileURLToPath(import.meta.url));
const suite = JSON.parse(readFileSync(join(here, '..', '..', 'tests', 'conformance', 'faults.json'), 'utf8'));
const faultDir = join(here, '..', 'gen-fault');
const T0 = 1_795_000_000;
const tmp = () => join(mkdtempSync(join(tmpdir(), 'quota-conf-')), 'q.db');

/** Every row of the engine's tables (the hosting contract's list), in key order. */
function dump(path) {
  const d = new Database(path);
  try {
    return hostingContract().tables.map((t) => d.prepare(`SELECT ${t.columns.join(', ')} FROM ${t.name} ORDER BY ${t.key.join(', ')}`).raw().all());
  } finally {
    d.close();
  }
}

function balances(path, users) {
  const d = new Database(path);
  try {
    return Object.fromEntries(users.map((u) => [u, d.prepare('SELECT balance FROM users WHERE username = ?').pluck().get(u)]));
  } finally {
    d.close();
  }
}

const isWrite = (sql) => /^\s*(INSERT|UPDATE|DELETE)/i.test(sql);

/** The bridge with a storage fault: the `write`-th write of a run fails with `kind`, `times` runs. */
class Faulty extends SqliteBridge {
  plan(kind, write, times, run) {
    Object.assign(this, { kind, write, run, left: times === 'always' ? Infinity : times ?? 1, seen: 0, runs: 0 });
  }

  begin(write) {
    this.seen = 0;
    this.runs = (this.runs ?? 0) + 1;
    super.begin(write);
  }

  fault() {
    if (!this.kind || this.left <= 0 || (this.run && this.runs !== this.run)) return;
    this.seen += 1;
    if (this.seen !== this.write) return;
    this.left -= 1;
    throw this.contract.failed(this.kind, `injected: ${this.kind}`);
  }

  query(sql, params) {
    if (isWrite(sql)) this.fault();
    return super.query(sql, params);
  }

  executeMany(sql, rows) {
    this.fault();
    return super.executeMany(sql, rows);
  }
}

const send = (e, r) => e.handleRequest({ method: r.method, path: r.path, body: r.body ?? '', caller: r.caller }, T0);

for (const c of suite.cases) {
  const writes = Array.isArray(c.fault.write) ? c.fault.write : [c.fault.write];
  for (const write of writes) {
    test(`${c.name}${writes.length > 1 ? ` (write ${write})` : ''}`, () => {
      const db = tmp();
      const guest = c.fault.guest;
      const options = guest
        ? { component: { dir: faultDir, module: pathToFileURL(join(faultDir, 'quota-engine.js')) }, callDeadlineMs: c.fault.deadline_ms }
        : { bridge: new Faulty(db), refreshChunkUsers: c.chunk_users };
      const e = guest ? new QuotaEngine(db, suite.values, options) : new LocalEngine(db, suite.values, options);
      for (const r of c.before) assert.ok(send(e, r).status < 300, r.path);
      const before = dump(db);
      if (!guest) e.db.plan(c.fault.storage, write, c.fault.times, c.fault.run);
      const x = c.expect;
      let answer;
      let error = null;
      try {
        answer = send(e, c.request);
      } catch (err) {
        error = err;
      }
      if (x.error) {
        assert.ok(error instanceof StorageError, `expected a storage error, got ${error ?? JSON.stringify(answer)}`);
        assert.deepEqual([error.kind, error.transient, error.httpStatus], [x.error, x.transient, x.http_status]);
      } else if (x.engine_error) {
        assert.ok(error instanceof EngineError, `expected an engine error, got ${error ?? JSON.stringify(answer)}`);
      } else {
        assert.equal(error, null);
        assert.equal(answer.status, x.status, answer.body);
      }
      if (x.retries !== undefined) {
        const want = x.retries === 'contract' ? e.contract.retry.attempts : x.retries;
        assert.equal(e.conflictsRetried, want);
      }
      if (x.unchanged) assert.deepEqual(dump(db), before, 'the failed call left a write behind');
      if (x.balance) assert.deepEqual(balances(db, [x.balance[0]]), { [x.balance[0]]: x.balance[1] });
      if (x.balances) assert.deepEqual(balances(db, Object.keys(x.balances)), x.balances);
      if (c.then) {
        const r = send(e, c.then);
        assert.equal(r.status, c.then.status, r.body);
        for (const [k, v] of Object.entries(c.then.json ?? {})) assert.deepEqual(JSON.parse(r.body)[k], v, k);
        if (c.then.balances) assert.deepEqual(balances(db, Object.keys(c.then.balances)), c.then.balances);
      }
      e.close();
    });
  }
}
