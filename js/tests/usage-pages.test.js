// The user page (`{base}/quota`) and the admin page's usage view end to end: a real `quota-hub
// serve` over a temporary SQLite file, Debian's Chromium driven by playwright-core. The chart's
// bars, the table beside it and the API answer the same numbers; the ledger pages; the page keeps
// the strict CSP (no violation); the usage view's CSV download equals the ledger.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';

import { QuotaHub, launchBrowser, screenshotPath } from './support/quota-hub.js';
import { LEDGER_COLUMNS, csvField } from '../pages/usage-panel.js';
import { credits, when } from '../pages/words.js';

const VALUES = {
  custom: {
    authMode: 'github',
    quota: {
      enabled: true,
      cpuRate: 1,
      minimumToStart: 5,
      defaultQuota: 0,
      refreshRules: { weekly: { enabled: true, schedule: '0 6 * * 1', action: 'add', amount: 100, maxBalance: 2000 } },
      budgets: { lab: { description: 'the lab', users: ['ann'], memberLimit: 500 } },
    },
    accelerators: { gpu: { displayName: 'GPU A', description: 'a GPU', nodeSelector: { accel: 'gpu' }, quotaRate: 3 } },
  },
};
let hub;
let browser;
let annToken;

/** Starts and ends a session of `minutes` (ended at once: the engine bills at least a minute). */
async function session(username, resource, runtime) {
  const body = { username, runtime_minutes: runtime, ...(resource ? { resource_type: resource } : {}) };
  const s = await hub.call('POST', '/api/quota/sessions', body, hub.hubToken);
  assert.equal(s.status, 201, JSON.stringify(s));
  return s.json.session_id;
}

