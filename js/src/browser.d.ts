// Types of the browser entry point (`@quota-engine/js/browser`).
export { ConfigError, EngineError, QuotaError } from './node.js';
import type { ConfigSummary } from './node.js';

export interface PageEngine {
  /** The configuration's summary: `settings` holds the numbers the page acts on (the runtime bounds). */
  readonly summary: ConfigSummary;
  /** `{unlimited: true}` or `{set: n}`; anything else throws a QuotaError naming `field`. */
  parseQuotaInput(field: string, text: string): { unlimited: true } | { set: number };
  /** The price of a spawn as exact decimals; the gate's own errors (runtime outside `summary.settings`' bounds, unknown accelerator). */
  estimateCost(accelerator: string | null, runtimeMinutes: number): { rate: number; estimatedCost: number };
  /** The server's dry-run refresh over `users`. */
  refreshPreview(
    body: object,
    users: { username: string; balance: number; unlimited: boolean }[],
  ): { users_updated: number; total_change: number; skipped: number; changes: { username: string; balance_before: number; balance_after: number }[] };
}

/** Loads the component from `gen` (where js/gen/ is served) and configures it with `values`. */
export function loadEngine(gen: string | URL, values: object): Promise<PageEngine>;
