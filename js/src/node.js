// The Node bridge: the engine over a SQLite file (or `:memory:`) through better-sqlite3, the
// synchronous driver. Every call is one transaction (BEGIN IMMEDIATE for writes). quota-hub, a
// JupyterHub with jupyterhub-quota and a Node host can open the same file.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Engine, StorageError, seconds } from './core.js';

export { ConfigError, EngineError, QuotaError, StorageError } from './core.js';

const require = createRequire(import.meta.url);
const gen = join(dirname(fileURLToPath(import.meta.url)), '..', 'gen');

/** Core modules of a transpiled component (gen/ by default), compiled once per process. */
const modules = new Map();
function coreModules(dir) {
  return (path) => {
    const key = join(dir, path);
    let m = modules.get(key);
    if (!m) {
      m = new WebAssembly.Module(readFileSync(key));
      modules.set(key, m);
    }
    return m;
  };
}

/** How long a writer waits for another's lock before `busy`. */
export const BUSY_TIMEOUT_MS = 10_000;

const pauseCell = new Int32Array(new SharedArrayBuffer(4));

/**
 * Switches the file to WAL. On a new file several processes starting at once all try to; the switch
 * needs the file to itself and SQLite answers busy at once, without its busy handler, so it is
 * retried here (a synchronous pause: the driver is synchronous) for up to `waitMs`.
 */
function enterWal(conn, waitMs) {
  const deadline = Date.now() + waitMs;
  let pause = 1;
  for (;;) {
    let mode;
    try {
      mode = conn.pragma('journal_mode = WAL', { simple: true });
    } catch (e) {
      if (e?.code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw e;
      Atomics.wait(pauseCell, 0, 0, pause);
      pause = Math.min(pause * 2, 50);
      continue;
    }
    if (!['wal', 'memory'].includes(String(mode).toLowerCase())) {
      throw new Error(`sqlite: could not switch to WAL (journal mode stays ${mode})`);
    }
    return;
  }
}

/**
 * better-sqlite3, an optional peer dependency: the browser entry and the pure functions need none,
 * so it is loaded only when a database is opened.
 */
function betterSqlite3() {
  try {
    return require('better-sqlite3');
  } catch (e) {
    if (e?.code !== 'MODULE_NOT_FOUND') throw e;
    throw new Error('The Node bridge needs better-sqlite3 (an optional peer dependency): npm install better-sqlite3@12');
  }
}

/** The SQL bridge over one better-sqlite3 connection; prepared statements cached by their text. */
export class SqliteBridge {
  constructor(path, { durability = 'full', busyTimeoutMs = BUSY_TIMEOUT_MS } = {}) {
    const Database = betterSqlite3();
    this.dialect = 'sqlite';
    this.conn = new Database(path, { timeout: busyTimeoutMs });
    enterWal(this.conn, busyTimeoutMs);
    this.conn.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    this.statements = new Map();
    this.begins = { true: this.conn.prepare('BEGIN IMMEDIATE'), false: this.conn.prepare('BEGIN DEFERRED') };
    this.commitStmt = this.conn.prepare('COMMIT');
  }

  prepare(sql) {
    let st = this.statements.get(sql);
    if (!st) {
      const stmt = this.conn.prepare(sql);
      if (stmt.reader) stmt.raw(true);
      // better-sqlite3 binds `?NNN` placeholders by name ({1: v, 2: v}), plain `?` by position.
      st = { stmt, numbered: /\?\d/.test(sql) };
      this.statements.set(sql, st);
    }
    return st;
  }

  query(sql, params) {
    return wrap(() => {
      const { stmt, numbered } = this.prepare(sql);
      const args = bindAll(params, numbered);
      if (stmt.reader) return stmt.all(args).map(checkRow);
      stmt.run(args);
      return [];
    });
  }

  executeMany(sql, rows) {
    return wrap(() => {
      const { stmt, numbered } = this.prepare(sql);
      let changes = 0;
      for (const row of rows) changes += stmt.run(bindAll(row, numbered)).changes;
      return changes;
    });
  }

  begin(write) {
    wrap(() => this.begins[write].run());
  }

  commit() {
    try {
      wrap(() => this.commitStmt.run());
    } catch (e) {
      this.rollback();
      throw e;
    }
  }

  rollback() {
    if (this.conn.inTransaction) this.conn.exec('ROLLBACK');
  }

  close() {
    this.conn.close();
  }
}

// better-sqlite3 binds JavaScript numbers as REAL; the engine's values are integers.
function bind(v) {
  return typeof v === 'number' ? BigInt(v) : v;
}

function bindAll(params, numbered) {
  if (!numbered) return params.map(bind);
  const named = {};
  for (let i = 0; i < params.length; i++) named[i + 1] = bind(params[i]);
  return named;
}

function checkRow(row) {
  for (const v of row) {
    if (typeof v === 'number' && !Number.isSafeInteger(v)) {
      throw new StorageError('other', `a column holds ${v}, which the engine never stores`);
    }
    if (v !== null && typeof v !== 'number' && typeof v !== 'string') {
      throw new StorageError('other', 'a column holds a blob, which the engine never stores');
    }
  }
  return row;
}

function wrap(fn) {
  try {
    return fn();
  } catch (e) {
    if (e instanceof StorageError) throw e;
    const code = e?.code ?? '';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) throw new StorageError('busy', e.message);
    if (code.startsWith('SQLITE_CONSTRAINT')) throw new StorageError('constraint', e.message);
    throw new StorageError('other', `sqlite: ${e?.message ?? e}`);
  }
}

