// The admin page (`{base}/admin/users`) in quota-hub and inside JupyterHub. It loads the users
// (one list request; for the Server column, the active sessions in quota-hub, the hub's own server
// states inside JupyterHub, which the page's config carries), the engine component for
// the pure functions (quota inputs, refresh previews), and renders one table. Every server error
// is shown in the alert; nothing fails silently.
import { loadEngine } from '../src/browser.js';
import { Api, ApiError, tokenSignIn, userPath } from './api.js';
import { BudgetsPanel, expiresAt } from './budgets-panel.js';
import { RunningPanel } from './running-panel.js';
import { RefreshPanel } from './refresh-panel.js';
import { CreditRequestsPanel } from './credit-requests-panel.js';
import { UsagePanel } from './usage-panel.js';
import { UsersTable } from './users-table.js';
import { credits, when } from './words.js';

const $ = (id) => document.getElementById(id);
const cfg = JSON.parse($('quota-page').textContent);
const api = new Api(cfg);
/** Figures for tests and the benchmark: request count, load and render milliseconds. */
window.quotaPage = { state: 'loading', api };

const page = {
  api,
  engine: null,
  table: null,
  error(message, fieldId) {
    const box = $('alert');
    box.textContent = message;
    box.hidden = false;
    if (fieldId) {
      $(fieldId).setAttribute('aria-invalid', 'true');
      $(fieldId).focus();
    }
  },
  clearError() {
    $('alert').hidden = true;
    $('alert').textContent = '';
    for (const el of document.querySelectorAll('[aria-invalid="true"]')) el.removeAttribute('aria-invalid');
  },
  say(message) {
    $('status').textContent = message;
  },
  reload: () => load(false),
};

/**
 * The Server column and what running servers hold: inside JupyterHub, the hub's own view of the
 * servers (`hubServers`: username -> {running, pending} counts); elsewhere the active sessions,
 * counted per user. The active sessions (paged by id, 1,000 a page) give each user's held credits
 * either way: the estimated costs of their billable servers charging their own balance.
 */
async function servers() {
  const shown = new Map();
  const counts = new Map();
  const held = new Map();
  let after = 0;
  for (;;) {
    let sessions;
    try {
      ({ sessions } = await api.get(`/api/quota/sessions?status=active&after_id=${after}`));
    } catch (e) {
      // Course staff may not list every session: their members' held credits are not shown.
      if (cfg.hubServers && e.status === 403) break;
      throw e;
    }
    for (const s of sessions) {
      counts.set(s.username, (counts.get(s.username) ?? 0) + 1);
      if (s.billable !== false && !s.budget) held.set(s.username, (held.get(s.username) ?? 0) + Number(s.estimated_cost ?? 0));
    }
    if (sessions.length < 1000) break;
    after = sessions[sessions.length - 1].session_id;
  }
  if (cfg.hubServers) {
    for (const [name, s] of Object.entries(cfg.hubServers)) {
      if (s.pending > 0) shown.set(name, 'pending');
      else if (s.running > 0) shown.set(name, s.running > 1 ? `running (${s.running})` : 'running');
    }
  } else {
    for (const [name, n] of counts) shown.set(name, `running (${n})`);
  }
  return { shown, held };
}

/**
 * Course staff see their groups' members and the budgets those groups share, with the actions they
 * may take: no refresh rules, no hub-wide usage, no unlimited users, no budget definitions.
 */
function staffView(rights) {
  page.rights = rights;
  if (rights.quota_admin) return;
  $('refresh-open').hidden = true;
  $('usage-open').hidden = true;
  $('set-value').placeholder = '100';
  $('page-title').textContent = `Users of ${rights.manages.join(', ')}`;
  $('staff-note').hidden = false;
  $('staff-note').textContent = `You manage the credit of the members of ${rights.manages.join(', ')} and of the budgets `
    + 'those groups share, never your own: another manager of your group or a quota admin changes it. '
    + 'Unlimited users, refresh rules and budget definitions are for quota admins.';
  for (const a of rights.staff_allowances || []) {
    const p = document.createElement('p');
    p.className = 'muted staff-allowance';
    p.textContent = allowanceText(a);
    $('staff-note').after(p);
  }
}

/** A group's staff allowance as staff read it (what one change and a month may add, what is left). */
export function allowanceText(a) {
  const bounds = [];
  if (a.per_change !== null) bounds.push(`up to ${credits(a.per_change)} in one change`);
  if (a.per_month !== null) bounds.push(`${credits(a.per_month)} a month (UTC)`);
  const left = a.left_this_month === null
    ? `you added ${credits(a.added_this_month)} this month`
    : `${credits(a.left_this_month)} left this month (you added ${credits(a.added_this_month)})`;
  return `Your allowance for “${a.group}”: ${bounds.join(', ')}; ${left}.`;
}