before(async () => {
  hub = await QuotaHub.start(VALUES, ['--no-scheduler']);
  annToken = execFileSync(hub.bin, ['token', 'issue', '--db', `sqlite://${hub.db}`, '--user', 'ann'], { encoding: 'utf8' }).trim();
  await hub.set('ann', 1000);
  await hub.set('bob', 1000);
  // 60 admin changes: more ledger rows than the page's first page (50).
  for (let i = 0; i < 60; i++) {
    const r = await hub.call('POST', '/admin/api/quota/users/ann', { action: 'add', amount: 1, description: `top-up ${i}, "weekly"` });
    assert.equal(r.status, 200);
  }
  // Charged sessions today: CPU and GPU for ann, GPU for bob; one left running for ann.
  for (const [user, resource] of [['ann', ''], ['ann', 'gpu'], ['bob', 'gpu']]) {
    const id = await session(user, resource, 30);
    const end = await hub.call('POST', `/api/quota/sessions/${id}/end`, {}, hub.hubToken);
    assert.equal(end.status, 200, JSON.stringify(end));
  }
  await session('ann', 'gpu', 60);
  // Credit that lapses in 30 days, and a budget ann may charge.
  const lapses = new Date(Date.now() + 30 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  const grant = await hub.call('POST', '/admin/api/quota/users/ann', { action: 'add', amount: 25, expires_at: lapses });
  assert.equal(grant.status, 200, JSON.stringify(grant));
  const funded = await hub.call('POST', '/admin/api/quota/budgets/lab', { action: 'set', amount: 300 });
  assert.equal(funded.status, 200, JSON.stringify(funded));
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await hub?.stop();
});

/** A page that records CSP violations and script errors. */
async function newPage() {
  const page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  await page.addInitScript(() => {
    window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, errors };
}

/** The chart's bars as {day: {resource: credits}}. */
async function bars(page, chart) {
  return page.$$eval(`${chart} [data-credits]`, (els) => {
    const out = {};
    for (const e of els) (out[e.dataset.day] ??= {})[e.dataset.resource] = Number(e.dataset.credits);
    return out;
  });
}

/** The table's cells as {day: {resource: credits}} (zero cells left out, as the chart has no bar). */
async function cells(page, table) {
  return page.$$eval(`${table} tbody tr`, (rows) => {
    const out = {};
    for (const r of rows) {
      for (const td of r.querySelectorAll('td[data-resource]')) {
        if (Number(td.textContent) !== 0) (out[r.dataset.day] ??= {})[td.dataset.resource] = Number(td.textContent);
      }
    }
    return out;
  });
}

/** The API's day rows as {day: {resource: credits}}. */
function fromApi(days) {
  const out = {};
  for (const d of days) for (const r of d.by_resource) if (r.credits) (out[d.key] ??= {})[r.resource_type] = r.credits;
  return out;
}

test('the user page: balance, next top-up, lasts, running server, chart = table = API, paged ledger', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${hub.url}/quota`);
  await page.getByRole('textbox', { name: 'API token' }).fill(annToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction(() => window.quotaUser.state !== 'loading');
  if ((await page.evaluate(() => window.quotaUser.state)) !== 'ready') assert.fail(await page.locator('#alert').textContent());

  const me = (await hub.call('GET', '/api/quota/me', undefined, annToken)).json;
  // What can be spent now first; the balance and what the running server holds of it beside.
  assert.ok(me.held > 0, 'ann runs a server: some of the balance is held');
  assert.equal(await page.locator('#balance').textContent(), `${credits(me.available)} available`);
  assert.equal(await page.locator('#available').textContent(),
    `Balance ${credits(me.balance)}, of which ${credits(me.held)} held by your running servers until they end.`);
  assert.equal(me.available, me.balance - me.held);
  assert.equal(await page.locator('#next-refresh').textContent(), `Next top-up: ${when(me.next_refresh.at)} (rule weekly), to ${credits(me.next_refresh.balance)}.`);
  const lasts = await page.$$eval('#lasts tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.deepEqual(lasts, [['CPU', '1', String(me.lasts_minutes.cpu)], ['GPU A', '3', String(me.lasts_minutes.gpu)]]);

  const running = await page.$$eval('#running tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.equal(running.length, 1);
  assert.equal(running[0][1], 'GPU A');
  assert.equal(running[0][2], 'your balance');
  const mine = (await hub.call('GET', '/api/quota/me/sessions', undefined, annToken)).json.sessions.find((s) => s.status === 'active');
  assert.equal(running[0][5], when(mine.ends_at), 'the auto-stop time');

  // The credit that lapses, and the budget ann may charge, as /api/quota/me says.
  assert.equal(await page.locator('#expiring').textContent(), `25 credits expire on ${when(me.expiring_next.expires_at)}.`);
  const grants = await page.$$eval('#grants tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.deepEqual(grants, me.grants.map((g) => [when(g.granted_at), String(g.amount), String(g.remaining), when(g.expires_at)]));
  const budgets = await page.$$eval('#budgets tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.deepEqual(budgets, [['lab: the lab', '300', '300', '0', '500', '']]);

  // The chart, the table and the API agree, bar by bar; only ann's usage is there.
  const usage = (await hub.call('GET', '/api/quota/me/usage', undefined, annToken)).json;
  assert.equal(usage.days.length, 30);
  const api = fromApi(usage.days);
  assert.deepEqual(await bars(page, '#usage-chart'), api);
  assert.deepEqual(await cells(page, '#usage-table'), api);
  assert.equal(Object.values(api).reduce((n, d) => n + (d.cpu ?? 0) + (d.gpu ?? 0), 0), usage.totals.credits);
  assert.equal(usage.totals.credits, 1 + 3, 'a CPU minute and a GPU minute');
  const legend = await page.locator('.quota-legend').textContent();
  assert.ok(legend.includes('CPU') && legend.includes('GPU A'), legend);

  // Keyboard: Tab reaches a bar, which names its day, resource and credits.
  let focused = null;
  for (let i = 0; i < 60 && !focused; i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement?.getAttribute('aria-label'));
    if (focused && !/credits$/.test(focused)) focused = null;
  }
  assert.match(focused ?? '', /^\d{4}-\d{2}-\d{2}, (CPU|GPU A): \d+ credits$/);

  // The ledger: 50 rows, then the older ones; never another user's row.
  assert.equal(await page.locator('#history tbody tr').count(), 50);
  await page.getByRole('button', { name: 'Older' }).click();
  const all = (await hub.call('GET', '/admin/api/quota/transactions?username=ann')).json.transactions;
  await page.waitForFunction((n) => document.querySelectorAll('#history tbody tr').length === n, all.length);
  assert.equal(await page.getByRole('button', { name: 'Older' }).isHidden(), true);
  const amounts = await page.$$eval('#history tbody tr', (rows) => rows.map((r) => Number(r.cells[3].textContent)));
  assert.deepEqual(amounts, all.map((t) => t.amount).reverse());
  assert.ok(!(await page.locator('#history').textContent()).includes('bob'));

  await page.screenshot({ path: screenshotPath('user-page.png'), fullPage: true });
  assert.deepEqual(await page.evaluate(() => window.cspViolations), [], 'the page keeps its CSP');
  assert.deepEqual(errors, []);
  await page.close();
});

test('the admin usage view: chart = table = API, top users and resources, the CSV export equals the ledger', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${hub.url}/admin/users`);
  await page.getByRole('textbox', { name: 'API token' }).fill(hub.admin);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction(() => window.quotaPage.state === 'ready');
  await page.getByRole('button', { name: 'Usage' }).click();
  await page.waitForFunction(() => window.quotaPage.usage?.state && window.quotaPage.usage.state !== 'loading');
  const shown = await page.evaluate(() => window.quotaPage.usage);
  if (shown.state !== 'ready') assert.fail(shown.error);
  const from = await page.locator('#u-from').inputValue();
  const to = await page.locator('#u-to').inputValue();
  const byDay = (await hub.call('GET', `/admin/api/quota/usage?from=${from}&to=${to}&group_by=day`)).json;
  assert.equal(byDay.rows.length, 30);
  const api = fromApi(byDay.rows);
  assert.deepEqual(await bars(page, '#u-chart'), api);
  assert.deepEqual(await cells(page, '#u-days'), api);
  assert.equal(byDay.totals.credits, 1 + 3 + 3);
  const top = await page.$$eval('#u-users tbody tr', (rows) => rows.map((r) => [r.dataset.key, Number(r.cells[1].textContent)]));
  assert.deepEqual(top, [['ann', 4], ['bob', 3]]);
  const res = await page.$$eval('#u-resources tbody tr', (rows) => rows.map((r) => [r.cells[0].textContent, Number(r.cells[1].textContent)]));
  assert.deepEqual(res, [['GPU A', 6], ['CPU', 1]]);

  // A bad range is refused by the server, naming the field.
  await page.locator('#u-to').fill('2000-01-01');
  await page.getByRole('button', { name: 'Show', exact: true }).click();
  await page.getByRole('alert').filter({ hasText: 'to: must not be before `from`' }).waitFor();
  await page.locator('#u-to').fill(to);

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export ledger (CSV)' }).click()]);
  const text = readFileSync(await download.path(), 'utf8');
  const ledger = (await hub.call('GET', `/admin/api/quota/transactions?from=${from}&to=${to}`)).json.transactions;
  const want = [LEDGER_COLUMNS.join(','), ...ledger.map((t) => LEDGER_COLUMNS.map((c) => csvField(t[c])).join(','))].join('\n') + '\n';
  assert.equal(text, want);
  assert.ok(text.includes('"top-up 0, ""weekly"""'), 'quoted as CSV');
  // The same bytes as `quota-hub export-ledger` writes.
  const cli = execFileSync(hub.bin, ['export-ledger', '--db', `sqlite://${hub.db}`, '--from', from, '--to', to], { encoding: 'utf8' });
  assert.equal(text, cli);

  await page.screenshot({ path: screenshotPath('admin-usage.png'), fullPage: true });
  assert.deepEqual(await page.evaluate(() => window.cspViolations), []);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the admin Budgets view: the list, the grants and members of a budget, a dated add; the grants of a user beside their ledger', async () => {
  const { page, errors } = await newPage();
  await page.goto(`${hub.url}/admin/users`);
  await page.getByRole('textbox', { name: 'API token' }).fill(hub.admin);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction(() => window.quotaPage.state === 'ready');
  await page.getByRole('button', { name: 'Budgets' }).click();
  await page.waitForFunction(() => window.quotaPage.budgets?.state === 'ready');
  const list = await page.$$eval('#b-list tbody tr', (rows) => rows.map((r) => [...r.cells].slice(0, 8).map((c) => c.textContent)));
  assert.deepEqual(list, [['lab', 'the lab', '300', '0', '1', '500', 'all', 'values']]);

  await page.getByRole('button', { name: 'Details of budget lab' }).click();
  await page.waitForFunction(() => window.quotaPage.budgets?.shown === 'lab');
  assert.equal(await page.locator('#b-title').textContent(), 'Budget lab: balance 300, 0 reserved');
  const members = await page.$$eval('#b-members tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.deepEqual(members, [['ann', '0', '0']]);

  // A dated add: a grant appears with its expiry, and the balance follows.
  const lapses = new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 16);
  await page.locator('#b-action').selectOption('add');
  await page.locator('#b-amount').fill('50');
  await page.locator('#b-expires').fill(lapses);
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForFunction(() => window.quotaPage.budgets?.balance === 350);
  const grants = await page.$$eval('#b-grants tbody tr', (rows) => rows.map((r) => [...r.cells].slice(2).map((c) => c.textContent)));
  assert.deepEqual(grants, [['50', '50', when(`${lapses}:00`)]]);
  const detail = (await hub.call('GET', '/admin/api/quota/budgets/lab')).json;
  assert.equal(detail.balance, 350);
  assert.equal(detail.recent_transactions[0].expires_at, `${lapses}:00`);

  // A bad amount is refused before any request, naming the field.
  await page.locator('#b-amount').fill('ten');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.getByRole('alert').filter({ hasText: 'amount: a whole number of credits' }).waitFor();

  // ann's ledger shows her credit that lapses.
  await page.getByRole('button', { name: 'Close' }).first().click();
  await page.locator('#users button.ledger').first().click();
  await page.locator('#ledger-grants tbody tr').first().waitFor();
  const mine = (await hub.call('GET', '/admin/api/quota/users/ann')).json.grants;
  assert.equal(await page.locator('#ledger-grants tbody tr').count(), mine.length);

  await page.screenshot({ path: screenshotPath('admin-budgets.png'), fullPage: true });
  assert.deepEqual(await page.evaluate(() => window.cspViolations), [], 'the page keeps its CSP');
  assert.deepEqual(errors, []);
  await page.close();
});

