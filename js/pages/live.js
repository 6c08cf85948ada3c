// The live balance in the hub's navigation bar (every hub page: home, spawn, token, admin): what
// the signed-in user can spend now (docs/glossary.md: available) and their default server's time
// left, pushed by the hub over a
// server-sent event stream (`{base}quota/live`, the hub's login cookie; the XSRF token in the
// query, as EventSource cannot send headers; never an API token) the moment an admin, a spawn,
// a stop or an extension changes them. The time left counts down here between pushes. When the
// stream cannot be held (a proxy that refuses it, repeated errors), it reads
// `{base}api/quota/me/status` every 30 s instead. The hub's page.html loads it with `data-base`
// and `data-xsrf`. Each value is also announced on `window` as a `quota-live` event, so the
// banner's warnings follow the same end time (banner.js).

import { available, parse, secondsUntil, timeLeft } from './words.js';

const me = document.currentScript ?? document.querySelector('script[data-quota-live]');
const base = (me?.dataset.base ?? '/hub/').replace(/\/?$/, '/');
const xsrf = me?.dataset.xsrf ?? '';
const POLL_MS = 30000;
const TICK_MS = 15000;
const ERRORS_BEFORE_POLLING = 3;

/** For tests: what the bar shows, how the last value came ('push' or 'poll'), when the page loaded. */
window.quotaLive = { text: '', via: null, loadedAt: Date.now(), updates: 0, mode: 'stream' };

let current = null;
/** The hub's clock less this browser's (ms), from the last value's `seconds_left`: time left counts on the hub's clock. */
let skew = 0;
/** Seconds until `t` on the hub's clock: what every warning on the page counts with. */
export const hubSecondsUntil = (t) => secondsUntil(t, Date.now() + skew);

/**
 * Below 992 px the navigation bar has no room for the figures (the hub's bar keeps one row): they
 * show in a strip under it instead (page.html's CSS picks which), linking to the user page too.
 */
function strip() {
  let el = document.getElementById('quota-live-strip');
  if (el) return el;
  el = document.createElement('a');
  el.id = 'quota-live-strip';
  el.href = document.getElementById('quota-live')?.getAttribute('href') ?? `${base}quota`;
  el.className = 'bg-body-tertiary border-bottom link-body-emphasis text-decoration-none';
  el.hidden = true;
  document.querySelector('nav')?.after(el);
  return el;
}

function render() {
  const el = document.getElementById('quota-live');
  if (!el || !current) return;
  // Short, so the bar keeps one row at 760 px: the held amount is on the title and the user page.
  const parts = [current.unlimited ? 'Credits: unlimited' : available(current.available ?? current.balance, 0)];
  if (current.ends_at) parts.push(timeLeft(hubSecondsUntil(current.ends_at)));
  el.textContent = parts.join(' · ');
  strip().textContent = `Your credits: ${el.textContent}`;
  strip().hidden = false;
  el.title = current.unlimited
    ? 'Your credits are unlimited; click for details'
    : `Balance ${current.balance}${Number(current.held) > 0 ? `, ${current.held} held by running servers` : ''} (updated live); click for details`;
  el.hidden = false;
  window.quotaLive.text = el.textContent;
}

function show(v, via) {
  current = v;
  if (v.ends_at && v.seconds_left !== null && v.seconds_left !== undefined) {
    skew = parse(v.ends_at).getTime() - v.seconds_left * 1000 - Date.now();
  }
  window.quotaLive.skewMs = skew;
  window.quotaLive.via = via;
  window.quotaLive.updates += 1;
  window.quotaLive.last = v;
  render();
  window.dispatchEvent(new CustomEvent('quota-live', { detail: v }));
}

async function poll() {
  try {
    const r = await fetch(`${base}api/quota/me/status`, { headers: { 'X-XSRFToken': xsrf }, credentials: 'same-origin' });
    if (!r.ok) return;
    const st = await r.json();
    show({
      balance: st.me.balance, unlimited: st.me.unlimited, available: st.me.available ?? null, held: st.me.held ?? 0,
      ends_at: st.session?.ends_at ?? null, seconds_left: st.seconds_left, server_name: st.session?.server_name ?? '',
    }, 'poll');
  } catch {
    // The next poll tries again.
  }
}

function polling() {
  window.quotaLive.mode = 'poll';
  void poll();
  setInterval(() => void poll(), POLL_MS);
}

function stream() {
  if (typeof EventSource === 'undefined') return polling();
  const source = new EventSource(`${base}quota/live?_xsrf=${encodeURIComponent(xsrf)}`);
  let errors = 0;
  source.addEventListener('quota', (ev) => {
    errors = 0;
    show(JSON.parse(ev.data), 'push');
  });
  source.onerror = () => {
    errors += 1;
    // The browser reconnects on its own; a stream that keeps failing (or was refused) is given up.
    if (source.readyState === EventSource.CLOSED || errors >= ERRORS_BEFORE_POLLING) {
      source.close();
      polling();
    }
  };
}

if (document.getElementById('quota-live')) {
  stream();
  setInterval(render, TICK_MS);
}
