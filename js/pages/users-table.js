// The users table: one row per user, built in one pass (10,000 rows render in one frame's work),
// and every per-row control handled by delegation on the table body. Inline edit lives here too:
// click the value, Enter saves, Escape cancels only the edit.

import { when } from './words.js';

const fmt = (n) => String(n);

/**
 * What a user can spend now (docs/glossary.md): the balance less what their running servers hold,
 * written as the Quota column writes the balance beside it (plain digits: 10,000 rows render in
 * one pass, and toLocaleString would cost more than the rest of a row).
 */
export function availableText(u) {
  if (u.unlimited) return '∞';
  const held = Number(u.held ?? 0);
  return held > 0 ? `${fmt(u.balance - held)} (${fmt(held)} held)` : fmt(u.balance);
}

export class UsersTable {
  /**
   * `table`: the <table>; `quota`: quota is enabled (Quota (balance), Available, Unlimited and
   * Ledger columns);
   * `actions`: {save(user, text), toggle(user, on), ledger(user)} (each returns a promise, resolved
   * true when the change was made); `unlimited`: the Unlimited boxes may be changed (course staff:
   * shown, disabled); `self`: course staff's own name, whose row has no actions (separation of
   * duties: another manager of the group or a quota admin changes their credit).
   */
  constructor(table, { quota, actions, unlimited = true, self = null }) {
    this.table = table;
    /** Whether the caller may make users unlimited (quota admins; course staff may not). */
    this.mayUnlimit = unlimited;
    this.self = self;
    this.body = table.tBodies[0];
    this.quota = quota;
    this.actions = actions;
    /** username -> {username, balance, held, unlimited, updated_at, server} */
    this.users = new Map();
    this.rows = new Map();
    this.editing = null;
    // The rows are CSS grids (for speed with 10,000 users): say the table roles explicitly.
    table.setAttribute('role', 'table');
    for (const part of [table.tHead, this.body]) part.setAttribute('role', 'rowgroup');
    table.tHead.rows[0].setAttribute('role', 'row');
    table.classList.toggle('no-quota', !quota);
    this.header();
    this.body.addEventListener('click', (ev) => this.onClick(ev));
    this.body.addEventListener('change', (ev) => this.onChange(ev));
    this.body.addEventListener('keydown', (ev) => this.onKey(ev));
  }

  header() {
    const cols = [['Select', 'visually-hidden'], ['User'], ['Server'], ['Groups']];
    // The specification's "Quota column" holds the balance; Available is what the user can spend now.
    if (this.quota) cols.push(['Quota (balance)', 'num'], ['Available', 'num'], ['Unlimited'], ['Last updated'], ['Ledger', 'visually-hidden']);
    const tr = this.table.tHead.rows[0];
    tr.replaceChildren(...cols.map(([text, cls]) => {
      const th = document.createElement('th');
      th.scope = 'col';
      th.setAttribute('role', 'columnheader');
      if (cls === 'num') th.className = 'num';
      if (cls === 'visually-hidden') {
        const s = document.createElement('span');
        s.className = cls;
        s.textContent = text;
        th.append(s);
      } else th.textContent = text;
      return th;
    }));
  }

  /**
   * Replaces every row. `users`: the list route's records; `servers`: username -> the server
   * status shown (`running (1)`, `pending`; a user not in it is `stopped`); `held`: username -> what
   * their running servers hold (none: 0).
   */
  render(users, servers, held = new Map()) {
    this.editing = null;
    this.users.clear();
    this.rows.clear();
    const frag = document.createDocumentFragment();
    for (const u of users) {
      const user = { ...u, server: servers.get(u.username) ?? 'stopped', held: held.get(u.username) ?? 0 };
      this.users.set(u.username, user);
      const tr = this.row(user);
      this.rows.set(u.username, tr);
      frag.append(tr);
    }
    this.body.replaceChildren(frag);
    this.table.hidden = false;
    if (this.group) this.filter(this.group);
  }

