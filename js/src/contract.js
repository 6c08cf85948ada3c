// The hosting contract (wit/0.3.0, interface `hosting`): how the component must be hosted, as it
// states it. Read from the instance once per engine; this module is the one place the JavaScript
// host applies it: connection set-up, the busy wait, retry pauses, error kinds and what they mean.

/** A statement failed; the call changed nothing. `kind` is `busy`, `conflict`, `constraint` or
 * `other`; `transient` (also `busy`, for older callers): the caller may simply try again later;
 * `httpStatus`: what a server answers. */
export class StorageError extends Error {
  constructor(kind, message, { transient = false, httpStatus = 500 } = {}) {
    super(message);
    this.name = 'StorageError';
    this.kind = kind;
    this.transient = transient;
    this.busy = transient;
    this.httpStatus = httpStatus;
  }
}

let pauseCell = null;

/** Waits `ms` milliseconds synchronously (the SQLite driver and the engine calls are synchronous).
 * Made on first use: a page without cross-origin isolation has no SharedArrayBuffer (nor waits). */
export function sleepSync(ms) {
  if (ms <= 0) return;
  pauseCell ??= new Int32Array(new SharedArrayBuffer(4));
  Atomics.wait(pauseCell, 0, 0, ms);
}

export class Contract {
  /**
   * @param {object} c the `hosting-contract` record as jco lifts it
   * @param {(busyWaitMs: number, durability: string) => object[]} setupStatements the component's
   *   `connection-setup` for this dialect: the statements with the wait and durability in them
   */
  constructor(c, setupStatements) {
    this.dialect = c.dialect;
    this.setupPause = c.setupPause;
    this.setupStatements = setupStatements;
    this.tx = c.transactions;
    this.busyWaitMs = c.busyWaitMs;
    this.retry = c.retry;
    this.refreshChunkUsers = c.refreshChunkUsers;
    this.callDeadlineMs = c.callDeadlineMs;
    this.migrationDeadlineMs = c.migrationDeadlineMs;
    this.memoryLimitBytes = Number(c.memoryLimitBytes);
    this.sweepIntervalMs = c.sweepIntervalMs;
    this.webhookTimeoutMs = c.webhookTimeoutMs;
    this.usersPageMax = c.usersPageMax;
    this.errorCodes = c.errorCodes;
    this.handlingByKind = new Map(c.errorHandling.map((h) => [h.kind, h]));
    this.tables = c.tables;
  }

  /** The kind of a driver's error code (SQLite's result code name, e.g. `SQLITE_BUSY_SNAPSHOT`). */
  kindOf(code) {
    const hit = this.errorCodes.find((e) => String(code ?? '').startsWith(e.codePrefix));
    return hit ? hit.kind : 'other';
  }

  handling(kind) {
    return this.handlingByKind.get(kind) ?? { kind, retry: false, httpStatus: 500, transient: false };
  }

  failed(kind, message) {
    const h = this.handling(kind);
    return new StorageError(kind, message, { transient: h.transient, httpStatus: h.httpStatus });
  }

  error(code, message) {
    return this.failed(this.kindOf(code), message);
  }

  /** The pause before run `attempt` (1-based) of a retried call, in milliseconds. */
  backoffMs(attempt) {
    const full = Math.min(this.retry.backoffMaxUs, this.retry.backoffBaseUs * attempt * attempt);
    return (full - Math.random() * full * (Math.min(100, this.retry.jitterPercent) / 100)) / 1000;
  }

  /** How long opening a database may take once the component is loaded: each set-up statement
   * (and the migration's write lock) within the busy wait, the migration within its deadline, the
   * configuration within a call's. */
  startDeadlineMs(busyWaitMs = this.busyWaitMs) {
    const statements = this.setupStatements(busyWaitMs, 'full').length;
    return (statements + 1) * busyWaitMs + this.migrationDeadlineMs + this.callDeadlineMs;
  }

  /** Runs the set-up statements through `first(sql)` (the first column of the first row, or
   * undefined; throws a StorageError); `retryWhileBusy` ones run again, after the contract's set-up
   * pause, until the wait passed. */
  setUp(first, { busyWaitMs = this.busyWaitMs, durability = 'full' } = {}) {
    for (const s of this.setupStatements(busyWaitMs, durability)) {
      const sql = s.sql;
      const deadline = Date.now() + busyWaitMs;
      let pause = this.setupPause.firstMs;
      let got;
      for (;;) {
        try {
          got = first(sql);
          break;
        } catch (e) {
          if (!(e instanceof StorageError) || e.kind !== 'busy' || !s.retryWhileBusy || Date.now() >= deadline) throw e;
          sleepSync(pause);
          pause = Math.min(pause * 2, this.setupPause.maxMs);
        }
      }
      if (s.expect.length && !s.expect.some((x) => x.toLowerCase() === String(got).toLowerCase())) {
        throw this.failed('other', `\`${sql}\` answered ${JSON.stringify(got)}, expected one of ${JSON.stringify(s.expect)}`);
      }
    }
  }
}
