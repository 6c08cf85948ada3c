// The npm package as a user gets it: `npm pack` in a clean checkout of js/ (its tracked files only:
// no gen/, which `prepack` builds), installed from the tarball into an empty project; then one
// check-start through the Node entry (once better-sqlite3, an optional peer, is installed: without
// it the Node bridge says what to install and the browser entry still loads) and one price through
// the browser entry in headless Chromium.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, createReadStream, existsSync, mkdirSync, mkdtempSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchBrowser } from './support/quota-hub.js';

const js = join(dirname(fileURLToPath(import.meta.url)), '..');
const repo = join(js, '..');
const VALUES = { custom: { authMode: 'github', quota: { defaultQuota: 50 }, accelerators: { phx: { quotaRate: 2.5 } } } };

function run(cmd, args, cwd) {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** node -e, as an ES module in `cwd` (which resolves packages from its node_modules). */
function node(cwd, code) {
  return execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

test('npm pack from a clean checkout installs into an empty project and runs in Node and the browser', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'quota-pack-'));
  // The clean checkout: js/'s tracked files, beside the repository's LICENSE and built component.
  const checkout = join(tmp, 'checkout');
  for (const f of run('git', ['ls-files', 'js'], repo).split('\n').filter(Boolean)) {
    mkdirSync(dirname(join(checkout, f)), { recursive: true });
    copyFileSync(join(repo, f), join(checkout, f));
  }
  copyFileSync(join(repo, 'LICENSE'), join(checkout, 'LICENSE'));
  symlinkSync(join(repo, 'target'), join(checkout, 'target'));
  symlinkSync(join(js, 'node_modules'), join(checkout, 'js', 'node_modules'));
  assert.equal(existsSync(join(checkout, 'js', 'gen')), false, 'a clean checkout has no gen/');

  const [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp, '--loglevel=error'], join(checkout, 'js')));
  const files = packed.files.map((f) => f.path);
  for (const f of ['LICENSE', 'package.json', 'src/node.js', 'src/browser.js', 'gen/quota-engine.js', 'gen/modules.json',
    'gen/quota-engine.core.wasm', 'pages/shell.html', 'pages/admin-main.html', 'pages/spawn.js']) {
    assert.ok(files.includes(f), `${f} is not in the package: ${files.join(', ')}`);
  }
  assert.ok(!files.some((f) => f.startsWith('gen-fault/') || f.startsWith('tests/')), files.join(', '));
  assert.deepEqual(packed.bundled ?? [], []);

  const app = join(tmp, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', type: 'module', private: true }));
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', join(tmp, packed.filename)], app);

  // No better-sqlite3: the browser entry loads, the Node bridge names what it needs.
  assert.equal(node(app, "import('@quota-engine/js/browser').then((m) => console.log(typeof m.loadEngine))").trim(), 'function');
  const missing = node(app, `import { QuotaEngine } from '@quota-engine/js';
    try { new QuotaEngine(':memory:', ${JSON.stringify(VALUES)}); } catch (e) { console.log(e.message); }`);
  assert.match(missing, /needs better-sqlite3 \(an optional peer dependency\): npm install better-sqlite3@12/);

  // With it (the repository's build of the same version): a check-start.
  run('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--loglevel=error', join(js, 'node_modules', 'better-sqlite3')], app);
  const start = JSON.parse(node(app, `import { QuotaEngine } from '@quota-engine/js';
    const e = new QuotaEngine(':memory:', ${JSON.stringify(VALUES)});
    console.log(JSON.stringify(e.checkStart({ username: 'ann', accelerator: 'phx', runtimeMinutes: 10 })));`));
  assert.ok(start.allowed, JSON.stringify(start));
  assert.equal(start.allowed.estimatedCost, 25000, 'thousandths of a credit');

  // The browser entry, served from the installed package, in Chromium.
  const pkg = join(app, 'node_modules', '@quota-engine', 'js');
  writeFileSync(join(pkg, 'check.html'), `<!doctype html><script type="module">
    import { loadEngine } from './src/browser.js';
    try {
      const e = await loadEngine('./gen/', ${JSON.stringify(VALUES)});
      window.result = e.estimateCost('phx', 10);
    } catch (err) { window.result = { error: String(err) }; }
  </script>`);
  const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };
  const server = createServer((req, res) => {
    const path = normalize(join(pkg, decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    if (!path.startsWith(pkg) || !existsSync(path) || !statSync(path).isFile()) return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': TYPES[extname(path)] ?? 'application/octet-stream' });
    createReadStream(path).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/check.html`);
    await page.waitForFunction(() => window.result !== undefined);
    const price = await page.evaluate(() => window.result);
    assert.equal(price.error, undefined, price.error);
    assert.equal(price.estimatedCost, 25);
  } finally {
    await browser.close();
    server.close();
  }
});
