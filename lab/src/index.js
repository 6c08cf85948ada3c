// jupyterlab-quota: the server's quota inside JupyterLab 4. A status bar item shows the server's
// resource, time left, cost so far and the balance that pays (the user's, or their budget's),
// read every 30 s, at once after an action and whenever the hub pushes a change (quota/live); a
// click opens a panel with the session, the next
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
// The words every quota page says (docs/glossary.md), bundled from the hub pages' own module.
import { credits as creditsOf, number as credits, parse, payer as payerName, resource, secondsUntil, server, stopsIn, timeLeft as leftText, when } from '../../js/pages/words.js';

const POLL_MS = 30000;
const TICK_MS = 10000;
const KINDS = new Set(['session.ending', 'balance.low', 'grant.expiring', 'request.decided']);

/** What the extension shows now: tests read it (window.jupyterlabQuota). */
const state = { available: null, text: '', status: null, notified: [], requests: 0, warning: null, pushes: 0 };

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

/** Minutes left as the status bar (and the hub's navigation bar) says them. */
export const timeLeft = leftText;

/** The hub's clock less this browser's (ms), from the last status' `seconds_left`. */
let skew = 0;
/** Seconds until `t` on the hub's clock: the status bar and the warning count with it. */
const untilOnHub = (t) => secondsUntil(t, Date.now() + skew);

/**
 * Who pays for this server and what it can spend now: the balance, what running servers hold of
 * it, and the difference, `available` (docs/glossary.md).
 */
function payer(st) {
  const me = st.me;
  const budget = st.session?.budget;
  if (budget) {
    const b = (me.budgets ?? []).find((x) => x.name === budget);
    return { label: payerName(budget), balance: b ? b.balance : null, available: b ? b.available : null, held: b ? b.held : 0 };
  }
  return { label: payerName(null), balance: me.unlimited ? null : me.balance, available: me.available ?? null, held: me.held ?? 0 };
}

/** "98 credits available (2 held)": what can be spent now, and what running servers hold. */
function spendable(pay) {
  if (pay.balance === null || pay.available === null) return `${pay.label}: unlimited`;
  const held = Number(pay.held) > 0 ? ` (${credits(pay.held)} held)` : '';
  return `${creditsOf(pay.available)} available${held}`;
}

/** The status bar's line: the resource by its display name, time left, cost so far, what can be spent. */
function line(st) {
  const pay = payer(st);
  const money = spendable(pay);
  if (!st.session) return `Credits: ${money}`;
  const s = st.session;
  return `${resource(s.resource_type, st.me.resource_names)} · ${timeLeft(untilOnHub(s.ends_at))} · ${creditsOf(st.cost_so_far)} so far · ${money}`;
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
    rows.push(['Server', server(s.server_name)], ['Resource', `${resource(s.resource_type, st.me.resource_names)} at ${creditsOf(s.rate)}/min`],
      ['Stops at', `${when(s.ends_at)} (${timeLeft(untilOnHub(s.ends_at))})`],
      ['Cost so far', `${creditsOf(st.cost_so_far)} (held for the whole run: ${credits(s.estimated_cost)})`]);
  } else {
    rows.push(['Server', 'no running quota session']);
  }
  rows.push([pay.label[0].toUpperCase() + pay.label.slice(1), pay.balance === null ? 'unlimited' : creditsOf(pay.balance)]);
  if (pay.balance !== null && pay.available !== null) {
    rows.push(['Held by running servers', creditsOf(pay.held)], ['Available now', creditsOf(pay.available)]);
  }
  const next = st.me.next_refresh;
  rows.push(['Next top-up', next ? `${when(next.at)}, to ${creditsOf(next.balance)}` : 'none scheduled']);
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
      // The engine's refusal is the specification's text ("quota/min"): the panel says it in the
      // pages' words (docs/glossary.md) where it is about credits.
      const said = c.refusal && /Insufficient quota/.test(c.refusal) && pay.available !== null
        ? `Not enough credits: ${c.minutes} more minutes cost ${creditsOf(c.cost)}; ${creditsOf(pay.available)} available.`
        : c.refusal;
      if (said) b.title = said;
      b.onclick = () => onExtend(c.minutes);
      row.append(b);
      if (c.refusal) {
        const why = document.createElement('span');
        why.className = 'jp-quota-refusal';
        why.dataset.minutes = String(c.minutes);
        why.textContent = said;
        row.append(why);
      }
      node.append(row);
    }
  }
  // Where a refusal stops an extension (or nothing runs), the way to more credit is beside it.
  node.append(requestForm(st, onAsk));
  // The hub's page of the user's credits: history, usage, budgets, requests.
  const page = document.createElement('a');
  page.className = 'jp-quota-user-page';
  page.href = URLExt.join(PageConfig.getOption('hubPrefix') || '/hub/', 'quota');
  page.target = '_blank';
  page.rel = 'noopener';
  page.textContent = 'Your credits page (history, usage, requests)';
  const p = document.createElement('p');
  p.append(page);
  node.append(p);
  return node;
}

