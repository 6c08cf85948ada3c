// The admin page with 10,000 users: a real quota-hub serve over a SQLite file and Debian's headless
// Chromium. Prints, per page load (median of ROUNDS): the load time (sign-in to data and engine
// ready: the list request, the active sessions, the component compiled), the render time (the
// table built and laid out), the time from navigation to a usable page, and the API requests the
// page sent (one list request; none per user). Asserts nothing about time.
//
//   bash scripts/build-wasm.sh && bash scripts/build-js.sh && cargo build -p quota-hub && \
//     (cd js && node bench/admin-page.mjs)
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { QuotaHub, launchBrowser } from '../tests/support/quota-hub.js';

const USERS = Number(process.env.USERS ?? 10_000);
const ROUNDS = 5;
const RUNNING = 500;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const hub = await QuotaHub.start({ custom: { authMode: 'github', quota: { enabled: true, defaultQuota: 100 } } });
const csv = join(hub.dir, 'users.csv');
writeFileSync(csv, `username,quota\n${Array.from({ length: USERS }, (_, i) => `user${String(i).padStart(5, '0')},${10 + ((i * 7) % 1000)}`).join('\n')}\n`);
execFileSync(hub.bin, ['set-quota', '--db', `sqlite://${hub.db}`, '--values', join(hub.dir, 'values.yaml'), '-f', csv], { stdio: 'ignore' });
for (let i = 0; i < RUNNING; i++) {
  const r = await hub.call('POST', '/api/quota/sessions', { username: `user${String(i * 13).padStart(5, '0')}`, runtime_minutes: 5 }, hub.hubToken);
  if (r.status !== 201) throw new Error(JSON.stringify(r));
}
const browser = await launchBrowser();
const figures = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    const ctx = await browser.newContext();
    await ctx.addInitScript((t) => sessionStorage.setItem('quota-hub-token', t), hub.admin);
    const page = await ctx.newPage();
    const api = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.includes('/api/')) api.push(new URL(r.url()).pathname);
    });
    await page.goto(`${hub.url}/admin/users`);
    await page.waitForFunction(() => window.quotaPage?.state === 'ready', null, { timeout: 120_000 });
    const f = await page.evaluate(() => ({ ...window.quotaPage, api: undefined, readyMs: performance.now() }));
    const rows = await page.locator('#users tbody tr').count();
    if (rows !== USERS) throw new Error(`${rows} rows, want ${USERS}`);
    figures.push({ ...f, requests: api.length, lists: api.filter((p) => p.endsWith('/admin/api/quota/')).length });
    await ctx.close();
  }
} finally {
  await browser.close();
  await hub.stop();
}
const m = (k) => median(figures.map((f) => f[k])).toFixed(1);
console.log(`admin page, ${USERS} users (${RUNNING} running), median of ${ROUNDS} loads in headless Chromium:`);
console.log(`  load (list + sessions + engine):  ${m('loadMs')} ms`);
console.log(`  render (10k rows, with layout):   ${m('renderMs')} ms`);
console.log(`    of which building the rows:      ${m('buildMs')} ms, layout: ${m('layoutMs')} ms`);
console.log(`  navigation start to usable page:  ${m('readyMs')} ms`);
console.log(`  API requests per load: ${figures[0].requests} (list requests: ${figures[0].lists})`);