const num = (v) => (typeof v === 'bigint' ? Number(v) : v);

/**
 * An engine over a SQLite database. Opening brings it to the engine's schema (idempotent, safe when
 * several processes start at once) and applies `values` (the values document, as an object).
 */
export class QuotaEngine extends Engine {
  /**
   * @param {string} path a SQLite file, or `:memory:`
   * @param {object} values the values document
   * @param {object} [options] `durability` (`full` | `normal`), `busyTimeoutMs`; `component`:
   *   another transpiled component, as `{dir, instantiate}` (tests use the fault-injection build)
   */
  constructor(path, values, options = {}) {
    const db = new SqliteBridge(path, options);
    const c = options.component;
    super({ getCoreModule: coreModules(c?.dir ?? gen), db, ...(c ? { instantiate: c.instantiate } : {}) });
    this.migration = this.migrate();
    this.configure(values);
  }

  /** The spawn gate: `{allowed: {...}}` or `{refused: {...}}`. */
  checkStart({ username, accelerator = null, runtimeMinutes, serverName = '', startedAt = null }, now) {
    const req = { username, accelerator: accelerator ?? undefined, runtimeMinutes: seconds(runtimeMinutes), serverName, startedAt: startedAt === null ? undefined : seconds(startedAt) };
    const t = seconds(now);
    const d = this.call((api) => api.checkStart(req, t));
    const v = Object.fromEntries(Object.entries(d.val).map(([k, x]) => [k, num(x)]));
    return d.tag === 'allowed' ? { allowed: v } : { refused: v };
  }

  /** Ends a session by id or by `{username, serverName}`; outcome `completed` or `failed`. */
  endSession({ id = null, username, serverName = '', outcome = 'completed', endedAt = null }, now) {
    const target = id !== null ? { tag: 'id', val: BigInt(id) } : { tag: 'server', val: [username, serverName] };
    const req = { target, endedAt: endedAt === null ? undefined : seconds(endedAt), outcome };
    const t = seconds(now);
    const r = this.call((api) => api.endSession(req, t));
    return Object.fromEntries(Object.entries(r).map(([k, x]) => [k, num(x)]));
  }

  cleanupStale(now) {
    const t = seconds(now);
    return this.call((api) => api.cleanupStale(t)).map((c) => Object.fromEntries(Object.entries(c).map(([k, x]) => [k, num(x)])));
  }

  /** `set`/`add`/`deduct` an amount, or `set-unlimited` a flag, for one user. */
  adminUpdate(username, action, value, { description = null, caller = 'admin' } = {}, now) {
    const a = action === 'set-unlimited' ? { tag: action, val: !!value } : { tag: action, val: BigInt(value) };
    const t = seconds(now);
    const r = this.call((api) => api.adminUpdate(username, a, description ?? undefined, caller, t));
    return { username: r.username, balance: num(r.balance), action: r.action, amount: r.amount === undefined ? null : num(r.amount), unlimited: r.unlimited ?? null };
  }

  /** A refresh (the REST body's fields as an object); returns its JSON result. */
  refresh(body, now) {
    const text = JSON.stringify(body);
    const t = seconds(now);
    const r = this.call((api) => api.refresh(text, t));
    return { ...JSON.parse(r.json), replayed: r.replayed };
  }

  close() {
    this.db.close();
  }
}
