// Course staff and credit requests through the pages, end to end: a real `quota-hub serve` over a
// temporary SQLite file and Debian's Chromium. A student asks for credit on their own page; a
// course-staff token (`--scope quota:manage --group course-101`) sees only its group's members and
// the actions it may take, decides the request in the admin page's Requests view, and the student
// sees the decision. Screenshots are left in target/test-artifacts/.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';

import { QuotaHub, launchBrowser, screenshotPath } from './support/quota-hub.js';

const VALUES = {
  custom: {
    authMode: 'github',
    quota: { enabled: true, cpuRate: 1, minimumToStart: 1, budgets: { c101: { description: 'Intro', groups: ['course-101'], accelerators: ['cpu'] } } },
  },
};
let hub;
let browser;
let annToken;
let staffToken;

before(async () => {
  hub = await QuotaHub.start(VALUES);
  const issue = (args) => execFileSync(hub.bin, ['token', 'issue', '--db', `sqlite://${hub.db}`, ...args], { encoding: 'utf8' }).trim();
  annToken = issue(['--user', 'ann']);
  staffToken = issue(['--user', 'tina', '--scope', 'quota:manage', '--group', 'course-101']);
  const put = await hub.call('PUT', '/admin/api/quota/groups/course-101', { members: ['ann', 'ben'] });
  assert.equal(put.status, 200, JSON.stringify(put));
  for (const [name, amount] of [['ann', 10], ['ben', 20], ['cat', 30]]) await hub.set(name, amount);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await hub?.stop();
});

async function signedIn(path, token, ready) {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.setDefaultTimeout(15_000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${hub.url}${path}`);
  await page.getByRole('textbox', { name: 'API token' }).fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction((w) => window[w].state !== 'loading', ready);
  if ((await page.evaluate((w) => window[w].state, ready)) !== 'ready') assert.fail(await page.locator('#alert').textContent());
  return { page, errors };
}

test('a student asks, course staff see only their group and decide, the student reads the decision', async () => {
  // The student's page: a request for their own credit; a bad amount names the field first.
  const student = await signedIn('/quota', annToken, 'quotaUser');
  const ask = student.page.getByRole('region', { name: 'Ask for credit' });
  await ask.getByRole('textbox', { name: 'Credits' }).fill('abc');
  await ask.getByRole('button', { name: 'Request credits' }).click();
  await student.page.getByText('Credits: a whole number of credits, 1 or more').waitFor();
  await ask.getByRole('textbox', { name: 'Credits' }).fill('25');
  await ask.getByRole('textbox', { name: 'Reason' }).fill('Final project: two more GPU sessions');
  await ask.getByRole('button', { name: 'Request credits' }).click();
  await student.page.getByText(/^Request 1 sent: 25 credits for your balance/).waitFor();
  // A second one for the same account is the server's 409, said in the page.
  await ask.getByRole('textbox', { name: 'Credits' }).fill('5');
  await ask.getByRole('textbox', { name: 'Reason' }).fill('again');
  await ask.getByRole('button', { name: 'Request credits' }).click();
  await student.page.getByText(/you already have a pending request for your own credit \(request 1\)/).waitFor();
  assert.deepEqual(await ask.getByRole('combobox', { name: 'For' }).locator('option').allTextContents(), ['Your balance', 'Budget c101']);
  await student.page.screenshot({ path: screenshotPath('user-request.png'), fullPage: true });

  // Course staff: their group's members only, no refresh, no unlimited, the pending request.
  const staff = await signedIn('/admin/users', staffToken, 'quotaPage');
  const p = staff.page;
  assert.equal(await p.getByRole('heading', { level: 1 }).textContent(), 'Users of course-101');
  const names = await p.locator('#users tbody th').allTextContents();
  assert.deepEqual(names, ['ann', 'ben'], 'cat is in no group tina manages');
  assert.equal(await p.getByRole('button', { name: 'Refresh Quota' }).isVisible(), false);
  assert.equal(await p.getByRole('checkbox', { name: 'Unlimited for ann' }).isDisabled(), true);
  await p.getByRole('button', { name: 'Requests: 1 pending' }).click();
  const view = p.getByRole('region', { name: 'Credit requests' });
  await view.getByRole('button', { name: 'Decide request 1 of ann' }).click();
  await view.getByRole('textbox', { name: 'Credits to grant' }).fill('20');
  await view.getByRole('textbox', { name: 'Note to the user' }).fill('20 is enough for two sessions');
  await view.getByRole('button', { name: 'Approve' }).click();
  await p.getByText('Request 1 approved: 20 credits to ann').waitFor();
  await p.locator('#q-decide').waitFor({ state: 'hidden' });
  await view.getByText('No request.').waitFor();
  assert.equal((await hub.user('ann')).balance, 30);
  const [row] = (await hub.call('GET', '/admin/api/quota/users/ann')).json.recent_transactions;
  assert.deepEqual([row.amount, row.created_by, row.description], [20, 'tina', 'Credit request 1']);
  // Outside the group, the server refuses and the page says so; nothing changes.
  const refused = await hub.call('POST', '/admin/api/quota/users/cat', { action: 'add', amount: 5 }, staffToken);
  assert.equal(refused.status, 403);
  assert.equal((await hub.user('cat')).balance, 30);
  await p.screenshot({ path: screenshotPath('staff-admin.png'), fullPage: true });

  // The student sees the decision and its note.
  await student.page.reload();
  await student.page.getByRole('textbox', { name: 'API token' }).waitFor({ state: 'detached', timeout: 5_000 }).catch(() => {});
  await student.page.waitForFunction(() => window.quotaUser?.state === 'ready');
  const mine = await student.page.$$eval('#my-requests tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.equal(mine.length, 1);
  assert.deepEqual(mine[0].slice(1), ['Your balance', '25', 'Final project: two more GPU sessions', 'approved: 20 credits', '20 is enough for two sessions']);
  assert.equal(await student.page.locator('#balance').textContent(), '30 credits available');
  assert.deepEqual([...student.errors, ...staff.errors], []);
  await student.page.close();
  await p.close();
});
