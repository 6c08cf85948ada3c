// The admin page's Requests view: credit requests oldest first (pending by default), and a
// decision on one: approve (at most what was asked, optionally dated) or deny with a note to the
// user. Course staff see the requests of their groups' members and of the budgets those groups
// share (the server keeps them to those); the count of pending ones shows on the button.
import { expiresAt } from './budgets-panel.js';
import { when } from './words.js';

const $ = (id) => document.getElementById(id);

export class CreditRequestsPanel {
  constructor(page) {
    this.page = page;
    this.chosen = null;
    $('requests-open').addEventListener('click', () => this.toggle());
    $('q-close').addEventListener('click', () => this.toggle(false));
    $('q-status').addEventListener('change', () => this.run(() => this.list()));
    $('q-cancel').addEventListener('click', () => this.choose(null));
    $('q-approve').addEventListener('click', () => this.run(() => this.decide('approve')));
    $('q-deny').addEventListener('click', () => this.run(() => this.decide('deny')));
    $('q-list').addEventListener('click', (ev) => {
      const id = ev.target.closest('button.request-decide')?.dataset.id;
      if (id) this.choose(this.shown.get(Number(id)));
    });
    this.shown = new Map();
  }

  /** The pending count on the button, from the first page of pending requests (load reads it). */
  static badge(first) {
    const n = first.requests.length;
    const more = first.next_after_id !== null && first.next_after_id !== undefined;
    $('requests-count').textContent = n ? `${n}${more ? '+' : ''}` : '';
    $('requests-open').setAttribute('aria-label', `Requests: ${n}${more ? ' or more' : ''} pending`);
  }

  toggle(open = $('requests-view').hidden) {
    $('requests-view').hidden = !open;
    $('requests-open').setAttribute('aria-expanded', String(open));
    if (open) this.run(() => this.list());
  }

  async run(f) {
    this.page.clearError();
    try {
      await f();
    } catch (e) {
      this.page.error(e.message);
      window.quotaPage.requests = { state: 'error', error: e.message };
    }
  }

  /** Every page of requests with `status` (all when empty). */
  async all(status) {
    const out = [];
    for (let after = 0; ;) {
      const q = `${status ? `status=${status}&` : ''}after_id=${after}`;
      const page = await this.page.api.get(`/admin/api/quota/requests?${q}`);
      out.push(...page.requests);
      if (page.next_after_id === null || page.next_after_id === undefined) return out;
      after = page.next_after_id;
    }
  }

  async count() {
    CreditRequestsPanel.badge(await this.page.api.get('/admin/api/quota/requests?status=pending'));
  }

  async list() {
    const status = $('q-status').value;
    const rows = await this.all(status);
    this.shown = new Map(rows.map((r) => [r.id, r]));
    $('q-none').hidden = rows.length > 0;
    $('q-list').hidden = rows.length === 0;
    $('q-list').tBodies[0].replaceChildren(...rows.map((r) => this.row(r)));
    if (status === 'pending') CreditRequestsPanel.badge({ requests: rows, next_after_id: null });
    window.quotaPage.requests = { state: 'ready', shown: rows.length };
  }

  row(r) {
    const tr = document.createElement('tr');
    const decision = r.status === 'pending' ? null
      : `${r.status}${r.granted !== null ? ` ${r.granted}` : ''} by ${r.decided_by} ${when(r.decided_at)}${r.note ? `: ${r.note}` : ''}`;
    for (const [v, num] of [[r.id, true], [r.username, false], [r.budget ? `budget ${r.budget}` : `${r.username}'s balance`, false],
      [r.amount, true], [r.reason, false], [when(r.created_at), false]]) {
      const td = document.createElement('td');
      if (num) td.className = 'num';
      td.textContent = String(v);
      tr.append(td);
    }
    const td = document.createElement('td');
    if (decision) td.textContent = decision;
    else {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'btn btn-sm btn-outline-secondary request-decide';
      b.dataset.id = String(r.id);
      b.textContent = 'Decide';
      b.setAttribute('aria-label', `Decide request ${r.id} of ${r.username}`);
      td.append(b);
    }
    tr.append(td);
    return tr;
  }

  choose(r) {
    this.chosen = r;
    $('q-decide').hidden = !r;
    if (!r) return;
    $('q-title').textContent = `Request ${r.id}: ${r.username} asks ${r.amount} credits for ${r.budget ? `budget ${r.budget}` : 'their balance'}`;
    $('q-amount').value = String(r.amount);
    $('q-expires').value = '';
    $('q-note').value = '';
    $('q-amount').focus();
  }

  async decide(action) {
    const r = this.chosen;
    if (!r) return;
    const note = $('q-note').value.trim();
    const body = { action };
    if (action === 'approve') {
      const text = $('q-amount').value.trim();
      if (!/^\d+$/.test(text)) {
        this.page.error('Credits to grant: a whole number of credits', 'q-amount');
        return;
      }
      body.amount = Number(text);
      const at = expiresAt($('q-expires').value);
      if (at) body.expires_at = at;
      if (note) body.note = note;
    } else {
      if (!note) {
        this.page.error('Note to the user: say why the request is denied', 'q-note');
        return;
      }
      body.note = note;
    }
    const done = await this.page.api.post(`/admin/api/quota/requests/${r.id}`, body);
    this.page.say(`Request ${done.id} ${done.status}${done.granted !== null ? `: ${done.granted} credits to ${done.budget ? `budget ${done.budget}` : done.username}` : ''}`);
    this.choose(null);
    await this.list();
    await this.count();
    if (done.status === 'approved' && !done.budget) await this.page.reload();
  }
}
