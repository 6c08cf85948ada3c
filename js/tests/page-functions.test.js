// What the pages compute without a database (quota input, a spawn's price, a refresh's preview, the words): the same component code as the server's.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { QuotaEngine, QuotaError } from '../src/node.js';

const VALUES = { custom: { authMode: 'github', quota: { cpuRate: 1 }, accelerators: { phx: { quotaRate: 2.5 }, dgpu: { quotaRate: 4 } } } };
const e = new QuotaEngine(':memory:', VALUES);

test('quota input: the unlimited tokens, whole numbers, and nothing else', () => {
  for (const t of ['-1', '∞', 'unlimited', 'UNLIMITED', ' Unlimited ']) assert.deepEqual(e.parseQuotaInput('Quota for a', t), { unlimited: true }, t);
  assert.deepEqual(e.parseQuotaInput('Quota for a', '0'), { set: 0 });
  assert.deepEqual(e.parseQuotaInput('Quota for a', ' 250 '), { set: 250 });
  for (const t of ['', '-2', '1.5', 'abc', '10000001', '+5']) {
    assert.throws(() => e.parseQuotaInput('Quota for a', t), (err) => err instanceof QuotaError && err.message.startsWith('Quota for a:'), t);
  }
});

test('estimated cost of a spawn, with the gate’s own checks', () => {
  assert.deepEqual(e.estimateCost('phx', 60), { rate: 2.5, estimatedCost: 150 });
  assert.deepEqual(e.estimateCost(null, 7), { rate: 1, estimatedCost: 7 });
  assert.deepEqual(e.estimateCost('', 7), { rate: 1, estimatedCost: 7 });
  assert.throws(() => e.estimateCost('tpu', 5), (err) => err.kind === 'invalid' && /resource_type: unknown accelerator `tpu` \(known: cpu, phx, dgpu\)/.test(err.message));
  assert.throws(() => e.estimateCost('phx', 481), (err) => err.kind === 'invalid' && err.message.startsWith('runtime_minutes:'));
});

test('refresh preview equals the server’s refresh on the same users', () => {
  const users = [
    { username: 'ann', balance: 5, unlimited: false },
    { username: 'bob', balance: 95, unlimited: false },
    { username: 'cy', balance: 100, unlimited: false },
    { username: 'dee', balance: 0, unlimited: true },
    { username: 'stu1', balance: 10, unlimited: false },
  ];
  const body = { action: 'add', amount: 10, max_balance: 100, targets: { excludeUsers: ['stu1'] }, rule_name: 'manual' };
  const preview = e.refreshPreview(body, users);
  assert.deepEqual(preview.changes, [
    { username: 'ann', balance_before: 5, balance_after: 15 },
    { username: 'bob', balance_before: 95, balance_after: 100 },
  ]);
  // The same refresh on a database holding the same users.
  const db = new QuotaEngine(':memory:', VALUES);
  for (const u of users) {
    db.adminUpdate(u.username, 'set', u.balance, {}, 1795000000);
    if (u.unlimited) db.adminUpdate(u.username, 'set-unlimited', true, {}, 1795000000);
  }
  const applied = db.refresh(body, 1795000100);
  assert.equal(applied.users_updated, preview.users_updated);
  assert.equal(applied.total_change, preview.total_change);
  assert.throws(() => e.refreshPreview({ action: 'add' }, users), QuotaError);
});

test('the pages\' words (pages/words.js): plurals, one time format with UTC beside, one rounding of time left', async () => {
  const w = await import('../pages/words.js');
  assert.equal(w.credits(1), '1 credit');
  assert.equal(w.credits(2.5), '2.5 credits');
  assert.equal(w.credits(1250), '1,250 credits');
  assert.equal(w.rate(1), '1 credit/min');
  assert.equal(w.rate(4), '4 credits/min');
  assert.equal(w.resource('cpu', {}), 'CPU');
  assert.equal(w.resource('phx', { phx: 'PHX accelerator' }), 'PHX accelerator');
  assert.equal(w.payer(null), 'your balance');
  assert.equal(w.payer('physics'), 'budget physics');
  const zone = process.env.TZ;
  try {
    process.env.TZ = 'UTC';
    assert.equal(w.when('2026-11-29T06:00:00'), '2026-11-29 06:00 UTC');
    process.env.TZ = 'Europe/Berlin';
    assert.equal(w.when('2026-11-29T06:00:00'), '2026-11-29 07:00 (06:00 UTC)');
    assert.equal(w.when('2026-11-29T23:30:00Z'), '2026-11-30 00:30 (2026-11-29 23:30 UTC)');
  } finally {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  }
  // The navigation bar, the status bar, the banner and the toast count the same minutes.
  for (const [seconds, left, stops] of [[3600, '60 min left', 'stops in 60 minutes'], [61, '2 min left', 'stops in 2 minutes'],
    [60, '1 min left', 'stops in 1 minute'], [1, '1 min left', 'stops in 1 minute'], [0, 'stopping', 'is stopping'],
    [7500, '2 h 5 min left', 'stops in 125 minutes']]) {
    assert.equal(w.timeLeft(seconds), left, `${seconds} s`);
    assert.equal(w.stopsIn(seconds), stops, `${seconds} s`);
  }
  assert.equal(w.available(98, 2), '98 credits available (2 held by running servers)');
  assert.equal(w.available(null, 0), 'unlimited');
});