  /** The row every user's row is cloned from (cloning is several times faster than building). */
  prototype() {
    const tr = el('tr', {}, { role: 'row' });
    const sel = el('input', { type: 'checkbox', className: 'sel' });
    const name = el('th', { scope: 'row' }, { role: 'rowheader' });
    const server = el('td', { className: 'server' }, { role: 'cell' });
    const groups = el('td', { className: 'groups' }, { role: 'cell' });
    tr.append(cell(sel), name, server, groups);
    if (this.quota) {
      const q = cell(el('button', { type: 'button', className: 'edit' }));
      q.className = 'num quota';
      const avail = el('td', { className: 'num available' }, { role: 'cell' });
      const unl = el('input', { type: 'checkbox', className: 'unl' });
      if (!this.mayUnlimit) {
        unl.disabled = true;
        unl.title = 'Only a quota admin may make a user unlimited';
      }
      const updated = el('td', { className: 'updated' }, { role: 'cell' });
      const ledger = el('button', {
        type: 'button',
        className: 'ledger btn btn-sm btn-outline-secondary',
        textContent: 'Ledger',
      });
      tr.append(q, avail, cell(unl), updated, cell(ledger));
    }
    return tr;
  }

  row(u) {
    this.proto ??= this.prototype();
    const tr = this.proto.cloneNode(true);
    const c = tr.cells;
    tr.dataset.user = u.username;
    c[0].firstChild.setAttribute('aria-label', `Select ${u.username}`);
    c[1].textContent = u.username;
    if (this.quota) {
      c[4].firstChild.setAttribute('aria-label', `Edit quota for ${u.username}`);
      c[6].firstChild.setAttribute('aria-label', `Unlimited for ${u.username}`);
      c[8].firstChild.setAttribute('aria-label', `Ledger for ${u.username}`);
    }
    if (u.username === this.self) this.own(tr);
    this.fill(tr, u);
    return tr;
  }

  /**
   * Writes a user's values into their row (cells: select, user, server, groups, quota, available,
   * unlimited, updated, ledger).
   */
  fill(tr, u) {
    const c = tr.cells;
    c[2].textContent = u.server;
    c[2].classList.toggle('running', u.server.startsWith('running'));
    c[2].classList.toggle('pending', u.server === 'pending');
    c[3].textContent = (u.groups ?? []).join(', ');
    if (!this.quota) return;
    // While the value is edited its button is off the page (kept in `editing`).
    const edit = c[4].querySelector('button.edit') ?? (this.editing?.name === u.username ? this.editing.button : null);
    if (edit) edit.textContent = u.unlimited ? '∞' : fmt(u.balance);
    c[5].textContent = availableText(u);
    c[6].firstChild.checked = !!u.unlimited;
    c[7].textContent = when(u.updated_at);
  }

  /** Every group a loaded user is in, by name. */
  groups() {
    const all = new Set();
    for (const u of this.users.values()) for (const g of u.groups ?? []) all.add(g);
    return [...all].sort();
  }

  /** Shows only the members of `group` (every user when empty); returns how many are shown. */
  filter(group) {
    this.group = group || '';
    let shown = 0;
    for (const [name, tr] of this.rows) {
      const show = !this.group || (this.users.get(name).groups ?? []).includes(this.group);
      tr.hidden = !show;
      shown += show;
    }
    return shown;
  }

  /** Selects every row shown (the members of the filtered group); returns how many. */
  selectShown() {
    let n = 0;
    for (const tr of this.rows.values()) {
      if (tr.hidden || tr.cells[0].firstChild.disabled) continue;
      tr.cells[0].firstChild.checked = true;
      n += 1;
    }
    return n;
  }

  /** Merges fields into a user (after a write) and redraws the row. */
  update(username, fields) {
    const u = this.users.get(username);
    if (!u) return;
    Object.assign(u, fields);
    this.fill(this.rows.get(username), u);
  }