/** An event as a sentence, as of now (a server's warning counts down as the status bar does). */
function describe(e) {
  const d = e.data ?? {};
  switch (e.kind) {
    case 'session.ending':
      return `Your server ${server(d.server_name)} ${stopsIn(untilOnHub(d.ends_at))} (at ${when(d.ends_at)}).`;
    case 'balance.low':
      return `${e.username ? 'Your balance' : `The balance of ${payerName(e.budget)}`} fell to ${creditsOf(d.balance)} (below ${creditsOf(d.threshold)}).`;
    case 'grant.expiring':
      return `${creditsOf(d.remaining)} of ${e.username ? 'your balance' : payerName(e.budget)} expire on ${when(d.expires_at)}.`;
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
    let timer = null;
    let shown = false;
    let ending = null;

    /** The events shown in this page (by id). */
    const shownIds = new Set();
    /** The warning on screen: its notification id and its event. */
    let warned = null;

    /**
     * The server's warning, as of now: gone when the server ended or its end moved later (an
     * extension, here or anywhere), else counting down with the status bar's words and clock.
     */
    const currentWarning = () => {
      if (!ending || !warned) return;
      const s = state.status?.session;
      const endsAt = parse(warned.data?.ends_at).getTime();
      if (!s || s.session_id !== warned.data?.session_id || parse(s.ends_at).getTime() > endsAt) {
        Notification.dismiss(ending);
        state.warning = null;
        ending = null;
        warned = null;
        return;
      }
      const text = describe(warned);
      if (text === state.warning) return;
      state.warning = text;
      Notification.update({ id: ending, message: text, type: 'warning', autoClose: false, actions: warned.actions });
    };

    const render = () => {
      if (!state.status) return;
      state.text = line(state.status);
      widget.node.textContent = state.text;
      currentWarning();
    };

    const extend = async (minutes) => {
      const r = await ask('extend', { method: 'POST', body: JSON.stringify({ minutes }) });
      if (r.ok) {
        Notification.success(`Extended by ${minutes} minutes: the server now stops at ${when(r.body.ends_at)}.`, { autoClose: 5000 });
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
        // Two reads at once (a push and a poll) see the same new events: each is shown once.
        if (!KINDS.has(e.kind) || shownIds.has(e.id)) continue;
        shownIds.add(e.id);
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
          warned = { ...e, actions: options.actions };
          state.warning = describe(e);
          ending = Notification.warning(state.warning, options);
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
      const s = r.body.session;
      if (s && r.body.seconds_left !== null && r.body.seconds_left !== undefined) {
        skew = parse(s.ends_at).getTime() - r.body.seconds_left * 1000 - Date.now();
      }
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
    // The hub's pushes (an extension or an end, here or in another tab or page): read at once, so
    // the status bar and the warning change with the hub's navigation bar.
    if (typeof EventSource !== 'undefined') {
      // EventSource sends no headers: the XSRF token Jupyter asks of a cookie's request goes in the
      // query, as ServerConnection's requests send it in a header (from the same `_xsrf` cookie).
      const xsrf = document.cookie.match(/(?:^|;\s*)_xsrf=([^;]*)/)?.[1] ?? '';
      const live = new EventSource(`${URLExt.join(settings.baseUrl, 'quota/live')}?_xsrf=${encodeURIComponent(decodeURIComponent(xsrf))}`);
      live.addEventListener('changed', () => {
        state.pushes = (state.pushes ?? 0) + 1;
        void refresh();
      });
      state.live = live;
    }
  }
};

export default plugin;
