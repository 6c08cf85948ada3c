// jupyterlab-quota: the server's quota inside JupyterLab 4. A status bar item shows the server's
// resource, time left, cost so far and the balance that pays (the user's, or their budget's),
// read every 30 s and at once after an action; a click opens a panel with the session, the next
// top-up and "Extend" by 30, 60 or 120 minutes (each with its cost, disabled with the reason when
// it would be refused) and "Request credits". Each new `session.ending`, `balance.low`,
// `grant.expiring` and `request.decided` event becomes a JupyterLab notification (the first with an
// "Extend 30 min" action). Everything is asked of this
// server's own extension (`quota/...`, jupyterlab_quota/handlers.py), which calls the hub with the
// server's token: the browser never sees it. Outside a hub, or on a hub without quota, nothing shows.

import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Widget } from '@lumino/widgets';

const POLL_MS = 30000;
const TICK_MS = 10000;
const KINDS = new Set(['session.ending', 'balance.low', 'grant.expiring', 'request.decided']);

/** What the extension shows now: tests read it (window.jupyterlabQuota). */
const state = { available: null, text: '', status: null, notified: [], requests: 0 };

const settings = ServerConnection.makeSettings();

async function ask(path, init = {}) {
  state.requests += 1;
  const r = await ServerConnection.makeRequest(URLExt.join(settings.baseUrl, 'quota', path), init, settings);
  let body = null;
  try {
    body = await r.json();
  } catch {
    body = null;
  }
  return { ok: r.ok, status: r.status, body };
}

const credits = (n) => `${Number(n).toLocaleString('en-US', { maximumFractionDigits: 3 })}`;
/** "1 credit", "2.5 credits". */
const creditsOf = (n) => `${credits(n)} credit${Number(n) === 1 ? '' : 's'}`;

/** Minutes left as the status bar says them. */
export function timeLeft(seconds) {
  if (seconds <= 0) return 'stopping';
  const m = Math.ceil(seconds / 60);
  if (m < 120) return `${m} min left`;
  return `${Math.floor(m / 60)} h ${m % 60} min left`;
}

/** The balance that pays for this server: the budget's when the session charges one. */
/**
 * Who pays for this server and what it can spend now: the balance, what running servers hold of
 * it, and the difference, `available` (docs/glossary.md).
 */
function payer(st) {
  const me = st.me;
  const budget = st.session?.budget;
  if (budget) {
    const b = (me.budgets ?? []).find((x) => x.name === budget);
    return { label: `budget ${budget}`, balance: b ? b.balance : null, available: b ? b.available : null, held: b ? b.held : 0 };
  }
  return { label: 'balance', balance: me.unlimited ? null : me.balance, available: me.available ?? null, held: me.held ?? 0 };
}

/** "98 credits available (2 held)": what can be spent now, and what running servers hold. */
function spendable(pay) {
  if (pay.balance === null || pay.available === null) return `${pay.label}: unlimited`;
  const held = Number(pay.held) > 0 ? ` (${credits(pay.held)} held)` : '';
  return `${creditsOf(pay.available)} available${held}`;
}

function line(st, secondsLeft) {
  const pay = payer(st);
  const money = spendable(pay);
  if (!st.session) return `Quota: ${money}`;
  const s = st.session;
  return `${s.resource_type} · ${timeLeft(secondsLeft)} · ${creditsOf(st.cost_so_far)} so far · ${money}`;
}

/**
 * "Request credits": the amount, the account that pays for this server (the budget it charges, or
 * the user's own), a reason; the hub decides (course staff or a quota admin) and the decision
 * arrives as a notification.
 */
function requestForm(st, onAsk) {
  const form = document.createElement('form');
  form.className = 'jp-quota-request';
  const budget = st.session?.budget ?? null;
  const title = document.createElement('p');
  title.textContent = `Request credits for ${budget ? `budget ${budget}` : 'your own balance'}:`;
  const amount = document.createElement('input');
  Object.assign(amount, { type: 'number', min: '1', step: '1', required: true, className: 'jp-mod-styled jp-quota-request-amount' });
  amount.setAttribute('aria-label', 'Credits to request');
  const reason = document.createElement('input');
  Object.assign(reason, { type: 'text', maxLength: 500, required: true, className: 'jp-mod-styled jp-quota-request-reason', placeholder: 'What is it for?' });
  reason.setAttribute('aria-label', 'Reason');
  const send = document.createElement('button');
  send.type = 'submit';
  send.className = 'jp-Button jp-mod-styled jp-mod-accept jp-quota-request-send';
  send.textContent = 'Request credits';
  form.append(title, amount, ' ', reason, ' ', send);
  form.onsubmit = (ev) => {
    ev.preventDefault();
    void onAsk({ amount: Number(amount.value), reason: reason.value, ...(budget ? { budget } : {}) });
  };
  return form;
}

