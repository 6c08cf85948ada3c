// The user page (`{base}/quota`) for a user with 10,000 ledger rows and 30 days of usage: a real
// quota-hub serve over a SQLite file and Debian's headless Chromium. Prints, per page load (median
// of ROUNDS), the time from navigation start to a usable page (balance, servers, chart and the
// first page of the ledger shown) and the API requests the page sent. Asserts nothing about time.
//
//   bash scripts/build-wasm.sh && bash scripts/build-js.sh && cargo build -p quota-hub && \
//     (cd js && node bench/user-page.mjs)
import { execFileSync } from 'node:child_process';

import Database from 'better-sqlite3';

import { QuotaHub, launchBrowser } from '../tests/support/quota-hub.js';

const ROWS = Number(process.env.ROWS ?? 10_000);
const ROUNDS = 7;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const hub = await QuotaHub.start({
  custom: {
    authMode: 'github',
    quota: { enabled: true, refreshRules: { daily: { enabled: true, schedule: '0 6 * * *', action: 'add', amount: 10 } } },
    accelerators: { gpu: { displayName: 'GPU', quotaRate: 3 }, big: { displayName: 'Big GPU', quotaRate: 12 } },
  },
}, ['--no-scheduler']);
const token = execFileSync(hub.bin, ['token', 'issue', '--db', `sqlite://${hub.db}`, '--user', 'ann'], { encoding: 'utf8' }).trim();
await hub.set('ann', 1_000_000);
// The ledger and the usage sums written straight into the server's database (WAL: the server
// reads them at once): ROWS charges over the last 30 days, as the engine would have kept them.
const db = new Database(hub.db);
const now = Math.floor(Date.now() / 1000);
const today = Math.floor(now / 86_400);
const resources = ['cpu', 'gpu', 'big'];
const rate = { cpu: 1, gpu: 3, big: 12 };
const sums = new Map();
db.transaction(() => {
  const tx = db.prepare(`INSERT INTO transactions (username, amount, transaction_type, resource_type, description,
    balance_before, balance_after, created_at, created_by) VALUES ('ann', ?, 'usage', ?, ?, 0, 0, ?, NULL)`);
  for (let i = 0; i < ROWS; i++) {
    const r = resources[i % 3];
    const minutes = 1 + (i % 50);
    const at = now - Math.floor((i / ROWS) * 30 * 86_400);
    tx.run(-minutes * rate[r], r, `Session ${i}: ${minutes} min @ ${rate[r]}/min`, at);
    const key = `${Math.floor(at / 86_400)}|${r}`;
    const s = sums.get(key) ?? { credits: 0, minutes: 0, sessions: 0 };
    s.credits += minutes * rate[r];
    s.minutes += minutes;
    s.sessions += 1;
    sums.set(key, s);
  }
  const put = db.prepare(`INSERT INTO user_usage_days (username, day, resource_type, credits, minutes, sessions) VALUES ('ann', ?, ?, ?, ?, ?)`);
  for (const [key, s] of sums) {
    const [day, r] = key.split('|');
    put.run(Number(day), r, s.credits, s.minutes, s.sessions);
  }
})();
db.close();
const browser = await launchBrowser();
const figures = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    const ctx = await browser.newContext();
    await ctx.addInitScript((t) => sessionStorage.setItem('quota-hub-token', t), token);
    const page = await ctx.newPage();
    let requests = 0;
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.includes('/api/')) requests += 1;
    });
    await page.goto(`${hub.url}/quota`);
    await page.waitForFunction(() => window.quotaUser?.state === 'ready', null, { timeout: 60_000 });
    const f = await page.evaluate(() => ({ usableMs: window.quotaUser.usableMs, readyMs: performance.now() }));
    const bars = await page.locator('#usage-chart [data-credits]').count();
    const rows = await page.locator('#history tbody tr').count();
    if (rows !== 50 || bars < 30 || bars > 93) throw new Error(`${rows} ledger rows and ${bars} bars shown`);
    figures.push({ ...f, requests, bars });
    await ctx.close();
  }
} finally {
  await browser.close();
  await hub.stop();
}
const m = (k) => median(figures.map((f) => f[k])).toFixed(1);
console.log(`user page, ${ROWS} ledger rows over 30 days, median of ${ROUNDS} loads in headless Chromium:`);
console.log(`  navigation start to usable page:  ${m('readyMs')} ms`);
console.log(`  of which the page's own requests and drawing (${figures[0].requests} API requests, ${figures[0].bars} bars): ${m('usableMs')} ms`);
