// The engine component (transpiled by jco into gen/) over a host's SQL bridge: shared by the Node
// bridge (src/node.js) and the pages (src/browser.js). One instance at a time; every call runs in
// one transaction of the host's database, committed only when the call returned normally and no
// statement failed. After anything but the engine's own error result (a trap, an exception in an
// import, a lowering error) the instance is replaced: its state may be half-finished.
import { instantiate as instantiateShipped } from '../gen/quota-engine.js';

import { Contract, StorageError, sleepSync } from './contract.js';

export { Contract, StorageError } from './contract.js';

/** The largest magnitude an integer may have on the wire: 2^53 - 1. */
export const JSON_INT_MAX = Number.MAX_SAFE_INTEGER;

/** The engine trapped or an import misbehaved; the call changed nothing and the instance was replaced. */
export class EngineError extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = 'EngineError';
  }
}

/** The values document was refused: `problems` is a list of {field, message}. */
export class ConfigError extends Error {
  constructor(problems) {
    super(problems.map((p) => `${p.field}: ${p.message}`).join('; '));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** An operation was refused (nothing changed): `kind` is the WIT case (`invalid`, `not-found`, ...). */
export class QuotaError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'QuotaError';
    this.kind = kind;
  }
}

function isComponentError(e) {
  return e !== null && typeof e === 'object' && e.constructor?.name === 'ComponentError' && 'payload' in e;
}

/**
 * The answer of an export that observes (`[result, observations]`): its value, or its error
 * thrown as a `QuotaError`. The observations are for a host's metrics, which this package keeps none of.
 */
export function answered([result]) {
  if (result.tag === 'err') throw quotaError(result.val);
  return result.val;
}

function quotaError(payload) {
  if (payload?.tag === 'invalid') return new QuotaError('invalid', `${payload.val.field}: ${payload.val.message}`);
  if (payload?.tag === 'insufficient-balance') return new QuotaError(payload.tag, 'Insufficient balance');
  return new QuotaError(payload?.tag ?? 'other', String(payload?.val ?? payload));
}

/** A timestamp in whole seconds, range-checked (s64 on the wire). */
export function seconds(now) {
  const t = now ?? Math.floor(Date.now() / 1000);
  if (!Number.isSafeInteger(t)) throw new RangeError(`now: ${t} is not a timestamp in whole seconds`);
  return BigInt(t);
}

/**
 * @param {object} o
 * @param {(path: string) => WebAssembly.Module} o.getCoreModule compiled core modules of gen/
 * @param {object|null} o.db the host's database: {dialect, query(sql, params) -> rows,
 *   executeMany(sql, rows) -> changes, begin(write), commit(), rollback()}; null for pure calls
 */
export class Engine {
  constructor({ getCoreModule, db, instantiate = instantiateShipped }) {
    this.getCoreModule = getCoreModule;
    this.instantiateComponent = instantiate;
    this.db = db;
    this.valuesJson = '';
    this.summary = null;
    this.failed = null;
    this.instantiate();
  }

  instantiate() {
    // An import's failure goes back to the component as its `error` (thrown as `{payload}`, jco's
    // convention); a result is returned as it is.
    const fail = (e) => {
      const f = e instanceof StorageError ? e : this.contract.failed('other', `${e?.name ?? 'Error'}: ${e?.message ?? e}`);
      if (this.failed === null) this.failed = f;
      throw { payload: f.kind === 'busy' ? { tag: 'busy' } : { tag: f.kind, val: f.message } };
    };
    const db = this.db;
    const sql = {
      getDialect: () => db?.dialect ?? 'sqlite',
      query: (statement, paramsJson) => {
        if (!db) fail(new StorageError('other', 'this engine has no database'));
        try {
          return JSON.stringify(db.query(statement, parseParams(JSON.parse(paramsJson))));
        } catch (e) {
          fail(e);
        }
      },
      executeMany: (statement, rowsJson) => {
        if (!db) fail(new StorageError('other', 'this engine has no database'));
        try {
          const rows = JSON.parse(rowsJson);
          if (!Array.isArray(rows)) throw new StorageError('other', 'parameter rows: expected an array of arrays');
          return BigInt(db.executeMany(statement, rows.map(parseParams)));
        } catch (e) {
          fail(e);
        }
      },
    };
    // jco keys imports by interface name without the version.
    const root = this.instantiateComponent(this.getCoreModule, { 'quota:engine/sql': sql, 'quota:engine/types': {} });
    this.api = root.api;
    // How to host this component (statements, waits, retries, error kinds), as it states it.
    this.hosting = root.hosting;
    const dialect = db?.dialect ?? 'sqlite';
    this.contract ??= new Contract(root.hosting.contract(dialect), (wait, durability) => this.hosting.connectionSetup(dialect, wait, durability));
  }

  /** Runs `fn(api)` with no transaction (configuration, pure functions); a trap replaces the instance. */
  raw(fn) {
    try {
      return fn(this.api);
    } catch (e) {
      if (isComponentError(e)) throw e;
      this.replace();
      throw new EngineError(`the engine call failed and changed nothing: ${e?.message ?? e}`, e);
    }
  }

  replace() {
    this.instantiate();
    if (this.valuesJson) this.api.configure(this.valuesJson);
  }

  /**
   * One export call in one transaction (`write`: a write lock; else a read snapshot), run again,
   * whole, after a failure the contract says to retry (a conflict with a concurrent transaction),
   * as often and as far apart as it says: engine calls are deterministic.
   */
  call(fn, write = true) {
    for (let attempt = 0; ; attempt++) {
      try {
        return this.callOnce(fn, write);
      } catch (e) {
        const retry = e instanceof StorageError && this.contract.handling(e.kind).retry;
        if (!retry || attempt >= this.contract.retry.attempts) throw e;
        this.conflictsRetried = (this.conflictsRetried ?? 0) + 1;
        sleepSync(this.contract.backoffMs(attempt + 1));
      }
    }
  }

