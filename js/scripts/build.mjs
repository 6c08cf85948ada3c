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
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
// A file whose bytes are already there keeps its time: quota-hub embeds gen/, and cargo rebuilds
// what embeds a file whose time changed (a release build: minutes on 2 cores).
function writeIfChanged(path, data) {
  if (existsSync(path) && Buffer.compare(readFileSync(path), Buffer.from(data)) === 0) return;
  writeFileSync(path, data);
}
// Makes the tree `to` hold what `from` holds (writeIfChanged), removing anything else but `keep`
// (the names written beside jco's output); answers the names at `from`'s top.
function sync(from, to, keep = []) {
  mkdirSync(to, { recursive: true });
  const names = readdirSync(from);
  for (const f of names) {
    if (statSync(join(from, f)).isDirectory()) sync(join(from, f), join(to, f));
    else writeIfChanged(join(to, f), readFileSync(join(from, f)));
  }
  for (const f of readdirSync(to)) if (!names.includes(f) && !keep.includes(f)) rmSync(join(to, f), { recursive: true, force: true });
  return names;
}
function transpile(component, out) {
  // A folder of this process's own: the Node tests' build and the docs walk's may run at once.
  const fresh = join(root, `${out}.new-${process.pid}`);
  rmSync(fresh, { recursive: true, force: true });
  execFileSync(jco, ['transpile', component, '--instantiation', 'sync', '--name', 'quota-engine', '-o', fresh, '--quiet'], {
    stdio: 'inherit',
  });
  // What jco wrote replaces gen/ file by file: what is the same stays, what is gone goes.
  const made = sync(fresh, join(root, out), ['modules.json', 'source.json', 'chartist.js', 'chartist.css', 'bootstrap.css']);
  rmSync(fresh, { recursive: true, force: true });
  // The core modules the generated code asks for, so a page can compile them before instantiating.
  const modules = made.filter((f) => f.endsWith('.wasm')).sort();
  writeIfChanged(join(root, out, 'modules.json'), JSON.stringify(modules) + '\n');
  // Which component this is (quota-hub's build refuses to embed a js/gen made from another one).
  const sha256 = createHash('sha256').update(readFileSync(component)).digest('hex');
  writeIfChanged(join(root, out, 'source.json'), JSON.stringify({ component_sha256: sha256 }) + '\n');
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
  writeIfChanged(join(root, 'gen', to), notice + text);
}
// quota-hub's own pages look like the hub's: JupyterHub's Bootstrap 5 CSS, bundled (no CDN).
const bootstrap = join(root, 'node_modules', 'bootstrap', 'dist', 'css', 'bootstrap.min.css');
writeIfChanged(join(root, 'gen', 'bootstrap.css'), readFileSync(bootstrap, 'utf8').replace(/\/\*# sourceMappingURL=.*?\*\/\s*$/s, ''));
if (pack) {
  copyFileSync(join(root, '..', 'LICENSE'), join(root, 'LICENSE'));
} else {
  // The test-only fault-injection build (scripts/build-wasm.sh --fault), for the bridge's tests.
  const fault = join(root, '..', 'target', 'wasm', 'quota-engine-fault.wasm');
  if (existsSync(fault)) transpile(fault, 'gen-fault');
}
