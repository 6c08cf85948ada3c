// The hub's banner of unread quota events (credit model 2, "Events"): on JupyterHub's home and
// spawn pages, a signed-in user sees their warnings (a server about to stop, a low balance, credit
// about to lapse) as they come (read every 15 s), dismissible; what was dismissed is remembered in
// this browser (the newest id seen, per user). A server's warning counts down from its end time
// with the navigation bar's rounding and clock (words.js, live.js), and goes at once when the live
// stream says that server was extended or has ended. The hub's page.html loads it with
// `data-base` (the hub's base URL), `data-user` and `data-xsrf`.

import { credits, parse, payer, secondsUntil, server, stopsIn, when } from './words.js';

const me = document.currentScript ?? document.querySelector('script[data-quota-banner]');
const base = (me?.dataset.base ?? '/hub/').replace(/\/$/, '');
const user = me?.dataset.user ?? '';
// The hub checks its XSRF token on API requests its login cookie authenticates.
const xsrf = me?.dataset.xsrf ?? '';
const KEY = `quota-events-seen:${user}`;
const KINDS = new Set(['session.ending', 'balance.low', 'grant.expiring']);
const POLL_MS = 15000;
const TICK_MS = 15000;
const SHOWN_MAX = 5;

/** For tests: what the banner shows now. */
window.quotaBanner = { state: 'loading', shown: [] };

const seen = () => Number(localStorage.getItem(KEY) ?? '0') || 0;

/** Seconds until `t` on the hub's clock (as the navigation bar counts: live.js keeps the skew). */
const untilOnHub = (t) => secondsUntil(t, Date.now() + (window.quotaLive?.skewMs ?? 0));

/** One event as a sentence, as of now. */
export function describe(e) {
  const d = e.data ?? {};
  switch (e.kind) {
    case 'session.ending':
      return `Your server ${server(d.server_name)} ${stopsIn(untilOnHub(d.ends_at))} (at ${when(d.ends_at)}). Extend it on your Credits page: 30 more minutes cost ${credits(d.extend_cost_30)}.`;
    case 'balance.low':
      return `${e.username ? 'Your balance' : `The balance of ${payer(e.budget)}`} fell to ${credits(d.balance)} (below ${credits(d.threshold)}).`;
    case 'grant.expiring':
      return `${credits(d.remaining)} of ${e.username ? 'your balance' : payer(e.budget)} expire on ${when(d.expires_at)}.`;
    default:
      return `${e.kind}`;
  }
}

/**
 * Whether a warning still holds: a server's end that the live stream shows moved (extended) or
 * gone (the server ended), or that has passed, no longer warns. The stream follows the default
 * server; a named server's warning holds until its end time.
 */
export function current(e, live) {
  if (e.kind !== 'session.ending') return true;
  const d = e.data ?? {};
  if (untilOnHub(d.ends_at) < -60) return false;
  if (!live || (d.server_name ?? '') !== '') return true;
  if (!live.ends_at) return false;
  return parse(live.ends_at).getTime() <= parse(d.ends_at).getTime();
}

function box() {
  let el = document.getElementById('quota-banner');
  if (el) return el;
  el = document.createElement('div');
  el.id = 'quota-banner';
  el.className = 'alert alert-warning';
  el.setAttribute('role', 'status');
  el.hidden = true;
  // Below the hub's navigation bar, above the page's own content.
  const nav = document.querySelector('nav');
  if (nav) nav.after(el);
  else document.body.prepend(el);
  return el;
}

let unread = [];
/** The newest event id read so far (a warning that no longer holds leaves `unread`, not this). */
let fetched = 0;

function render() {
  const el = box();
  unread = unread.filter((e) => current(e, window.quotaLive?.last));
  const show = unread.slice(-SHOWN_MAX);
  window.quotaBanner.shown = show.map((e) => e.id);
  if (show.length === 0) {
    el.hidden = true;
    el.replaceChildren();
    return;
  }
  const list = document.createElement('ul');
  list.className = 'quota-events';
  for (const e of show) {
    const li = document.createElement('li');
    li.dataset.kind = e.kind;
    li.dataset.id = String(e.id);
    li.textContent = describe(e);
    list.append(li);
  }
  const link = document.createElement('a');
  link.href = `${base}/quota`;
  link.textContent = 'Your credits';
  const dismiss = document.createElement('button');
  dismiss.type = 'button';
  dismiss.id = 'quota-banner-dismiss';
  dismiss.className = 'btn btn-sm btn-outline-secondary';
  dismiss.textContent = 'Dismiss';
  dismiss.addEventListener('click', () => {
    const newest = Math.max(fetched, seen());
    localStorage.setItem(KEY, String(newest));
    unread = [];
    render();
  });
  el.replaceChildren(list, link, ' ', dismiss);
  el.hidden = false;
}

async function poll() {
  try {
    const after = Math.max(seen(), fetched);
    const res = await fetch(`${base}/api/quota/me/events?after=${after}`, {
      credentials: 'same-origin',
      cache: 'no-store',
      headers: xsrf ? { 'X-XSRFToken': xsrf } : {},
    });
    window.quotaBanner.status = res.status;
    if (res.ok) {
      const { events } = await res.json();
      fetched = events.reduce((m, e) => Math.max(m, e.id), fetched);
      unread.push(...events.filter((e) => KINDS.has(e.kind)));
      render();
      window.quotaBanner.state = 'ready';
    }
  } catch {
    // The next poll tries again; the page itself is not disturbed.
  }
}

/** The pages it shows on: the hub's home, spawn and spawn-pending pages. */
export const ON_PAGE = /\/(home|spawn|spawn-pending)(\/|$)/;

if (ON_PAGE.test(location.pathname)) {
  poll();
  setInterval(poll, POLL_MS);
  // The stream's news (an extension, an end) at once; the countdown between polls.
  window.addEventListener('quota-live', render);
  setInterval(render, TICK_MS);
} else {
  window.quotaBanner.state = 'off';
}
