// The spawn gate through the Node bridge: median microseconds per check-start (the hub's
// `POST /api/quota/sessions` through handle-request, and the typed export), each call its own
// transaction, over SQLite `:memory:` and a file with synchronous=FULL; beside the Rust host's figure
// for the same component in the same run. Prints figures; asserts nothing about time.
//
//   bash scripts/build-wasm.sh && (cd js && npm run build && npm run bench)
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { LocalEngine, QuotaEngine } from '../src/node.js';
import { REPO } from '../tests/support/scenarios.js';

const VALUES = { custom: { authMode: 'github', accelerators: { phx: { quotaRate: 2.5 } } } };
const HUB = { name: 'hub', scopes: ['quota:sessions'] };
const USERS = 200;
const ROUNDS = 10;
const T0 = 1_795_000_000;
const names = Array.from({ length: USERS }, (_, i) => `user${String(i).padStart(5, '0')}`);

const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];

function bench(db, typed, Engine = QuotaEngine) {
  const e = new Engine(db, VALUES);
  for (const n of names) e.adminUpdate(n, 'set', 10_000_000, {}, T0 - 60);
  const bodies = names.map((n) => JSON.stringify({ username: n, runtime_minutes: 60, resource_type: 'phx' }));
  const times = [];
  for (let r = 0; r < ROUNDS; r++) {
    const now = T0 + r * 7200;
    for (let i = 0; i < USERS; i++) {
      const t = process.hrtime.bigint();
      if (typed) {
        e.checkStart({ username: names[i], accelerator: 'phx', runtimeMinutes: 60 }, now);
      } else {
        const resp = e.handleRequest({ method: 'POST', path: '/api/quota/sessions', body: bodies[i], caller: HUB }, now);
        if (resp.status !== 201) throw new Error(resp.body);
      }
      times.push(Number(process.hrtime.bigint() - t) / 1000);
    }
    e.cleanupStale(now + 9 * 3600);
  }
  e.close();
  return median(times);
}

const dir = mkdtempSync(join(tmpdir(), 'quota-bench-'));
const mem = bench(':memory:', false);
const memTyped = bench(':memory:', true);
const file = bench(join(dir, 'q.db'), false);
const memLocal = bench(':memory:', false, LocalEngine);
const fileLocal = bench(join(dir, 'local.db'), false, LocalEngine);
console.log(`check-start through the Node bridge (jco, better-sqlite3; ${USERS} users x ${ROUNDS} rounds, median per call):`);
console.log('QuotaEngine (a worker thread, the call deadline):');
console.log(`  SQLite :memory:, REST request            ${mem.toFixed(1).padStart(8)} us`);
console.log(`  SQLite :memory:, typed export            ${memTyped.toFixed(1).padStart(8)} us`);
console.log(`  SQLite file, WAL, synchronous=FULL       ${file.toFixed(1).padStart(8)} us`);
console.log('LocalEngine (this thread, no deadline):');
console.log(`  SQLite :memory:, REST request            ${memLocal.toFixed(1).padStart(8)} us`);
console.log(`  SQLite file, WAL, synchronous=FULL       ${fileLocal.toFixed(1).padStart(8)} us`);
const rust = JSON.parse(
  execFileSync('cargo', ['bench', '-q', '--locked', '-p', 'quota-host', '--bench', 'component'], {
    cwd: REPO, env: { ...process.env, BENCH_PROFILE: 'gate' }, encoding: 'utf8',
  }).trim().split('\n').pop(),
);
console.log('the same component through the Rust host (wasmtime), SQLite :memory::');
console.log(`  REST request                             ${(rust.check_start_rest_ns / 1000).toFixed(1).padStart(8)} us   (Node/Rust ${(mem / (rust.check_start_rest_ns / 1000)).toFixed(1)}x)`);
console.log(`  typed export                             ${(rust.check_start_typed_ns / 1000).toFixed(1).padStart(8)} us`);