test('Extend: on the user page for the caller\'s running server, in the admin Running view for anyone\'s; a refusal is the server\'s text', async () => {
  const running = async () => (await hub.call('GET', '/api/quota/sessions?status=active')).json.sessions.find((s) => s.username === 'ann');
  const before = await running();
  const { page, errors } = await newPage();
  await page.goto(`${hub.url}/quota`);
  await page.getByRole('textbox', { name: 'API token' }).fill(annToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction(() => window.quotaUser.state === 'ready');
  await page.locator('#running .extend-minutes').fill('30');
  await page.getByRole('button', { name: 'Extend' }).click();
  await page.getByText('now stops at').waitFor();
  const after = await running();
  assert.equal(after.runtime_minutes, before.runtime_minutes + 30);
  assert.equal(after.estimated_cost, before.estimated_cost + 90, 'the reservation grows at the GPU rate');
  // The answer's message comes first; the table is read again after it (a busy machine shows the
  // old row in between).
  await page.locator('#running tbody tr').filter({ hasText: when(after.ends_at) }).waitFor();
  const shown = await page.$$eval('#running tbody tr', (rows) => rows.map((r) => r.cells[5].textContent));
  assert.deepEqual(shown, [when(after.ends_at)], 'the new auto-stop time');
  // Past the 480-minute bound: refused, naming the field; nothing changes.
  await page.locator('#running .extend-minutes').fill('1000');
  await page.getByRole('button', { name: 'Extend' }).click();
  await page.getByRole('alert').filter({ hasText: 'minutes: must be a whole number of minutes from 1 to' }).waitFor();
  assert.equal((await running()).runtime_minutes, after.runtime_minutes);
  await page.close();

  const admin = await newPage();
  await admin.page.goto(`${hub.url}/admin/users`);
  await admin.page.getByRole('textbox', { name: 'API token' }).fill(hub.admin);
  await admin.page.getByRole('button', { name: 'Sign in' }).click();
  await admin.page.waitForFunction(() => window.quotaPage.state === 'ready');
  // The engine's own cost so far (the user's view), read around the page's: the Running view's
  // figure is one of them (a minute may turn in between).
  const engineCost = async () => (await hub.call('GET', '/api/quota/me/sessions', undefined, annToken)).json.sessions.find((s) => s.status === 'active').cost_so_far;
  const costBefore = await engineCost();
  await admin.page.getByRole('button', { name: 'Running' }).click();
  await admin.page.waitForFunction(() => window.quotaPage.running?.state === 'ready');
  const rows = await admin.page.$$eval('#r-list tbody tr', (rs) => rs.map((r) => [...r.cells].slice(0, 7).map((c) => c.textContent)));
  const costAfter = await engineCost();
  assert.ok([String(costBefore), String(costAfter)].includes(rows[0][5]), `cost so far ${rows[0][5]}, the engine's ${costBefore}..${costAfter}`);
  rows[0][5] = 'cost';
  // The resource by its display name, the payer in the glossary's words, times in one format.
  assert.deepEqual(rows, [['ann', '(default)', 'GPU A', "ann's balance", when(after.start_time), 'cost', when(after.ends_at)]]);
  await admin.page.locator('#r-list .extend-minutes').fill('15');
  await admin.page.getByRole('button', { name: 'Extend' }).click();
  await admin.page.getByText('of ann now stops at').waitFor();
  assert.equal((await running()).runtime_minutes, after.runtime_minutes + 15);
  await admin.page.screenshot({ path: screenshotPath('admin-running.png'), fullPage: true });
  assert.deepEqual(await admin.page.evaluate(() => window.cspViolations), [], 'the page keeps its CSP');
  assert.deepEqual([...errors, ...admin.errors], []);
  await admin.page.close();
});

test('quota-hub\'s own pages look like the hub\'s: Bootstrap 5 bundled, the same dark mode, screenshots at 1280 and 760 px', async () => {
  for (const [path, token, ready, name] of [['/quota', annToken, 'quotaUser', 'user-page'], ['/admin/users', hub.admin, 'quotaPage', 'admin-page']]) {
    for (const scheme of ['light', 'dark']) {
      const { page, errors } = await newPage();
      const urls = [];
      page.on('request', (r) => urls.push(r.url()));
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto(`${hub.url}${path}`);
      await page.getByRole('textbox', { name: 'API token' }).fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForFunction((w) => window[w].state === 'ready', ready);
      // Bootstrap's own variables and controls, served by quota-hub itself (no other host).
      assert.equal(await page.evaluate(() => document.documentElement.getAttribute('data-bs-theme')), scheme);
      const bodyBg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      assert.equal(bodyBg, scheme === 'dark' ? 'rgb(33, 37, 41)' : 'rgb(255, 255, 255)', 'Bootstrap\'s body colour of the scheme');
      assert.ok(urls.some((u) => u.endsWith('/quota-static/gen/bootstrap.css')), 'the bundled Bootstrap');
      assert.ok(urls.every((u) => u.startsWith(hub.url) || u.startsWith('data:')), urls.filter((u) => !u.startsWith(hub.url)).join(' '));
      assert.equal(await page.getByRole('link', { name: 'Your credits' }).count(), 1);
      for (const width of [1280, 760]) {
        await page.setViewportSize({ width, height: 900 });
        await page.screenshot({ path: screenshotPath(`screenshots/quota-hub-${name}-${scheme}-${width}.png`), fullPage: true });
      }
      // The theme button switches it, and the choice is kept in this browser.
      await page.getByRole('button', { name: 'Switch between light and dark' }).click();
      const other = scheme === 'dark' ? 'light' : 'dark';
      assert.equal(await page.evaluate(() => document.documentElement.getAttribute('data-bs-theme')), other);
      await page.reload();
      assert.equal(await page.evaluate(() => document.documentElement.getAttribute('data-bs-theme')), other);
      assert.deepEqual(await page.evaluate(() => window.cspViolations), [], 'the page keeps its CSP');
      assert.deepEqual(errors, []);
      await page.close();
    }
  }
});
