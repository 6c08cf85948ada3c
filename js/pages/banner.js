// The hub's banner of unread quota events (credit model 2, "Events"): on JupyterHub's home and
// spawn pages, a signed-in user sees their warnings (a server about to stop, a low balance, credit
// about to lapse) as they come (read every 15 s), dismissible; what was dismissed is remembered in
// this browser (the newest id seen, per user). The hub's page.html loads it with
// `data-base` (the hub's base URL), `data-user` and `data-xsrf`.

const me = document.currentScript ?? document.querySelector('script[data-quota-banner]');
const base = (me?.dataset.base ?? '/hub/').replace(/\/$/, '');
const user = me?.dataset.user ?? '';
// The hub checks its XSRF token on API requests its login cookie authenticates.
const xsrf = me?.dataset.xsrf ?? '';
const KEY = `quota-events-seen:${user}`;
const KINDS = new Set(['session.ending', 'balance.low', 'grant.expiring']);
const POLL_MS = 15000;
const SHOWN_MAX = 5;

/** For tests: what the banner shows now. */
window.quotaBanner = { state: 'loading', shown: [] };

const seen = () => Number(localStorage.getItem(KEY) ?? '0') || 0;
const when = (t) => (t ? t.replace('T', ' ').slice(0, 16) : '');

/** One event as a sentence. */
export function describe(e) {
  const d = e.data ?? {};
  const whose = e.username ? 'Your' : `Budget ${e.budget}'s`;
  switch (e.kind) {
    case 'session.ending':
      return `Your server ${d.server_name ? `"${d.server_name}"` : '(default)'} stops in ${d.minutes_left} minute${d.minutes_left === 1 ? '' : 's'} (at ${when(d.ends_at)} UTC). Extend it on the My quota page: 30 more minutes cost ${d.extend_cost_30} credits.`;
    case 'balance.low':
      return `${whose} balance fell to ${d.balance} credits (below ${d.threshold}).`;
    case 'grant.expiring':
      return `${d.remaining} credits of ${e.username ? 'yours' : `budget ${e.budget}`} expire on ${when(d.expires_at)} UTC.`;
    default:
      return `${e.kind}`;
  }
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

function render() {
  const el = box();
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
  link.textContent = 'My quota';
  const dismiss = document.createElement('button');
  dismiss.type = 'button';
  dismiss.id = 'quota-banner-dismiss';
  dismiss.className = 'btn btn-sm btn-outline-secondary';
  dismiss.textContent = 'Dismiss';
  dismiss.addEventListener('click', () => {
    const newest = unread.reduce((m, e) => Math.max(m, e.id), seen());
    localStorage.setItem(KEY, String(newest));
    unread = [];
    render();
  });
  el.replaceChildren(list, link, ' ', dismiss);
  el.hidden = false;
}

async function poll() {
  try {
    const after = Math.max(seen(), unread.reduce((m, e) => Math.max(m, e.id), 0));
    const res = await fetch(`${base}/api/quota/me/events?after=${after}`, {
      credentials: 'same-origin',
      cache: 'no-store',
      headers: xsrf ? { 'X-XSRFToken': xsrf } : {},
    });
    window.quotaBanner.status = res.status;
    if (res.ok) {
      const { events } = await res.json();
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
} else {
  window.quotaBanner.state = 'off';
}
