// The Node bridge: the engine over a SQLite file (or `:memory:`) through better-sqlite3, the
// synchronous driver. Every call is one transaction, by the engine's hosting contract. quota-hub, a
// JupyterHub with jupyterhub-quota and a Node host can open the same file.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { answered, Engine, QuotaError, seconds } from './component.js';
import { SqliteBridge } from './sqlite-bridge.js';

export { ConfigError, EngineError, QuotaError, StorageError } from './component.js';
export { SqliteBridge } from './sqlite-bridge.js';
export { QuotaEngine } from './thread.js';

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

/** The hosting contract of the shipped component (for a bridge opened without an engine). */
export function hostingContract() {
  hostingContract.cached ??= new Engine({ getCoreModule: coreModules(gen), db: null }).contract;
  return hostingContract.cached;
}

const num = (v) => (typeof v === 'bigint' ? Number(v) : v);

/**
 * An engine over a SQLite database, in this thread: opening brings it to the engine's schema
 * (idempotent, safe when several processes start at once) and applies `values` (the values
 * document, as an object). It has no call deadline (JavaScript cannot stop a guest running on its
 * own thread); `QuotaEngine` runs one in a worker thread it can stop.
 */
/**
 * A user's groups as the component takes them: one text, a name per line (the engine compares it
 * with the stored groups without taking it apart). A name with a line break in it would read as
 * two, so it is refused here, as the engine refuses every control character in a name.
 */
function groupLines(groups) {
  const names = [...groups];
  names.forEach((g, i) => {
    if (typeof g !== 'string') throw new QuotaError('invalid', `groups[${i}]: must be a string`);
    if (g.includes('\n')) throw new QuotaError('invalid', `groups[${i}]: must not contain the control character '\\n'`);
  });
  return names.join('\n');
}

export class LocalEngine extends Engine {
  /**
   * @param {string} path a SQLite file, or `:memory:`
   * @param {object} values the values document
   * @param {object} [options] `durability` (`full` | `normal`), `busyTimeoutMs`; `component`:
   *   another transpiled component, as `{dir, instantiate}` (tests use the fault-injection build);
   *   `bridge`: a `SqliteBridge` made beforehand (tests wrap one to inject failures);
   *   `refreshChunkUsers`: users per transaction of a refresh with a run id (the contract's unless given);
   *   `loaded(contract)`: called once the component is loaded, before the connection is set up
   */
  constructor(path, values, options = {}) {
    const db = options.bridge ?? new SqliteBridge(path);
    const c = options.component;
    super({ getCoreModule: coreModules(c?.dir ?? gen), db, ...(c ? { instantiate: c.instantiate } : {}) });
    options.loaded?.(this.contract);
    db.setUp(this.contract, options);
    /** Users per transaction of a refresh with a run id (the contract's unless given). */
    this.refreshChunkUsers = options.refreshChunkUsers;
    this.migration = this.migrate();
    this.configure(values);
  }

  /**
   * The spawn gate: `{allowed: {...}}`, `{refused: {...}}` (not enough credits) or
   * `{forbidden: {message}}` (an accelerator of groups the user is not in). `groups`: the user's
   * groups as the host knows them now (null: the stored ones), any order.
   */
  checkStart({ username, accelerator = null, runtimeMinutes, serverName = '', startedAt = null, groups = null }, now) {
    const req = {
      username, accelerator: accelerator ?? undefined, runtimeMinutes: seconds(runtimeMinutes), serverName,
      startedAt: startedAt === null ? undefined : seconds(startedAt), groups: groups === null ? undefined : groupLines(groups),
    };
    const t = seconds(now);
    const d = answered(this.call((api) => api.checkStart(req, t)));
    if (d.tag === 'forbidden') return { forbidden: { message: d.val } };
    const v = Object.fromEntries(Object.entries(d.val).map(([k, x]) => [k, num(x)]));
    if (d.tag === 'allowed') return { allowed: v };
    // When a scheduled top-up would let this start through (null: none within a year).
    const n = d.val.nextRefresh;
    v.nextRefresh = n === undefined ? null : { rule: n.rule, at: num(n.at), balance: num(n.balance) };
    return { refused: v };
  }

  /**
   * Sets each listed user's groups (`[[username, [group, ...]], ...]`) to exactly these, in one
   * transaction of any size; `complete`: a user left out is in no group afterwards.
   */
  replaceMemberships(users, complete, now) {
    const list = users.map(([username, groups]) => ({ username, groups: [...groups] }));
    const t = seconds(now);
    const r = this.call((api) => api.replaceMemberships(list, !!complete, t));
    return { changed: num(r.changed), users: num(r.users) };
  }

  /** Ends a session by id or by `{username, serverName}`; outcome `completed` or `failed`. */
  endSession({ id = null, username, serverName = '', outcome = 'completed', endedAt = null }, now) {
    const target = id !== null ? { tag: 'id', val: BigInt(id) } : { tag: 'server', val: [username, serverName] };
    const req = { target, endedAt: endedAt === null ? undefined : seconds(endedAt), outcome };
    const t = seconds(now);
    const r = answered(this.call((api) => api.endSession(req, t)));
    return Object.fromEntries(Object.entries(r).map(([k, x]) => [k, num(x)]));
  }

  cleanupStale(now) {
    const t = seconds(now);
    return answered(this.call((api) => api.cleanupStale(t))).map((c) => Object.fromEntries(Object.entries(c).map(([k, x]) => [k, num(x)])));
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
    const r = answered(this.call((api) => api.refresh(text, t)));
    return { ...JSON.parse(r.json), replayed: r.replayed };
  }

  close() {
    this.db.close();
  }
}
