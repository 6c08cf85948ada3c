// The user page (`{base}/quota`) in quota-hub and inside JupyterHub: the caller's balance, the credit
// that lapses and when, the budgets they may charge, when the next top-up comes, how long the balance lasts per resource, their running servers with the cost
// so far and the auto-stop time (each extendable), the credits spent per day over the last 30 days (chart and table)
// and their ledger, a page at a time. Every server error is shown in the alert.
import { Api, tokenSignIn } from './api.js';
import { drawUsage } from './usage-chart.js';
import { extendCell } from './running-panel.js';
import { CreditRequestForm } from './credit-request-form.js';
import { credits, payer, resource, server, when } from './words.js';

const $ = (id) => document.getElementById(id);
const cfg = JSON.parse($('quota-page').textContent);
const api = new Api(cfg);
/** For tests and the benchmark: state, request count, milliseconds to usable. */
window.quotaUser = { state: 'loading', api };

/** Ledger rows per page. */
const PAGE = 50;

const td = (text, cls) => {
  const c = document.createElement('td');
  if (cls) c.className = cls;
  c.textContent = text;
  return c;
};
const row = (cells) => {
  const tr = document.createElement('tr');
  tr.append(...cells);
  return tr;
};

function error(message, fieldId) {
  $('alert').textContent = message;
  $('alert').hidden = false;
  if (fieldId) $(fieldId).focus();
}


function showMe(me, label) {
  $('who').textContent = me.username;
  // What can be spent now first, then the balance and what running servers hold of it
  // (docs/glossary.md).
  const unlimited = me.available === null || me.available === undefined;
  $('balance').textContent = unlimited ? 'Unlimited' : `${credits(me.available)} available`;
  $('balance-note').textContent = !me.enabled ? 'Quota is disabled on this hub: nothing is charged.' : me.unlimited ? 'Your credits are unlimited.' : '';
  $('available').textContent = unlimited
    ? ''
    : `Balance ${credits(me.balance)}${Number(me.held) > 0 ? `, of which ${credits(me.held)} held by your running servers until they end` : ''}.`;
  const soon = me.expiring_next;
  $('expiring').textContent = soon ? `${credits(soon.amount)} expire on ${when(soon.expires_at)}.` : '';
  $('grants').hidden = !me.grants?.length;
  $('grants').tBodies[0].replaceChildren(
    ...(me.grants ?? []).map((g) => row([td(when(g.granted_at)), td(String(g.amount), 'num'), td(String(g.remaining), 'num'), td(when(g.expires_at))])),
  );
  $('budgets-panel').hidden = !me.budgets?.length;
  $('budgets').tBodies[0].replaceChildren(
    ...(me.budgets ?? []).map((b) =>
      row([
        td(b.description ? `${b.name}: ${b.description}` : b.name),
        td(String(b.balance), 'num'),
        td(String(b.available), 'num'),
        td(String(b.spent_this_month), 'num'),
        td(b.member_limit === null ? 'none' : String(b.member_limit), 'num'),
        td(b.expiring_next ? `${b.expiring_next.amount} on ${when(b.expiring_next.expires_at)}` : ''),
      ]),
    ),
  );
  const next = me.next_refresh;
  $('next-refresh').textContent = next
    ? `Next top-up: ${when(next.at)} (rule ${next.rule}), to ${credits(next.balance)}.`
    : 'No refresh rule will change your balance.';
  const body = $('lasts').tBodies[0];
  body.replaceChildren(
    ...Object.entries(me.lasts_minutes ?? {}).map(([r, m]) =>
      row([td(label(r)), td(String(me.rates[r] ?? ''), 'num'), td(m === null ? 'unlimited' : String(m), 'num')]),
    ),
  );
}

function showRunning(sessions, label) {
  const running = sessions.filter((s) => s.status === 'active');
  $('running').hidden = running.length === 0;
  $('no-running').hidden = running.length > 0;
  $('running').tBodies[0].replaceChildren(
    ...running.map((s) =>
      row([
        td(server(s.server_name)), td(label(s.resource_type)), td(payer(s.budget)),
        td(when(s.start_time)), td(String(s.cost_so_far), 'num'), td(when(s.ends_at)),
        extendCell(api, s, async (after) => {
          $('alert').hidden = true;
          $('status').textContent = `Server ${server(s.server_name)} now stops at ${when(after.ends_at)}.`;
          const mine = await api.get('/api/quota/me/sessions?limit=100');
          showRunning(mine.sessions, label);
        }, error),
      ]),
    ),
  );
}

let after = null;
async function older(label) {
  const q = after === null ? '' : `&after=${after}`;
  const page = await api.get(`/api/quota/me/transactions?limit=${PAGE}${q}`);
  $('history').tBodies[0].append(
    ...page.transactions.map((t) =>
      row([td(when(t.created_at)), td(t.transaction_type), td(t.resource_type ? label(t.resource_type) : ''), td(String(t.amount), 'num'), td(String(t.balance_after), 'num'), td(t.description)]),
    ),
  );
  after = page.next_after;
  $('older').hidden = after === null;
  return page.transactions.length;
}

async function start() {
  const t0 = performance.now();
  try {
    const [me, mine, usage] = await Promise.all([
      api.get('/api/quota/me'),
      api.get('/api/quota/me/sessions?limit=100'),
      api.get('/api/quota/me/usage'),
    ]);
    const known = me.resource_names ?? {};
    const label = (r) => resource(r, known);
    showMe(me, label);
    showRunning(mine.sessions, label);
    await older(label);
    const say = (m) => {
      $('status').textContent = m;
    };
    const asks = new CreditRequestForm(api, me, say, error);
    await asks.list();
    $('content').hidden = false;
    await drawUsage($('usage-chart'), $('usage-table'), usage.days, known, 'Credits per day');
    if (cfg.auth === 'token') $('sign-out').hidden = false;
    $('older').onclick = async () => {
      try {
        const n = await older(label);
        $('status').textContent = `${n} older row(s) shown`;
      } catch (e) {
        error(e.message);
      }
    };
    Object.assign(window.quotaUser, { state: 'ready', usableMs: performance.now() - t0, usage });
  } catch (e) {
    window.quotaUser.state = 'error';
    error(e.message);
    session.refused(e);
  }
}

const session = tokenSignIn(cfg, api, () => {
  $('alert').hidden = true;
  start();
}, error);
session.begin();
