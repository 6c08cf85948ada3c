// Transpiles the engine component (target/wasm/quota-engine.wasm, from scripts/build-wasm.sh) into
// gen/ with jco: one engine artifact for Node and the browser. `--instantiation sync` lets the
// bridge pass its imports as plain functions and instantiate again after a trap.
// `--pack` (npm's prepack): what the package ships, from a clean checkout: the component built when
// missing (scripts/build-wasm.sh, a Rust toolchain), gen/ only, and the repository's LICENSE.
// jco is pinned to 1.11.2: from 1.13 its generated code keeps a task record around every call and
// import (the component model's async), a third of a gate through the Node bridge (80 -> 56 us,
// docs/performance.md); this component is synchronous and has no use for it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const pack = process.argv.includes('--pack');
const wasm = join(root, '..', 'target', 'wasm', 'quota-engine.wasm');
if (pack && !existsSync(wasm)) {
  console.error('building the engine component (scripts/build-wasm.sh)');
  execFileSync('bash', [join(root, '..', 'scripts', 'build-wasm.sh')], { stdio: 'inherit' });
}
if (!existsSync(wasm)) {
  console.error(`${wasm} is missing: run \`bash scripts/build-wasm.sh\` at the repository root first`);
  process.exit(1);
}
const jco = join(root, 'node_modules', '.bin', 'jco');
function transpile(component, out) {
  rmSync(join(root, out), { recursive: true, force: true });
  execFileSync(jco, ['transpile', component, '--instantiation', 'sync', '--name', 'quota-engine', '-o', join(root, out), '--quiet'], {
    stdio: 'inherit',
  });
  // The core modules the generated code asks for, so a page can compile them before instantiating.
  const modules = readdirSync(join(root, out)).filter((f) => f.endsWith('.wasm')).sort();
  writeFileSync(join(root, out, 'modules.json'), JSON.stringify(modules) + '\n');
  // Which component this is (quota-hub's build refuses to embed a js/gen made from another one).
  const sha256 = createHash('sha256').update(readFileSync(component)).digest('hex');
  writeFileSync(join(root, out, 'source.json'), JSON.stringify({ component_sha256: sha256 }) + '\n');
  // On stderr: `npm pack --json`'s stdout is its answer.
  console.error(`${out}/quota-engine.js: transpiled from ${component}`);
}
transpile(wasm, 'gen');
// The pages' charting library (chartist: inline SVG, no requests elsewhere), served from gen/ beside
// the engine so the pages load nothing from another host.
const chartist = join(root, 'node_modules', 'chartist');
const { version: chartistVersion, license: chartistLicense } = JSON.parse(readFileSync(join(chartist, 'package.json'), 'utf8'));
const notice = `/*! chartist ${chartistVersion} | ${chartistLicense} | https://github.com/chartist-js/chartist */\n`;
for (const [from, to] of [['index.js', 'chartist.js'], ['index.css', 'chartist.css']]) {
  const text = readFileSync(join(chartist, 'dist', from), 'utf8').replace(/^\/[/*]# sourceMappingURL=.*$/m, '');
  writeFileSync(join(root, 'gen', to), notice + text);
}
// quota-hub's own pages look like the hub's: JupyterHub's Bootstrap 5 CSS, bundled (no CDN).
const bootstrap = join(root, 'node_modules', 'bootstrap', 'dist', 'css', 'bootstrap.min.css');
writeFileSync(join(root, 'gen', 'bootstrap.css'), readFileSync(bootstrap, 'utf8').replace(/\/\*# sourceMappingURL=.*?\*\/\s*$/s, ''));
if (pack) {
  copyFileSync(join(root, '..', 'LICENSE'), join(root, 'LICENSE'));
} else {
  // The test-only fault-injection build (scripts/build-wasm.sh --fault), for the bridge's tests.
  const fault = join(root, '..', 'target', 'wasm', 'quota-engine-fault.wasm');
  if (existsSync(fault)) transpile(fault, 'gen-fault');
}