async function load(first) {
  const t0 = performance.now();
  const [rates, list, states, rights, pending] = await Promise.all([
    first ? api.get('/api/quota/rates') : Promise.resolve(null),
    api.get('/admin/api/quota/'),
    servers(),
    first ? api.get('/api/quota/me/rights') : Promise.resolve(null),
    first ? api.get('/admin/api/quota/requests?status=pending') : Promise.resolve(null),
  ]);
  if (pending) CreditRequestsPanel.badge(pending);
  if (first) {
    staffView(rights);
    // The engine only answers pure functions here; quota's switch is all its configuration needs.
    page.engine = await loadEngine(`${cfg.static}gen/`, { custom: { authMode: 'github', quota: { enabled: rates.enabled } } });
    page.enabled = rates.enabled;
    page.table = new UsersTable($('users'), {
      quota: rates.enabled, actions, unlimited: rights.quota_admin,
      // Course staff never change their own credit: their own row has no actions.
      self: rights.quota_admin ? null : rights.username,
    });
    $('disabled').hidden = rates.enabled;
    $('tools').hidden = !rates.enabled;
  }
  const users = mergeHubUsers(list.users);
  const t1 = performance.now();
  page.table.render(users, states.shown, states.held);
  groupFilter();
  const tBuilt = performance.now();
  void document.body.offsetHeight; // layout included in the render figure
  const t2 = performance.now();
  $('summary').textContent = `${users.length} user(s)${page.enabled ? '' : ' · quota disabled'}`;
  Object.assign(window.quotaPage, { state: 'ready', users: users.length, loadMs: t1 - t0, renderMs: t2 - t1, buildMs: tBuilt - t1, layoutMs: t2 - tBuilt });
}

/** The group filter's choices: every group a loaded user is in (kept when still there). */
function groupFilter() {
  const select = $('group-filter');
  const groups = page.table.groups();
  const keep = groups.includes(select.value) ? select.value : '';
  const options = [new Option('All users', '')].concat(groups.map((g) => new Option(g, g)));
  select.replaceChildren(...options);
  select.value = keep;
  $('group-tools').hidden = groups.length === 0;
  showGroup();
}

function showGroup() {
  const group = $('group-filter').value;
  const shown = page.table.filter(group);
  $('group-count').textContent = group ? `${shown} member(s) of ${group} shown` : '';
}

/** Inside JupyterHub the page also lists hub users who have no quota record yet (balance 0). */
function mergeHubUsers(users) {
  if (!cfg.hubUsers?.length) return users;
  const have = new Set(users.map((u) => u.username));
  const extra = cfg.hubUsers.filter((n) => !have.has(n)).map((username) => ({ username, balance: 0, unlimited: false, updated_at: null }));
  return extra.length ? [...users, ...extra].sort((a, b) => (a.username < b.username ? -1 : a.username > b.username ? 1 : 0)) : users;
}

/** A quota as typed, parsed by the engine: {unlimited: true} or {set: n}; null when invalid (shown). */
function parse(field, text) {
  try {
    return page.engine.parseQuotaInput(field, text);
  } catch (e) {
    page.error(e.message);
    return null;
  }
}

const actions = {
  /** Inline edit. A number on an unlimited user sets the balance and clears the flag in one call. */
  async save(name, text) {
    page.clearError();
    const q = parse(`Quota for ${name}`, text);
    if (!q) return false;
    if (q.unlimited && !page.rights.quota_admin) {
      page.error(`Quota for ${name}: only a quota admin may make a user unlimited; give a number`);
      return false;
    }
    const user = page.table.users.get(name);
    try {
      if (q.unlimited) {
        const r = await api.post(userPath(name), { action: 'set_unlimited', unlimited: true });
        page.table.update(name, { unlimited: true, balance: r.balance });
        page.say(`${name}: unlimited`);
      } else if (user.unlimited) {
        const r = await api.post('/admin/api/quota/batch', { users: [{ username: name, amount: q.set, unlimited: false }] });
        const d = r.details[0];
        if (d.status !== 'success') throw new ApiError(400, `${name}: ${d.error ?? d.status}`);
        page.table.update(name, { unlimited: false, balance: d.balance });
        page.say(`${name}: quota set to ${d.balance}`);
      } else {
        const r = await api.post(userPath(name), { action: 'set', amount: q.set });
        page.table.update(name, { balance: r.balance });
        page.say(`${name}: quota set to ${r.balance}`);
      }
      return true;
    } catch (e) {
      page.error(e.message);
      return false;
    }
  },

  async toggle(name, on) {
    page.clearError();
    try {
      const r = await api.post(userPath(name), { action: 'set_unlimited', unlimited: on });
      page.table.update(name, { unlimited: on, balance: r.balance });
      page.say(`${name}: ${on ? 'unlimited' : 'limited'}`);
      return true;
    } catch (e) {
      page.error(e.message);
      return false;
    }
  },

  async ledger(name) {
    page.clearError();
    try {
      const r = await api.get(userPath(name));
      const rows = document.createDocumentFragment();
      for (const t of r.recent_transactions) {
        const tr = document.createElement('tr');
        for (const [v, num] of [[when(t.created_at), false], [t.transaction_type, false], [t.amount, true], [t.balance_before, true],
          [t.balance_after, true], [t.created_by ?? '(system)', false], [t.description, false]]) {
          const td = document.createElement('td');
          if (num) td.className = 'num';
          td.textContent = String(v);
          tr.append(td);
        }
        rows.append(tr);
      }
      const panel = $('ledger');
      panel.setAttribute('aria-label', `Ledger of ${name}`);
      $('ledger-title').textContent = `Ledger of ${name}: ${r.recent_transactions.length} recent transaction(s)`;
      panel.querySelector('table:not(#ledger-grants) tbody').replaceChildren(rows);
      // The user's credit that lapses, soonest first.
      $('ledger-grants').hidden = !r.grants?.length;
      $('ledger-grants').tBodies[0].replaceChildren(
        ...(r.grants ?? []).map((g) => {
          const tr = document.createElement('tr');
          for (const [v, num] of [[when(g.granted_at), false], [g.amount, true], [g.remaining, true], [when(g.expires_at), false]]) {
            const td = document.createElement('td');
            if (num) td.className = 'num';
            td.textContent = String(v);
            tr.append(td);
          }
          return tr;
        }),
      );
      panel.hidden = false;
      $('ledger-close').focus();
    } catch (e) {
      page.error(e.message);
    }
  },
};