  callOnce(fn, write) {
    this.db.begin(write);
    this.failed = null;
    let result;
    try {
      result = this.raw(fn);
    } catch (e) {
      this.db.rollback();
      if (this.failed && !isComponentError(e)) {
        // An import failure that surfaced as a trap: report the storage error.
        throw this.failed;
      }
      if (isComponentError(e)) {
        if (this.failed) throw this.failed;
        throw quotaError(e.payload);
      }
      throw e;
    }
    if (this.failed) {
      this.db.rollback();
      throw this.failed;
    }
    this.db.commit();
    return result;
  }

  configure(values) {
    const text = typeof values === 'string' ? values : JSON.stringify(values);
    let r;
    try {
      r = this.raw((api) => api.configure(text));
    } catch (e) {
      if (isComponentError(e)) throw new ConfigError(e.payload);
      throw e;
    }
    this.valuesJson = text;
    const h = r.settings;
    this.summary = {
      enabled: r.enabled,
      rules: r.rules.map((x) => ({ name: x.name, enabled: x.enabled, schedule: x.schedule })),
      // What a host acts on, from the engine: the pages and the bridge never restate these numbers.
      settings: {
        runtimeMinutesMin: Number(h.runtimeMinutesMin),
        runtimeMinutesMax: Number(h.runtimeMinutesMax),
        defaultRuntimeMinutes: Number(h.defaultRuntimeMinutes),
        extendChoices: [...h.extendChoices].map(Number),
        warnBeforeStopMinutes: [...h.warnBeforeStopMinutes].map(Number),
        liveStreamsPerUser: Number(h.liveStreamsPerUser),
        onStorageError: h.onStorageError,
        sweepIntervalSeconds: Number(h.sweepIntervalSeconds),
        usersPageMax: Number(h.usersPageMax),
      },
    };
    return this.summary;
  }

  // Pure functions: no storage, no transaction (the pages run them with no database at all).

  /** A quota field: `{unlimited: true}` or `{set: n}`; anything else throws a QuotaError naming `field`. */
  parseQuotaInput(field, text) {
    let r;
    try {
      r = this.raw((api) => api.parseQuotaInput(field, text));
    } catch (e) {
      if (isComponentError(e)) throw new QuotaError('invalid', `${e.payload.field}: ${e.payload.message}`);
      throw e;
    }
    return r.tag === 'unlimited' ? { unlimited: true } : { set: Number(r.val) };
  }

  /** The price of a spawn: `{rate, estimatedCost}` as exact decimals (numbers: 2.5, 150). */
  estimateCost(accelerator, runtimeMinutes) {
    if (!Number.isSafeInteger(runtimeMinutes)) throw new QuotaError('invalid', `runtime_minutes: must be a whole number of minutes, got ${runtimeMinutes}`);
    let r;
    try {
      r = this.raw((api) => api.estimateCost(accelerator || undefined, BigInt(runtimeMinutes)));
    } catch (e) {
      if (isComponentError(e)) throw quotaError(e.payload);
      throw e;
    }
    return { rate: Number(r.rate) / 1000, estimatedCost: Number(r.estimatedCost) / 1000 };
  }

  /**
   * What a refresh (`body`: the refresh request's fields) would do to `users` ({username, balance,
   * unlimited, groups?}), computed as the server's dry run: `{users_updated, total_change, skipped, changes}`.
   */
  refreshPreview(body, users) {
    const text = JSON.stringify(body);
    const list = users.map((u) => ({ username: u.username, balance: BigInt(u.balance), unlimited: !!u.unlimited, updatedAt: 0n }));
    // The groups of users in any (the list route's `groups`), for group targets.
    const groups = users.filter((u) => u.groups?.length).map((u) => ({ username: u.username, groups: [...u.groups] }));
    let r;
    try {
      r = this.raw((api) => api.refreshPreview(text, list, groups));
    } catch (e) {
      if (isComponentError(e)) throw quotaError(e.payload);
      throw e;
    }
    return JSON.parse(r);
  }

  migrate() {
    const m = this.call((api) => api.migrate());
    return { from: m.fromVersion, to: m.toVersion };
  }

  /** Answers one REST request below the base URL, as quota-hub does; GETs in a read transaction. */
  handleRequest({ method, path, query = '', body = '', caller = null }, now) {
    const req = {
      method,
      path,
      query,
      body,
      caller: caller ? { name: caller.name, admin: !!caller.admin, scopes: [...(caller.scopes ?? [])] } : undefined,
    };
    const t = seconds(now);
    if (method === 'GET') {
      const r = this.call((api) => api.handleRequest(req, t), false);
      return { status: r.status, body: r.body };
    }
    // A refresh with a run id is committed a chunk of users per transaction (the contract's size).
    const chunk = this.refreshChunkUsers ?? this.contract.refreshChunkUsers;
    for (;;) {
      const step = this.call((api) => api.handleRequestStep(req, t, chunk));
      if (step.tag === 'done') return { status: step.val.status, body: step.val.body };
    }
  }
}

function parseParams(params) {
  if (!Array.isArray(params)) throw new StorageError('other', 'parameters: expected a JSON array');
  return params.map((v) => {
    if (v === null || typeof v === 'string') return v;
    if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
    throw new StorageError('other', `parameter ${JSON.stringify(v)}: only integers within +-(2^53-1), strings and null`);
  });
}
