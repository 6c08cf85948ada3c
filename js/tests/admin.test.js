// The admin page end to end: a real `quota-hub serve` over a temporary SQLite file, Debian's
// Chromium driven by playwright-core, every action through the page, every effect read back from
// the server. A screenshot is left in target/test-artifacts/.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import Database from 'better-sqlite3';

import { QuotaHub, launchBrowser, screenshotPath } from './support/quota-hub.js';

const VALUES = { custom: { authMode: 'github', quota: { enabled: true, cpuRate: 1, minimumToStart: 1, defaultQuota: 10 } } };
let hub;
let browser;

before(async () => {
  hub = await QuotaHub.start(VALUES, ['--busy-timeout-ms', '200']);
  for (const [name, amount] of [['ann', 5], ['bob', 50], ['carol', 20], ['dave', 0], ['refresh', 7]]) await hub.set(name, amount);
  // bob has a running server: one active session.
  const s = await hub.call('POST', '/api/quota/sessions', { username: 'bob', runtime_minutes: 5 }, hub.hubToken);
  assert.equal(s.status, 201, JSON.stringify(s));
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await hub?.stop();
});

async function newPage() {
  const page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  return page;
}

/** A signed-in page, and the API requests it sends from now on (method, path, body). */
async function signedIn() {
  const page = await newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${hub.url}/admin/users`);
  await page.getByRole('textbox', { name: 'API token' }).fill(hub.admin);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction(() => window.quotaPage.state !== 'loading');
  if ((await page.evaluate(() => window.quotaPage.state)) !== 'ready') assert.fail(await page.locator('#alert').textContent());
  const sent = [];
  page.on('request', (r) => {
    const path = new URL(r.url()).pathname;
    if (path.includes('/api/')) sent.push({ method: r.method(), path, body: r.postData() });
  });
  return { page, sent, errors };
}

const editButton = (page, u) => page.getByRole('button', { name: `Edit quota for ${u}`, exact: true });
const quotaInput = (page, u) => page.getByRole('textbox', { name: `Quota for ${u}`, exact: true });

/** Types `text` into the user's inline editor and presses `key`. */
async function edit(page, user, text, key = 'Enter') {
  await editButton(page, user).click();
  await quotaInput(page, user).fill(text);
  await quotaInput(page, user).press(key);
}

test('sign-in keeps the token in session storage only; a wrong token is refused in the page', async () => {
  const page = await newPage();
  await page.goto(`${hub.url}/admin/users`);
  await page.getByRole('textbox', { name: 'API token' }).fill('qh_not-a-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'token was refused' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('quota-hub-token')), null);
  await page.getByRole('textbox', { name: 'API token' }).fill(hub.admin);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction(() => window.quotaPage.state === 'ready');
  const where = await page.evaluate(() => ({
    session: sessionStorage.getItem('quota-hub-token'), local: localStorage.length, cookie: document.cookie, url: location.href,
  }));
  assert.deepEqual(where, { session: hub.admin, local: 0, cookie: '', url: `${hub.url}/admin/users` });
  await page.close();
});

test('the list: one list request, a Quota column, server status from active sessions', async () => {
  const page = await newPage();
  const gets = [];
  page.on('request', (r) => gets.push(new URL(r.url()).pathname));
  await page.goto(`${hub.url}/admin/users`);
  await page.getByRole('textbox', { name: 'API token' }).fill(hub.admin);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction(() => window.quotaPage.state === 'ready');
  const api = gets.filter((p) => p.includes('/api/'));
  // The list, the rates, the active sessions, what the caller may do, and the pending requests' count.
  assert.deepEqual(api.sort(), ['/hub/admin/api/quota/', '/hub/admin/api/quota/requests', '/hub/api/quota/me/rights', '/hub/api/quota/rates', '/hub/api/quota/sessions'].sort());
  assert.equal(await page.getByRole('columnheader', { name: 'Quota' }).count(), 1);
  const row = (u) => page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: u, exact: true }) });
  assert.match(await row('bob').textContent(), /running \(1\)/);
  assert.match(await row('ann').textContent(), /stopped/);
  assert.equal(await editButton(page, 'bob').textContent(), '50');
  await page.close();
});

test('inline edit: a number sets, Enter saves, Escape cancels and sends nothing', async () => {
  const { page, sent } = await signedIn();
  await edit(page, 'ann', '250');
  await page.waitForFunction(() => document.querySelector('[aria-label="Edit quota for ann"]')?.textContent === '250');
  assert.equal((await hub.user('ann')).balance, 250);
  assert.equal(sent.length, 1);

  await edit(page, 'ann', '999', 'Escape');
  assert.equal(await quotaInput(page, 'ann').count(), 0);
  assert.equal(await editButton(page, 'ann').textContent(), '250');
  assert.ok(await editButton(page, 'ann').evaluate((b) => b === document.activeElement), 'focus returns to the value');
  // Escape closed only the edit: the refresh panel stays open around it.
  await page.getByRole('button', { name: 'Refresh Quota' }).click();
  await edit(page, 'ann', '1', 'Escape');
  assert.ok(await page.getByRole('region', { name: 'Refresh quota' }).isVisible());
  assert.equal(sent.length, 1, JSON.stringify(sent));
  assert.equal((await hub.user('ann')).balance, 250);

  // From the keyboard alone.
  await editButton(page, 'ann').focus();
  await page.keyboard.press('Enter');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('260');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('[aria-label="Edit quota for ann"]')?.textContent === '260');
  assert.equal((await hub.user('ann')).balance, 260);
  await page.close();
});

test('the three unlimited tokens set the flag; a number then sets the balance and clears it in one request', async () => {
  const { page, sent } = await signedIn();
  for (const [user, token] of [['ann', '-1'], ['carol', '∞'], ['dave', 'UnLimited']]) {
    await edit(page, user, token);
    await page.waitForFunction((u) => document.querySelector(`[aria-label="Edit quota for ${u}"]`)?.textContent === '∞', user);
    const u = await hub.user(user);
    assert.equal(u.unlimited, true, user);
    assert.ok(await page.getByRole('checkbox', { name: `Unlimited for ${user}`, exact: true }).isChecked());
  }
  assert.equal(sent.length, 3);
  await edit(page, 'ann', '40');
  await page.waitForFunction(() => document.querySelector('[aria-label="Edit quota for ann"]')?.textContent === '40');
  const ann = await hub.user('ann');
  assert.deepEqual([ann.balance, ann.unlimited], [40, false]);
  assert.equal(sent.length, 4, 'one request for balance and flag');
  assert.equal(sent[3].path, '/hub/admin/api/quota/batch');
  await page.close();
});

test('an invalid input shows an error naming the field and sends nothing', async () => {
  const { page, sent } = await signedIn();
  for (const bad of ['12abc', '1.5', '-2', '']) {
    await edit(page, 'bob', bad);
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.textContent(), /^Quota for bob: /);
    assert.equal(await quotaInput(page, 'bob').getAttribute('aria-invalid'), 'true');
    await quotaInput(page, 'bob').press('Escape');
  }
  assert.deepEqual(sent, []);
  assert.equal((await hub.user('bob')).balance, 50);
  await page.close();
});

test('a server error is shown, the edit stays open, and nothing is half-applied', async () => {
  const { page } = await signedIn();
  await edit(page, 'carol', '∞');
  await page.waitForFunction(() => document.querySelector('[aria-label="Edit quota for carol"]')?.textContent === '∞');
  // Another process holds the write lock: quota-hub answers 503 after its busy timeout.
  const db = new Database(hub.db);
  db.prepare('BEGIN IMMEDIATE').run();
  try {
    await edit(page, 'carol', '33');
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'busy' }).waitFor();
    assert.match(await alert.textContent(), /HTTP 503/);
    assert.equal(await quotaInput(page, 'carol').inputValue(), '33');
  } finally {
    db.prepare('ROLLBACK').run();
    db.close();
  }
  const carol = await hub.user('carol');
  assert.deepEqual([carol.balance, carol.unlimited], [20, true], 'neither the balance nor the flag changed');
  // The same input, sent again, now succeeds.
  await quotaInput(page, 'carol').press('Enter');
  await page.waitForFunction(() => document.querySelector('[aria-label="Edit quota for carol"]')?.textContent === '33');
  const after = await hub.user('carol');
  assert.deepEqual([after.balance, after.unlimited], [33, false]);
  await page.close();
});

test('batch: select users, Set Quota, Apply sends one batch request', async () => {
  const { page, sent } = await signedIn();
  await edit(page, 'dave', 'unlimited');
  await page.waitForFunction(() => document.querySelector('[aria-label="Edit quota for dave"]')?.textContent === '∞');
  sent.length = 0;
  await page.getByRole('checkbox', { name: 'Select bob', exact: true }).check();
  await page.getByRole('checkbox', { name: 'Select dave', exact: true }).check();
  const region = page.getByRole('region', { name: 'Set quota' });
  await region.getByRole('button', { name: 'Set Quota' }).click();
  await region.getByRole('textbox', { name: 'Quota for selected users' }).fill('75');
  await region.getByRole('button', { name: 'Apply' }).click();
  await page.getByRole('status').filter({ hasText: '2 user(s) updated' }).waitFor();
  assert.equal(sent.length, 1);
  assert.equal(sent[0].path, '/hub/admin/api/quota/batch');
  for (const u of ['bob', 'dave']) {
    const r = await hub.user(u);
    assert.deepEqual([r.balance, r.unlimited], [75, false], u);
    assert.equal(await editButton(page, u).textContent(), '75');
  }
  // A token for the selection: unlimited for both.
  await region.getByRole('textbox', { name: 'Quota for selected users' }).fill('∞');
  await region.getByRole('textbox', { name: 'Quota for selected users' }).press('Enter');
  await page.getByRole('status').filter({ hasText: '2 user(s) updated' }).waitFor();
  await page.waitForFunction(() => document.querySelector('[aria-label="Edit quota for bob"]')?.textContent === '∞');
  assert.equal((await hub.user('bob')).unlimited, true);
  assert.equal((await hub.user('dave')).unlimited, true);
  // Clear the flags again for the tests that follow.
  await region.getByRole('textbox', { name: 'Quota for selected users' }).fill('50');
  await region.getByRole('button', { name: 'Apply' }).click();
  await page.waitForFunction(() => document.querySelector('[aria-label="Edit quota for bob"]')?.textContent === '50');
  assert.equal(sent.length, 3);
  await page.close();
});

test('toggle unlimited per user, and the ledger on demand', async () => {
  const { page } = await signedIn();
  const box = page.getByRole('checkbox', { name: 'Unlimited for ann', exact: true });
  await box.check();
  await page.getByRole('status').filter({ hasText: 'ann: unlimited' }).waitFor();
  assert.equal((await hub.user('ann')).unlimited, true);
  await box.uncheck();
  await page.getByRole('status').filter({ hasText: 'ann: limited' }).waitFor();
  assert.equal((await hub.user('ann')).unlimited, false);
  await page.getByRole('button', { name: 'Ledger for ann', exact: true }).click();
  const ledger = page.getByRole('region', { name: 'Ledger of ann' });
  await ledger.waitFor();
  const want = (await hub.user('ann')).recent_transactions;
  assert.equal(await ledger.getByRole('row').count(), want.length + 1);
  assert.match(await ledger.getByRole('row').nth(1).textContent(), /unset_unlimited/);
  await page.close();
});

test('refresh: the preview is what the server applies, once, even on a double click', async () => {
  const { page, sent } = await signedIn();
  const before = new Map((await hub.call('GET', '/admin/api/quota/')).json.users.map((u) => [u.username, u]));
  await page.getByRole('button', { name: 'Refresh Quota' }).click();
  const region = page.getByRole('region', { name: 'Refresh quota' });
  await region.getByLabel('Action').selectOption('add');
  await region.getByRole('textbox', { name: 'Amount' }).fill('30');
  await region.getByRole('textbox', { name: 'Maximum balance' }).fill('60');
  await region.getByRole('textbox', { name: 'Exclude users' }).fill('refresh');
  // Enter in a field previews; it never applies.
  await region.getByRole('textbox', { name: 'Amount' }).press('Enter');
  const table = region.getByRole('table', { name: 'Refresh preview' });
  await table.waitFor();
  const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.ok(rows.length >= 2, JSON.stringify(rows));
  for (const [user, b, a, change] of rows) {
    assert.equal(Number(b), before.get(user).balance, user);
    assert.equal(Number(a) - Number(b), Number(change), user);
  }
  assert.equal(sent.length, 0, 'preview and Enter sent nothing');
  await region.getByRole('button', { name: 'Apply' }).dblclick();
  await region.getByText(/^(Applied|Already applied)/).first().waitFor();
  await page.waitForFunction(() => window.quotaPage.state === 'ready' && !document.getElementById('r-apply').disabled);
  const posts = sent.filter((s) => s.method === 'POST');
  assert.ok(posts.length >= 1 && posts.length <= 2, JSON.stringify(posts));
  assert.equal(new Set(posts.map((p) => JSON.parse(p.body).run_id)).size, 1, 'every click sends the same run id');
  const afterList = new Map((await hub.call('GET', '/admin/api/quota/')).json.users.map((u) => [u.username, u]));
  const changed = new Map(rows.map(([u, , a]) => [u, Number(a)]));
  for (const [user, u] of afterList) {
    assert.equal(u.balance, changed.has(user) ? changed.get(user) : before.get(user).balance, user);
    const txs = (await hub.call('GET', `/admin/api/quota/transactions?username=${user}`)).json.transactions;
    assert.equal(txs.filter((t) => t.transaction_type === 'auto_refresh').length, changed.has(user) ? 1 : 0, user);
  }
  const result = await region.getByText(/^(Applied|Already applied)/).first().textContent();
  const total = rows.reduce((s, r) => s + Number(r[3]), 0);
  assert.match(result, new RegExp(`users_updated ${rows.length}, total_change \\+${total}`));
  assert.doesNotMatch(result, /differs/);
  await page.close();
});

test('refresh: a change made by someone else between preview and apply is flagged', async () => {
  const { page } = await signedIn();
  await page.getByRole('button', { name: 'Refresh Quota' }).click();
  const region = page.getByRole('region', { name: 'Refresh quota' });
  await region.getByLabel('Action').selectOption('set');
  await region.getByRole('textbox', { name: 'Amount' }).fill('15');
  await region.getByRole('textbox', { name: 'Include users' }).fill('ann, carol');
  await region.getByRole('button', { name: 'Preview' }).click();
  await region.getByRole('table', { name: 'Refresh preview' }).waitFor();
  await hub.set('ann', 15); // another admin: ann no longer changes
  await region.getByRole('button', { name: 'Apply' }).click();
  await region.getByText(/differs from the preview/).waitFor();
  assert.equal((await hub.user('carol')).balance, 15);
  await page.screenshot({ path: screenshotPath('admin-page.png'), fullPage: true });
  await page.close();
});

test('a refresh field that is not a number is refused in the page and sends nothing', async () => {
  const { page, sent } = await signedIn();
  await page.getByRole('button', { name: 'Refresh Quota' }).click();
  const region = page.getByRole('region', { name: 'Refresh quota' });
  await region.getByRole('textbox', { name: 'Amount' }).fill('ten');
  await region.getByRole('button', { name: 'Apply' }).click();
  assert.match(await page.getByRole('alert').textContent(), /^Amount: must be a whole number/);
  await region.getByRole('textbox', { name: 'Amount' }).fill('10');
  await region.getByRole('textbox', { name: 'Username pattern' }).fill('(');
  await region.getByRole('button', { name: 'Preview' }).click();
  assert.match(await page.getByRole('alert').textContent(), /usernamePattern/);
  assert.deepEqual(sent, []);
  await page.close();
});

test('with quota disabled the page says so and shows no Quota column', async () => {
  const off = await QuotaHub.start({ custom: { authMode: 'github', quota: { enabled: false } } });
  try {
    await off.set('zed', 5);
    const page = await newPage();
    await page.goto(`${off.url}/admin/users`);
    await page.getByRole('textbox', { name: 'API token' }).fill(off.admin);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForFunction(() => window.quotaPage.state === 'ready');
    assert.ok(await page.getByText('Quota is disabled').isVisible());
    assert.equal(await page.getByRole('columnheader', { name: 'Quota' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Edit quota for zed' }).count(), 0);
    assert.ok(await page.getByRole('rowheader', { name: 'zed' }).isVisible());
    await page.close();
  } finally {
    await off.stop();
  }
});

test('groups: a Groups column, a filter, a batch set for a group, and a refresh previewed by group', async () => {
  assert.equal((await hub.call('PUT', '/admin/api/quota/groups/course 101', { members: ['ann', 'carol'] })).status, 200);
  assert.equal((await hub.call('PUT', '/admin/api/quota/groups/lab', { members: ['bob', 'carol'] })).status, 200);
  const { page, sent, errors } = await signedIn();
  const rows = () => page.evaluate(() => [...document.querySelectorAll('#users tbody tr')]
    .filter((tr) => !tr.hidden).map((tr) => [tr.dataset.user, tr.cells[3].textContent]));
  assert.equal(await page.getByRole('columnheader', { name: 'Groups' }).count(), 1);
  const all = new Map(await rows());
  assert.equal(all.get('carol'), 'course 101, lab');
  assert.equal(all.get('bob'), 'lab');
  assert.equal(all.get('dave'), '');

  // The filter shows the members of one group; Select shown picks them for a batch.
  const filter = page.getByRole('combobox', { name: 'Group' });
  assert.deepEqual(await filter.locator('option').allTextContents(), ['All users', 'course 101', 'lab']);
  await filter.selectOption('course 101');
  assert.deepEqual(await rows(), [['ann', 'course 101'], ['carol', 'course 101, lab']]);
  await page.getByText('2 member(s) of course 101 shown').waitFor();
  await page.getByRole('button', { name: 'Select shown' }).click();
  await page.getByRole('button', { name: 'Set Quota' }).click();
  await page.getByRole('textbox', { name: 'Quota for selected users' }).fill('33');
  await page.getByRole('button', { name: 'Apply', exact: true }).first().click();
  await page.getByText(/^Set quota: 2 user\(s\) updated/).waitFor();
  const batch = sent.filter((s) => s.path.endsWith('/admin/api/quota/batch'));
  assert.equal(batch.length, 1, JSON.stringify(sent));
  assert.deepEqual(JSON.parse(batch[0].body).users.map((u) => [u.username, u.amount]), [['ann', 33], ['carol', 33]]);
  assert.equal((await hub.user('ann')).balance, 33);
  assert.equal((await hub.user('carol')).balance, 33);
  assert.notEqual((await hub.user('bob')).balance, 33, 'bob is not in course 101');

  // The refresh form targets groups; its preview equals the server's own dry run.
  await filter.selectOption('');
  await page.getByRole('button', { name: 'Refresh Quota' }).click();
  const region = page.getByRole('region', { name: 'Refresh quota' });
  await region.getByLabel('Action').selectOption('add');
  await region.getByRole('textbox', { name: 'Amount' }).fill('4');
  await region.getByRole('textbox', { name: 'Include groups' }).fill('lab, course 101');
  await region.getByRole('textbox', { name: 'Exclude groups' }).fill('course 101');
  await region.getByRole('button', { name: 'Preview' }).click();
  const table = region.getByRole('table', { name: 'Refresh preview' });
  await table.waitFor();
  const preview = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  const server = (await hub.call('POST', '/admin/api/quota/refresh', {
    action: 'add', amount: 4, targets: { includeGroups: ['lab', 'course 101'], excludeGroups: ['course 101'] }, dry_run: true,
  })).json;
  assert.deepEqual(preview, server.changes.map((c) => [c.username, String(c.balance_before), String(c.balance_after), '+4']));
  assert.deepEqual(preview.map((r) => r[0]), ['bob'], 'carol is in lab but excluded by course 101');
  await region.getByRole('button', { name: 'Apply' }).click();
  await region.getByText(/^Applied/).waitFor();
  assert.equal((await hub.user('bob')).balance, Number(preview[0][2]));
  assert.deepEqual(errors, []);
  await page.close();
});