/** The panel: the session, the next top-up, Extend, and Request credits. */
function panelBody(st, onExtend, onAsk) {
  const node = document.createElement('div');
  node.className = 'jp-quota-panel';
  const rows = [];
  const pay = payer(st);
  if (st.session) {
    const s = st.session;
    rows.push(['Server', s.server_name || '(default)'], ['Resource', `${s.resource_type} at ${credits(s.rate)} credits/min`],
      ['Stops at', `${s.ends_at.replace('T', ' ')} UTC (${timeLeft(st.seconds_left)})`],
      ['Cost so far', `${creditsOf(st.cost_so_far)} (held for the whole run: ${credits(s.estimated_cost)})`]);
  } else {
    rows.push(['Server', 'no running quota session']);
  }
  rows.push([pay.label[0].toUpperCase() + pay.label.slice(1), pay.balance === null ? 'unlimited' : creditsOf(pay.balance)]);
  if (pay.balance !== null && pay.available !== null) {
    rows.push(['Held by running servers', creditsOf(pay.held)], ['Available now', creditsOf(pay.available)]);
  }
  const next = st.me.next_refresh;
  rows.push(['Next top-up', next ? `${next.at.replace('T', ' ')} UTC (${next.rule})` : 'none scheduled']);
  const table = document.createElement('table');
  for (const [k, v] of rows) {
    const tr = table.insertRow();
    const th = document.createElement('th');
    th.textContent = k;
    tr.append(th);
    tr.insertCell().textContent = v;
  }
  node.append(table);
  if (st.extend.length > 0) {
    const h = document.createElement('p');
    h.textContent = 'Extend this server:';
    node.append(h);
    for (const c of st.extend) {
      const row = document.createElement('div');
      row.className = 'jp-quota-choice';
      const b = document.createElement('button');
      b.className = 'jp-Button jp-mod-styled jp-mod-accept jp-quota-extend';
      b.dataset.minutes = String(c.minutes);
      b.textContent = `+${c.minutes} min (${creditsOf(c.cost)})`;
      b.disabled = c.refusal !== null;
      if (c.refusal) b.title = c.refusal;
      b.onclick = () => onExtend(c.minutes);
      row.append(b);
      if (c.refusal) {
        const why = document.createElement('span');
        why.className = 'jp-quota-refusal';
        why.dataset.minutes = String(c.minutes);
        why.textContent = c.refusal;
        row.append(why);
      }
      node.append(row);
    }
  }
  // Where a refusal stops an extension (or nothing runs), the way to more credit is beside it.
  node.append(requestForm(st, onAsk));
  return node;
}

function describe(e) {
  const d = e.data ?? {};
  switch (e.kind) {
    case 'session.ending':
      return `Your server ${d.server_name ? `"${d.server_name}" ` : ''}stops in ${d.minutes_left} minute${d.minutes_left === 1 ? '' : 's'} (at ${String(d.ends_at).replace('T', ' ')} UTC).`;
    case 'balance.low':
      return `${e.username ? 'Your' : `Budget ${e.budget}'s`} balance fell to ${credits(d.balance)} credits (below ${credits(d.threshold)}).`;
    case 'grant.expiring':
      return `${credits(d.remaining)} credits ${e.username ? 'of yours' : `of budget ${e.budget}`} expire on ${String(d.expires_at).replace('T', ' ')} UTC.`;
    case 'request.decided':
      return d.status === 'approved'
        ? `Your request ${d.request_id} was approved: ${creditsOf(d.granted)}${e.budget ? ` for budget ${e.budget}` : ''}${d.note ? ` (${d.note})` : ''}.`
        : `Your request ${d.request_id} was denied${d.note ? `: ${d.note}` : ''}.`;
    default:
      return e.kind;
  }
}

