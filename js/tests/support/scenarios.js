// Replays the scenario files of tests/scenarios through the Node bridge (the format is in
// tests/scenarios/README.md; the Rust replayer is tests/support).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const SCENARIOS = join(REPO, 'tests', 'scenarios');

const FIXTURE = {
  custom: {
    authMode: 'github',
    quota: { cpuRate: 1, minimumToStart: 10, defaultQuota: 0 },
    accelerators: {
      phx: { displayName: 'PHX', description: 'PHX accelerator', nodeSelector: { accel: 'phx' }, quotaRate: 2 },
      dgpu: { displayName: 'DGPU', description: 'Discrete GPU', nodeSelector: { accel: 'dgpu' }, quotaRate: 4 },
    },
  },
};

export const files = () => readdirSync(SCENARIOS).filter((f) => f.endsWith('.json')).sort();

export function parseTime(s) {
  return Math.floor(Date.parse(s) / 1000);
}

export function callerFor(v) {
  if (v === undefined) return { name: 'admin', admin: true, scopes: [] };
  if (typeof v === 'string') {
    switch (v) {
      case 'anonymous': return null;
      case 'admin': return { name: 'admin', admin: true, scopes: [] };
      case 'hub': return { name: 'hub', admin: false, scopes: ['quota:sessions'] };
      case 'scheduler': return { name: 'scheduler', admin: false, scopes: ['quota:refresh'] };
      case 'service-admin': return { name: 'service-admin', admin: false, scopes: ['quota:admin'] };
      default: return { name: v, admin: false, scopes: [] };
    }
  }
  return { name: v.name, admin: !!v.admin, scopes: v.scopes ?? [] };
}

function mergedValues(scenario) {
  const values = structuredClone(scenario.values ?? FIXTURE);
  const q = scenario.quota;
  if (q && typeof q === 'object' && values.custom && typeof values.custom.quota === 'object' && values.custom.quota) {
    Object.assign(values.custom.quota, q);
  }
  return values;
}

/**
 * The transcript: {step, request, sent, status, body} per request. `sentBodies` (step -> body) gives
 * the exact bytes to send where JavaScript's JSON would change them (`10.0` becomes `10`).
 */
export function replay(scenario, openEngine, sentBodies = new Map()) {
  let now = parseTime(scenario.start ?? '2026-11-22T10:00:00Z');
  const engine = openEngine(mergedValues(scenario));
  const out = [];
  try {
    scenario.steps.forEach((step, i) => {
      const n = i + 1;
      if ('advance' in step) { now += step.advance; return; }
      if ('at' in step) { now = parseTime(step.at); return; }
      if ('configure' in step) {
        const doc = step.configure === null ? step : { values: step.configure, ...('quota' in step ? { quota: step.quota } : {}) };
        if (!('refused' in step)) {
          engine.configure(mergedValues(doc));
          return;
        }
        // Refused with (at least) these problems; the previous configuration stays.
        let said = null;
        try {
          engine.configure(mergedValues(doc));
        } catch (e) {
          said = (e.problems ?? []).map((p) => `${p.field}: ${p.message}`);
        }
        if (said === null) throw new Error(`step ${n}: configure should have been refused`);
        const missing = step.refused.filter((p) => !said.includes(p));
        if (missing.length) throw new Error(`step ${n}: the refusal does not say ${JSON.stringify(missing)}: ${JSON.stringify(said)}`);
        return;
      }
      const target = step.path;
      const q = target.indexOf('?');
      const [path, query] = q < 0 ? [target, ''] : [target.slice(0, q), target.slice(q + 1)];
      const body = sentBodies.get(n) ?? (typeof step.raw_body === 'string' ? step.raw_body : 'body' in step ? JSON.stringify(step.body) : '');
      const r = engine.handleRequest({ method: step.method, path, query, body, caller: callerFor(step.as) }, now);
      out.push({ step: n, request: `${step.method} ${target}`, sent: body, status: r.status, body: r.body });
    });
  } finally {
    engine.close();
  }
  return out;
}

/**
 * A workspace binary: the one `cargo test --workspace` left in target/debug (the test command runs
 * it first), else built now. (`cargo run -p` would rebuild wasmtime with another feature set.)
 */
export function rustBin(name, pkg) {
  const path = join(REPO, 'target', 'debug', name);
  if (!existsSync(path)) execFileSync('cargo', ['build', '-q', '--locked', '-p', pkg, '--bin', name], { cwd: REPO, stdio: 'inherit' });
  return path;
}

let native = null;
/** The native core's transcripts of every scenario (Rust, `scenario-transcripts`). */
export function nativeTranscripts() {
  native ??= JSON.parse(execFileSync(rustBin('scenario-transcripts', 'quota-scenarios'), [], { cwd: REPO, encoding: 'utf8', maxBuffer: 64 << 20 }));
  return native;
}

export const load = (f) => JSON.parse(readFileSync(join(SCENARIOS, f), 'utf8'));
