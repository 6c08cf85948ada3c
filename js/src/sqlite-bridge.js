// The SQL bridge over better-sqlite3, the synchronous driver: a SQLite file or `:memory:`. Its
// set-up, transaction statements and the meaning of each SQLite result code are the engine's
// hosting contract (src/contract.js).
import { createRequire } from 'node:module';

import { StorageError } from './contract.js';

const require = createRequire(import.meta.url);

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

/**
 * The SQL bridge over one better-sqlite3 connection; prepared statements cached by their text. Its
 * set-up, transaction statements and error kinds are the engine's hosting contract (`setUp`).
 */
export class SqliteBridge {
  constructor(path) {
    const Database = betterSqlite3();
    this.dialect = 'sqlite';
    this.conn = new Database(path);
    this.statements = new Map();
  }

  /** Applies the contract: connection set-up, then its transaction statements. */
  setUp(contract, { durability = 'full', busyTimeoutMs } = {}) {
    this.contract = contract;
    contract.setUp((sql) => this.wrap(() => {
      const st = this.conn.prepare(sql);
      if (!st.reader) return void st.run();
      return st.raw(true).get()?.[0];
    }), { durability, busyWaitMs: busyTimeoutMs ?? contract.busyWaitMs });
    const tx = contract.tx;
    this.begins = { true: this.conn.prepare(tx.beginWrite), false: this.conn.prepare(tx.beginRead) };
    this.commitStmt = this.conn.prepare(tx.commit);
    this.rollbackSql = tx.rollback;
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
    return this.wrap(() => {
      const { stmt, numbered } = this.prepare(sql);
      const args = bindAll(params, numbered);
      if (stmt.reader) return stmt.all(args).map(checkRow);
      stmt.run(args);
      return [];
    });
  }

  executeMany(sql, rows) {
    return this.wrap(() => {
      const { stmt, numbered } = this.prepare(sql);
      let changes = 0;
      for (const row of rows) changes += stmt.run(bindAll(row, numbered)).changes;
      return changes;
    });
  }

  begin(write) {
    this.wrap(() => this.begins[write].run());
  }

  commit() {
    try {
      this.wrap(() => this.commitStmt.run());
    } catch (e) {
      this.rollback();
      throw e;
    }
  }

  rollback() {
    if (this.conn.inTransaction) this.conn.exec(this.rollbackSql);
  }

  close() {
    this.conn.close();
  }

  /** Runs `fn`; a driver error comes back as the contract's kind of StorageError (by its code). */
  wrap(fn) {
    try {
      return fn();
    } catch (e) {
      if (e instanceof StorageError) throw e;
      throw this.contract.error(e?.code, `sqlite: ${e?.message ?? e}`);
    }
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

