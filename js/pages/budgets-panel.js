// The admin page's Budgets view: every shared budget (balance, reservations, members, monthly
// limit, where it is defined), one budget's detail (its grants with their expiry, each member's
// month, its newest transactions) and its balance actions (set, add with an optional expiry,
// deduct), through the engine's budget routes. Every refusal is the server's own message.

const $ = (id) => document.getElementById(id);
import { when } from './words.js';
const enc = encodeURIComponent;

function cells(tr, values) {
  for (const [v, num] of values) {
    const td = document.createElement('td');
    if (num) td.className = 'num';
    td.textContent = String(v);
    tr.append(td);
  }
  return tr;
}

/** `2026-12-18T17:00` from a datetime-local field (UTC, as every time on the page) as RFC 3339. */
export function expiresAt(text) {
  return text ? `${text.length === 16 ? `${text}:00` : text}Z` : null;
}

export class BudgetsPanel {
  constructor(page) {
    this.page = page;
    this.chosen = null;
    $('budgets-open').addEventListener('click', () => this.toggle());
    $('b-close').addEventListener('click', () => this.toggle(false));
    $('b-apply').addEventListener('click', () => this.run(() => this.change()));
    $('b-list').addEventListener('click', (ev) => {
      const name = ev.target.closest('button.budget-detail')?.dataset.name;
      if (name) this.run(() => this.detail(name));
    });
  }

  toggle(open = $('budgets').hidden) {
    $('budgets').hidden = !open;
    $('budgets-open').setAttribute('aria-expanded', String(open));
    if (open) this.run(() => this.list());
  }

  async run(f) {
    this.page.clearError();
    try {
      await f();
    } catch (e) {
      this.page.error(e.message);
      window.quotaPage.budgets = { state: 'error', error: e.message };
    }
  }

  async list() {
    const { budgets } = await this.page.api.get('/admin/api/quota/budgets');
    const rows = budgets.map((b) => {
      const tr = cells(document.createElement('tr'), [
        [b.name, false], [b.description, false], [b.balance, true], [b.reserved, true], [b.members, true],
        [b.member_limit ?? 'none', true], [b.accelerators ? b.accelerators.join(', ') : 'all', false], [b.source, false],
      ]);
      const td = document.createElement('td');
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'btn btn-sm btn-outline-secondary budget-detail';
      button.dataset.name = b.name;
      button.textContent = 'Details';
      button.setAttribute('aria-label', `Details of budget ${b.name}`);
      td.append(button);
      tr.append(td);
      return tr;
    });
    $('b-list').tBodies[0].replaceChildren(...rows);
    $('b-none').hidden = budgets.length > 0;
    window.quotaPage.budgets = { state: 'ready', budgets: budgets.length };
    if (this.chosen && budgets.some((b) => b.name === this.chosen)) await this.detail(this.chosen);
  }

  async detail(name) {
    const d = await this.page.api.get(`/admin/api/quota/budgets/${enc(name)}`);
    this.chosen = name;
    $('b-detail').hidden = false;
    $('b-title').textContent = `Budget ${d.name}: balance ${d.balance}, ${d.reserved} reserved`;
    $('b-grants').tBodies[0].replaceChildren(
      ...d.grants.map((g) => cells(document.createElement('tr'), [[g.grant_id, true], [when(g.granted_at), false], [g.amount, true], [g.remaining, true], [when(g.expires_at), false]])),
    );
    $('b-members').tBodies[0].replaceChildren(
      ...d.members.map((m) => cells(document.createElement('tr'), [[m.username, false], [m.spent_this_month, true], [m.reserved, true]])),
    );
    $('b-recent').tBodies[0].replaceChildren(
      ...d.recent_transactions.map((t) => cells(document.createElement('tr'), [
        [when(t.created_at), false], [t.transaction_type, false], [t.username ?? '', false], [t.amount, true], [t.balance_after, true],
        [t.expires_at ? when(t.expires_at) : '', false], [t.created_by ?? '(system)', false], [t.description, false],
      ])),
    );
    window.quotaPage.budgets = { ...window.quotaPage.budgets, shown: name, balance: d.balance };
  }

  async change() {
    if (!this.chosen) return;
    const action = $('b-action').value;
    const amount = Number($('b-amount').value.trim());
    if (!/^-?\d+$/.test($('b-amount').value.trim())) {
      this.page.error('amount: a whole number of credits', 'b-amount');
      return;
    }
    const body = { action, amount };
    const at = expiresAt($('b-expires').value);
    if (at && action !== 'deduct') body.expires_at = at;
    const r = await this.page.api.post(`/admin/api/quota/budgets/${enc(this.chosen)}`, body);
    this.page.say(`Budget ${r.budget}: ${action} ${amount}, balance ${r.balance}`);
    await this.list();
  }
}