function setQuotaPanel() {
  const form = $('set-form');
  const open = (on) => {
    form.hidden = !on;
    if (on) {
      $('set-count').textContent = `${page.table.selected().length} selected`;
      $('set-value').focus();
    } else $('set-open').focus();
  };
  $('set-open').addEventListener('click', () => open(form.hidden));
  $('set-cancel').addEventListener('click', () => open(false));
  $('users').addEventListener('change', () => {
    if (!form.hidden) $('set-count').textContent = `${page.table.selected().length} selected`;
  });
  let busy = false;
  const apply = async () => {
    if (busy) return;
    page.clearError();
    const chosen = page.table.selected();
    if (!chosen.length) {
      page.error('Set quota: select at least one user first');
      return;
    }
    const q = parse('Quota for selected users', $('set-value').value);
    if (!q || (q.unlimited && !page.rights.quota_admin)) {
      if (q) page.error('Quota for selected users: only a quota admin may make users unlimited; give a number');
      $('set-value').setAttribute('aria-invalid', 'true');
      return;
    }
    // With an expiry, the new balance is one dated grant (a dated set).
    const at = q.unlimited ? null : expiresAt($('set-expires').value);
    const entries = chosen.map((u) => (q.unlimited ? { username: u.username, unlimited: true }
      : { username: u.username, amount: q.set, ...(u.unlimited ? { unlimited: false } : {}), ...(at ? { expires_at: at } : {}) }));
    busy = true;
    $('set-apply').disabled = true;
    const failed = [];
    let ok = 0;
    try {
      // One request (the batch route takes up to 1,000 entries; more go 1,000 at a time).
      for (let i = 0; i < entries.length; i += 1000) {
        const r = await api.post('/admin/api/quota/batch', { users: entries.slice(i, i + 1000) });
        for (const d of r.details) {
          if (d.status === 'success') {
            ok += 1;
            page.table.update(d.username, { balance: d.balance, unlimited: !!q.unlimited });
          } else failed.push(`${d.username}: ${d.error ?? d.status}`);
        }
      }
      page.say(`Set quota: ${ok} user(s) updated${failed.length ? `, ${failed.length} failed` : ''}`);
      if (failed.length) page.error(`Set quota failed for ${failed.length} user(s):\n${failed.join('\n')}`);
    } catch (e) {
      page.error(e.message);
    } finally {
      busy = false;
      $('set-apply').disabled = false;
    }
  };
  $('set-apply').addEventListener('click', apply);
  $('set-value').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      apply();
    }
  });
}

let wired = false;
let groupsWired = false;
async function start() {
  page.clearError();
  window.quotaPage.state = 'loading';
  try {
    await load(!page.table);
    if (!groupsWired) {
      groupsWired = true;
      $('group-filter').addEventListener('change', showGroup);
      $('select-shown').addEventListener('click', () => {
        const n = page.table.selectShown();
        page.say(`${n} user(s) selected`);
        $('users').dispatchEvent(new Event('change'));
      });
    }
    if (!wired && page.enabled) {
      wired = true;
      setQuotaPanel();
      new RefreshPanel(page);
      new UsagePanel(page);
      new BudgetsPanel(page);
      new RunningPanel(page);
      new CreditRequestsPanel(page);
      $('ledger-close').addEventListener('click', () => {
        $('ledger').hidden = true;
      });
    }
    if (cfg.auth === 'token') $('sign-out').hidden = false;
  } catch (e) {
    window.quotaPage.state = 'error';
    page.error(e.message);
    session.refused(e);
  }
}

const session = tokenSignIn(cfg, api, start, (m) => page.error(m), 'an admin token');
session.begin();