const plugin = {
  id: 'jupyterlab-quota:plugin',
  description: "The JupyterHub quota of this server: time left, cost, balance, warnings and Extend.",
  autoStart: true,
  optional: [IStatusBar],
  activate: (app, statusBar) => {
    window.jupyterlabQuota = state;
    const user = PageConfig.getOption('hubUser') || '';
    const seenKey = `jupyterlab-quota-seen:${user}:${PageConfig.getOption('hubServerName') || ''}`;
    const widget = new Widget();
    widget.addClass('jp-quota-status');
    widget.node.title = 'Quota of this server: click for details and Extend';
    let fetchedAt = 0;
    let timer = null;
    let shown = false;
    let ending = null;

    const render = () => {
      if (!state.status) return;
      const left = Math.max(0, (state.status.seconds_left ?? 0) - (Date.now() - fetchedAt) / 1000);
      state.text = line(state.status, left);
      widget.node.textContent = state.text;
    };

    const extend = async (minutes) => {
      const r = await ask('extend', { method: 'POST', body: JSON.stringify({ minutes }) });
      if (r.ok) {
        if (ending) Notification.dismiss(ending);
        ending = null;
        Notification.success(`Extended by ${minutes} minutes: the server now stops at ${r.body.ends_at.replace('T', ' ')} UTC.`, { autoClose: 5000 });
      } else {
        Notification.error(r.body?.error ?? r.body?.message ?? `Extending failed (${r.status})`, { autoClose: false });
      }
      await refresh();
    };

    const requestCredit = async (body) => {
      const r = await ask('requests', { method: 'POST', body: JSON.stringify(body) });
      if (r.ok) {
        Notification.success(`Request ${r.body.id} sent: ${creditsOf(r.body.amount)}. You will be told the decision here.`, { autoClose: 5000 });
      } else {
        Notification.error(r.body?.error ?? r.body?.message ?? `Requesting credits failed (${r.status})`, { autoClose: false });
      }
      state.asked = { status: r.status, body: r.body };
      return r;
    };

    const notify = async () => {
      const seen = Number(localStorage.getItem(seenKey) ?? '0') || 0;
      const r = await ask(`events?after=${seen}`);
      if (!r.ok || !r.body?.available) return;
      let newest = seen;
      const session = state.status?.session;
      for (const e of r.body.events) {
        newest = Math.max(newest, e.id);
        if (!KINDS.has(e.kind)) continue;
        // A warning about another server (or an ended session) is not this page's to show.
        if (e.kind === 'session.ending' && (!session || e.data?.session_id !== session.session_id)) continue;
        const options = { autoClose: false };
        if (e.kind === 'session.ending') {
          const c = state.status.extend.find((x) => x.minutes === 30);
          if (c && c.refusal === null) {
            options.actions = [{ label: `Extend 30 min (${creditsOf(c.cost)})`, callback: () => void extend(30) }];
          }
          // One warning of this server on screen at a time; an extension takes it away.
          if (ending) Notification.dismiss(ending);
          ending = Notification.warning(describe(e), options);
        } else if (e.kind === 'balance.low') {
          Notification.warning(describe(e), options);
        } else if (e.kind === 'request.decided') {
          (e.data?.status === 'approved' ? Notification.success : Notification.warning)(describe(e), options);
        } else {
          Notification.info(describe(e), options);
        }
        state.notified.push({ id: e.id, kind: e.kind, actions: (options.actions ?? []).map((a) => a.label) });
      }
      localStorage.setItem(seenKey, String(newest));
    };

    const refresh = async () => {
      let r;
      try {
        r = await ask('status');
      } catch (err) {
        console.warn('jupyterlab-quota: the server extension did not answer', err);
        return;
      }
      if (r.ok && r.body && r.body.available === false) {
        // Nothing to show here (no hub, or no quota on it): stop asking.
        state.available = false;
        console.info(`jupyterlab-quota: ${r.body.reason}`);
        if (timer) clearInterval(timer);
        widget.dispose();
        return;
      }
      if (!r.ok || !r.body) return;
      state.available = true;
      state.status = r.body;
      fetchedAt = Date.now();
      render();
      if (!shown && statusBar) {
        statusBar.registerStatusItem('jupyterlab-quota:status', { item: widget, align: 'left', rank: 1000 });
        shown = true;
      }
      await notify();
    };

    const openPanel = async () => {
      await refresh();
      if (!state.status) return;
      let dialog;
      const body = new Widget({
        node: panelBody(state.status, async (m) => { dialog?.resolve(); await extend(m); },
          async (asked) => { const r = await requestCredit(asked); if (r.ok) dialog?.resolve(); }),
      });
      dialog = new Dialog({ title: 'Quota of this server', body, buttons: [Dialog.okButton({ label: 'Close' })] });
      await dialog.launch();
    };
    widget.node.addEventListener('click', () => void openPanel());
    state.open = openPanel;
    state.extend = extend;
    state.requestCredit = requestCredit;
    state.refresh = refresh;

    void refresh();
    timer = setInterval(() => void refresh(), POLL_MS);
    setInterval(render, TICK_MS);
  }
};

export default plugin;