  /** The users whose rows are selected and shown (a filter hides the others from a batch). */
  selected() {
    return [...this.body.querySelectorAll('input.sel:checked')]
      .map((c) => c.closest('tr'))
      .filter((tr) => !tr.hidden)
      .map((tr) => this.users.get(tr.dataset.user));
  }

  /** Course staff's own row: read only, and why. */
  own(tr) {
    const why = 'Your own credit: another manager of your group or a quota admin changes it';
    tr.classList.add('own');
    tr.cells[0].firstChild.disabled = true;
    const note = el('span', { className: 'own-note muted', textContent: ' (you)', title: why });
    tr.cells[1].append(note);
    tr.cells[1].title = why;
    if (this.quota) {
      const edit = tr.cells[4].firstChild;
      edit.disabled = true;
      edit.title = why;
      edit.setAttribute('aria-label', `Quota of ${tr.dataset.user}: ${why}`);
    }
  }

  list() {
    return [...this.users.values()];
  }

  userOf(ev) {
    const tr = ev.target.closest('tr[data-user]');
    return tr ? tr.dataset.user : null;
  }

  onClick(ev) {
    const name = this.userOf(ev);
    if (name === null) return;
    if (ev.target.closest('button.edit') && name !== this.self) this.startEdit(name);
    else if (ev.target.closest('button.ledger')) this.actions.ledger(name);
  }

  async onChange(ev) {
    if (!ev.target.matches('input.unl')) return;
    const name = this.userOf(ev);
    const box = ev.target;
    const want = box.checked;
    box.disabled = true;
    const ok = await this.actions.toggle(name, want);
    box.disabled = false;
    // On failure the row shows the stored state again.
    if (!ok) box.checked = !!this.users.get(name)?.unlimited;
  }

  startEdit(name) {
    if (this.editing) this.cancelEdit();
    const tr = this.rows.get(name);
    const u = this.users.get(name);
    const button = tr.querySelector('button.edit');
    const input = document.createElement('input');
    input.type = 'text';
    input.className = 'quota-input';
    input.size = 8;
    input.autocomplete = 'off';
    input.setAttribute('aria-label', `Quota for ${name}`);
    input.value = u.unlimited ? '∞' : fmt(u.balance);
    // The button leaves the page while its input is there (one control named for this user's quota).
    button.replaceWith(input);
    this.editing = { name, input, button, busy: false };
    input.focus();
    input.select();
  }

  cancelEdit() {
    const e = this.editing;
    if (!e) return;
    this.editing = null;
    e.input.replaceWith(e.button);
    e.button.focus();
  }

  async onKey(ev) {
    const e = this.editing;
    if (!e || ev.target !== e.input) return;
    if (ev.key === 'Escape') {
      // Only the edit closes: nothing else on the page hears this Escape.
      ev.preventDefault();
      ev.stopPropagation();
      if (!e.busy) this.cancelEdit();
    } else if (ev.key === 'Enter') {
      ev.preventDefault();
      ev.stopPropagation();
      if (e.busy) return;
      e.busy = true;
      e.input.readOnly = true;
      e.input.setAttribute('aria-busy', 'true');
      const ok = await this.actions.save(e.name, e.input.value);
      e.busy = false;
      e.input.readOnly = false;
      e.input.removeAttribute('aria-busy');
      if (ok) {
        if (this.editing === e) this.cancelEdit();
      } else {
        e.input.setAttribute('aria-invalid', 'true');
        e.input.focus();
      }
    }
  }
}

/** An element with these properties and attributes. */
function el(tag, props = {}, attrs = {}) {
  const e = Object.assign(document.createElement(tag), props);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function cell(child) {
  const td = document.createElement('td');
  td.setAttribute('role', 'cell');
  td.append(child);
  return td;
}
