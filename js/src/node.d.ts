// Types of the Node entry point (`@quota-engine/js`).

/** A storage failure, of one of the hosting contract's kinds; the call changed nothing. */
export class StorageError extends Error {
  readonly kind: 'busy' | 'conflict' | 'constraint' | 'other';
  /** The caller may simply try again later (the contract's `transient`). */
  readonly transient: boolean;
  /** The same as `transient`. */
  readonly busy: boolean;
  /** What a server answers (503 for busy and for conflicts that outlasted their retries). */
  readonly httpStatus: number;
}
export class EngineError extends Error {}
export class ConfigError extends Error {
  readonly problems: { field: string; message: string }[];
}
export class QuotaError extends Error {
  readonly kind: string;
}

export interface Caller {
  name: string;
  admin?: boolean;
  /** `quota:sessions`, `quota:refresh`, `quota:admin` */
  scopes?: string[];
}

export interface Request {
  method: string;
  /** below the base URL: `/api/quota/me`, `/admin/api/quota/users/alice`, ... */
  path: string;
  query?: string;
  body?: string;
  caller?: Caller | null;
}

export interface Response {
  status: number;
  /** JSON text, byte for byte as quota-hub answers */
  body: string;
}

/** What a host acts on, from the engine (never restated in a host's source). */
export interface HostSettings {
  runtimeMinutesMin: number;
  runtimeMinutesMax: number;
  /** `custom.quota.defaultRuntimeMinutes` */
  defaultRuntimeMinutes: number;
  extendChoices: number[];
  warnBeforeStopMinutes: number[];
  /** `custom.quota.liveStreamsPerUser` */
  liveStreamsPerUser: number;
  /** `custom.quota.onStorageError` */
  onStorageError: 'refuse' | 'allow';
  sweepIntervalSeconds: number;
  usersPageMax: number;
}

export interface ConfigSummary {
  enabled: boolean;
  rules: { name: string; enabled: boolean; schedule: string }[];
  settings: HostSettings;
}

export interface Options {
  durability?: 'full' | 'normal';
  /** How long one call may run before it is stopped and the thread replaced (`QuotaEngine` only;
   * the hosting contract's 30,000 ms unless given). */
  callDeadlineMs?: number;
  /** How long a writer waits for another's lock before `busy` (the engine's hosting contract's
   * busy wait, 10,000 ms, unless given). */
  busyTimeoutMs?: number;
}

/** The engine component's hosting contract (statements, waits, retries, error kinds), as it states it. */
export function hostingContract(): object;

/** `QuotaEngine`'s methods on the calling thread: no thread hop, and no call deadline. */
export class LocalEngine extends QuotaEngine {}

/** The engine over a SQLite file or `:memory:` in a worker thread: every call one transaction,
 * stopped at the call deadline (the thread replaced, nothing the call wrote kept). */
export class QuotaEngine {
  constructor(path: string, values: object, options?: Options);
  readonly migration: { from: number; to: number };
  readonly summary: ConfigSummary;
  configure(values: object | string): ConfigSummary;
  migrate(): { from: number; to: number };
  /** `now`: whole seconds since the epoch (default: the clock). */
  handleRequest(req: Request, now?: number): Response;
  checkStart(
    req: {
      username: string; accelerator?: string | null; runtimeMinutes: number; serverName?: string; startedAt?: number | null;
      /** The user's groups as the host knows them now, any order; null: the stored ones. */
      groups?: Iterable<string> | null;
    },
    now?: number,
  ):
    | { allowed: { sessionId: number; rate: number; runtimeMinutes: number; estimatedCost: number; balance: number } }
    | {
        refused: {
          message: string; balance: number; held: number; estimatedCost: number;
          /** The first scheduled top-up after which this start would pass (`at`: seconds since the epoch); null when none within a year. */
          nextRefresh: { rule: string; at: number; balance: number } | null;
        };
      }
    | { forbidden: { message: string } };
  endSession(
    req: { id?: number | null; username?: string; serverName?: string; outcome?: 'completed' | 'failed'; endedAt?: number | null },
    now?: number,
  ): { sessionId: number; status: string; durationMinutes: number; cost: number; balance: number };
  cleanupStale(now?: number): { sessionId: number; username: string; serverName: string; startTime: number; durationMinutes: number }[];
  adminUpdate(
    username: string,
    action: 'set' | 'add' | 'deduct' | 'set-unlimited',
    value: number | boolean,
    options?: { description?: string | null; caller?: string },
    now?: number,
  ): { username: string; balance: number; action: string; amount: number | null; unlimited: boolean | null };
  /** The refresh REST body (`{action, amount, max_balance?, targets?, run_id?, ...}`); its JSON result. */
  refresh(body: object, now?: number): Record<string, unknown> & { replayed: boolean };
  close(): void;
}
