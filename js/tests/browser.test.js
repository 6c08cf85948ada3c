// The component in a real headless browser (Debian's chromium, driven by playwright-core): the
// page's pure functions give the same answers as the Node bridge.
import assert from 'node:assert/strict';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { QuotaEngine } from '../src/node.js';
import { launchBrowser } from './support/quota-hub.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

/** Serves js/ on a loopback port. */
function serve() {
  const server = createServer((req, res) => {
    const path = normalize(join(root, decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    if (!path.startsWith(root) || !existsSync(path) || !statSync(path).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': TYPES[extname(path)] ?? 'application/octet-stream' });
    createReadStream(path).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('the pure functions run in Chromium and answer as the Node bridge does', async () => {
  const server = await serve();
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/tests/fixtures/pure.html`);
    await page.waitForFunction(() => window.result !== undefined);
    const got = await page.evaluate(() => window.result);
    assert.equal(got.error, undefined, got.error);
    const e = new QuotaEngine(':memory:', { custom: { authMode: 'github', quota: { cpuRate: 1 }, accelerators: { phx: { quotaRate: 2.5 }, dgpu: { quotaRate: 4 } } } });
    assert.deepEqual(got.inputs, ['∞', 'Unlimited', '-1', '250'].map((t) => e.parseQuotaInput('Quota for a', t)));
    assert.match(got.inputError, /^Quota for a:/);
    assert.deepEqual(got.estimate, e.estimateCost('phx', 60));
    assert.deepEqual(got.preview, e.refreshPreview({ action: 'add', amount: 10, max_balance: 100 },
      [{ username: 'ann', balance: 5, unlimited: false }, { username: 'bob', balance: 95, unlimited: false }]));
  } finally {
    await browser.close();
    server.close();
  }
});
