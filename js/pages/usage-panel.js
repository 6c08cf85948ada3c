// The admin page's usage view: credits per day over a chosen range of UTC days (chart and table),
// the top users and accelerators of that range, and the range's ledger as a CSV download, read a
// page at a time through the same API as `quota-hub export-ledger` (the same columns).
import { drawUsage, fillRows } from './usage-chart.js';

const $ = (id) => document.getElementById(id);

/** The CSV columns, as `quota-hub export-ledger` writes them. */
export const LEDGER_COLUMNS = ['id', 'created_at', 'username', 'transaction_type', 'amount', 'resource_type', 'description', 'balance_before', 'balance_after', 'created_by', 'budget', 'expires_at'];

/** One CSV field, as the CLI writes it: quoted when it holds a comma, a quote or a line break. */
export function csvField(v) {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

const day = (d) => d.toISOString().slice(0, 10);

export class UsagePanel {
  constructor(page) {
    this.page = page;
    this.names = { cpu: 'CPU' };
    const today = new Date();
    $('u-to').value = day(today);
    $('u-from').value = day(new Date(today.getTime() - 29 * 86_400_000));
    $('usage-open').addEventListener('click', () => this.toggle());
    $('u-close').addEventListener('click', () => this.toggle(false));
    $('u-show').addEventListener('click', () => this.run(() => this.show()));
    $('u-export').addEventListener('click', () => this.run(() => this.exportCsv()));
    for (const id of ['u-from', 'u-to']) {
      $(id).addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter') this.run(() => this.show());
      });
    }
  }

  toggle(open = $('usage').hidden) {
    $('usage').hidden = !open;
    $('usage-open').setAttribute('aria-expanded', String(open));
    if (open) this.run(() => this.show());
  }

  async run(f) {
    this.page.clearError();
    try {
      await f();
    } catch (e) {
      this.page.error(e.message);
      window.quotaPage.usage = { state: 'error', error: e.message };
    }
  }

  range() {
    return `from=${encodeURIComponent($('u-from').value)}&to=${encodeURIComponent($('u-to').value)}`;
  }

  async show() {
    window.quotaPage.usage = { state: 'loading' };
    const q = this.range();
    const api = this.page.api;
    const [byDay, users, resources, rates] = await Promise.all([
      api.get(`/admin/api/quota/usage?${q}&group_by=day`),
      api.get(`/admin/api/quota/usage?${q}&group_by=user&order=credits&limit=10`),
      api.get(`/admin/api/quota/usage?${q}&group_by=resource&order=credits&limit=10`),
      api.get('/api/accelerators').catch(() => ({ accelerators: {} })),
    ]);
    for (const [key, a] of Object.entries(rates.accelerators ?? {})) this.names[key] = a.displayName || key;
    const t = byDay.totals;
    $('u-totals').textContent = `${byDay.from} to ${byDay.to}: ${t.credits} credits, ${t.minutes} minutes, ${t.sessions} session(s).`;
    await drawUsage($('u-chart'), $('u-days'), byDay.rows, this.names, `Credits per day, ${byDay.from} to ${byDay.to}`);
    fillRows($('u-users'), users.rows, 'User', 'Top users');
    fillRows($('u-resources'), resources.rows, 'Resource', 'Top resources', (k) => this.names[k] ?? k);
    window.quotaPage.usage = { state: 'ready', byDay, users, resources };
  }

  async exportCsv() {
    const q = this.range();
    const lines = [LEDGER_COLUMNS.join(',')];
    let after = 0;
    for (;;) {
      // No `limit`: the engine's largest page; `next_after_id` is null on the last one.
      const page = await this.page.api.get(`/admin/api/quota/transactions?${q}&after_id=${after}`);
      for (const t of page.transactions) lines.push(LEDGER_COLUMNS.map((c) => csvField(t[c])).join(','));
      this.page.say(`${lines.length - 1} transaction(s) read`);
      if (page.next_after_id === null) break;
      after = page.next_after_id;
    }
    const blob = new Blob([lines.join('\n') + '\n'], { type: 'text/csv' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `ledger-${$('u-from').value}-to-${$('u-to').value}.csv`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
    this.page.say(`${lines.length - 1} transaction(s) exported`);
  }
}
