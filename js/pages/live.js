// The live balance in the hub's navigation bar (every hub page: home, spawn, token, admin): the
// signed-in user's balance and their default server's time left, pushed by the hub over a
// server-sent event stream (`{base}quota/live`, the hub's login cookie; the XSRF token in the
// query, as EventSource cannot send headers; never an API token) the moment an admin, a spawn,
// a stop or an extension changes them. The time left counts down here between pushes. When the
// stream cannot be held (a proxy that refuses it, repeated errors), it reads
// `{base}api/quota/me/status` every 30 s instead. The hub's page.html loads it with `data-base`
// and `data-xsrf`.

const me = document.currentScript ?? document.querySelector('script[data-quota-live]');
const base = (me?.dataset.base ?? '/hub/').replace(/\/?$/, '/');
const xsrf = me?.dataset.xsrf ?? '';
const POLL_MS = 30000;
const TICK_MS = 15000;
const ERRORS_BEFORE_POLLING = 3;

/** For tests: what the bar shows, how the last value came ('push' or 'poll'), when the page loaded. */
window.quotaLive = { text: '', via: null, loadedAt: Date.now(), updates: 0, mode: 'stream' };

let current = null;
let receivedAt = 0;

const credits = (n) => Number(n).toLocaleString('en-US', { maximumFractionDigits: 3 });

function left(seconds) {
  const m = Math.ceil(seconds / 60);
  return m < 120 ? `${m} min left` : `${Math.floor(m / 60)} h ${m % 60} min left`;
}

function render() {
  const el = document.getElementById('quota-live');
  if (!el || !current) return;
  const parts = [current.unlimited ? 'Balance: unlimited' : `Balance ${credits(current.balance)}`];
  if (current.ends_at && current.seconds_left !== null) {
    const s = current.seconds_left - (Date.now() - receivedAt) / 1000;
    parts.push(s > 0 ? `server: ${left(s)}` : 'server: stopping');
  }
  el.textContent = parts.join(' · ');
  el.title = 'Your quota (updated live); click for details';
  el.hidden = false;
  window.quotaLive.text = el.textContent;
}

function show(v, via) {
  current = v;
  receivedAt = Date.now();
  window.quotaLive.via = via;
  window.quotaLive.updates += 1;
  window.quotaLive.last = v;
  render();
}

async function poll() {
  try {
    const r = await fetch(`${base}api/quota/me/status`, { headers: { 'X-XSRFToken': xsrf }, credentials: 'same-origin' });
    if (!r.ok) return;
    const st = await r.json();
    show({ balance: st.me.balance, unlimited: st.me.unlimited, ends_at: st.session?.ends_at ?? null, seconds_left: st.seconds_left }, 'poll');
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
