// Running servers and their extension (credit model 2, "Extending a running server"): the
// "Extend" control the user page shows on each of the caller's running servers, and the admin
// page's Running view (every active session, any user's extendable). An extension is checked by
// the engine like a start; its refusal is shown as the server's own message.

import { number, parse, payer, resource, server, when } from './words.js';

const $ = (id) => document.getElementById(id);

/**
 * What ending running session `s` now would charge, as the engine bills it (core
 * sessions/billing.rs: whole minutes elapsed, at least 1, at most the runtime asked for, times
 * the session's rate, rounded up to a credit). The user page reads the engine's own figure
 * (`cost_so_far`); the usage-pages test holds the two equal.
 */
export function costSoFar(s, now = Date.now()) {
  const elapsed = Math.floor((now - parse(s.start_time).getTime()) / 1000);
  const minutes = Math.min(Math.max(Math.floor(elapsed / 60), 1), s.runtime_minutes);
  return Math.ceil((Math.round(Number(s.rate) * 1000) * minutes) / 1000);
}

/** Minutes an extension asks for unless the user types another number. */
export const EXTEND_DEFAULT_MINUTES = 30;

/**
 * A cell with a minutes field and an "Extend" button for session `s`: on success `done(session)`
 * (the session as the server now shows it), on a refusal `fail(message)`.
 */
export function extendCell(api, s, done, fail) {
  const td = document.createElement('td');
  const minutes = document.createElement('input');
  minutes.type = 'number';
  minutes.min = '1';
  minutes.step = '1';
  minutes.value = String(EXTEND_DEFAULT_MINUTES);
  minutes.size = 4;
  minutes.className = 'extend-minutes form-control form-control-sm d-inline-block w-auto';
  minutes.setAttribute('aria-label', `Minutes to add to server ${server(s.server_name)}`);
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'btn btn-sm btn-outline-secondary extend';
  button.textContent = 'Extend';
  button.dataset.session = String(s.session_id);
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const n = Number(minutes.value);
      const after = await api.post(`/api/quota/sessions/${s.session_id}/extend`, { minutes: Number.isInteger(n) ? n : minutes.value });
      done(after);
    } catch (e) {
      fail(e.message);
    } finally {
      button.disabled = false;
    }
  });
  td.append(minutes, ' ', button);
  return td;
}

/** The admin page's Running view. */
export class RunningPanel {
  constructor(page) {
    this.page = page;
    $('running-open').addEventListener('click', () => this.toggle());
    $('run-close').addEventListener('click', () => this.toggle(false));
  }

  toggle(open = $('running-view').hidden) {
    $('running-view').hidden = !open;
    $('running-open').setAttribute('aria-expanded', String(open));
    if (open) this.run(() => this.list());
  }

  async run(f) {
    this.page.clearError();
    try {
      await f();
    } catch (e) {
      this.page.error(e.message);
      window.quotaPage.running = { state: 'error', error: e.message };
    }
  }

  async list() {
    const sessions = [];
    for (let after = 0; ; ) {
      const page = await this.page.api.get(`/api/quota/sessions?status=active&after_id=${after}`);
      sessions.push(...page.sessions);
      if (page.next_after_id === null || page.next_after_id === undefined) break;
      after = page.next_after_id;
    }
    this.names ??= (await this.page.api.get('/api/quota/me')).resource_names ?? {};
    const td = (text, cls) => {
      const c = document.createElement('td');
      if (cls) c.className = cls;
      c.textContent = text;
      return c;
    };
    const rows = sessions.map((s) => {
      const tr = document.createElement('tr');
      tr.append(
        td(s.username), td(server(s.server_name)), td(resource(s.resource_type, this.names)),
        td(s.budget ? payer(s.budget) : `${s.username}'s balance`),
        td(when(s.start_time)), td(number(costSoFar(s)), 'num'), td(when(s.ends_at)),
        extendCell(this.page.api, s, (after) => {
          this.page.say(`Server ${server(s.server_name)} of ${s.username} now stops at ${when(after.ends_at)}`);
          this.run(() => this.list());
        }, (m) => this.page.error(m)),
      );
      return tr;
    });
    $('r-list').tBodies[0].replaceChildren(...rows);
    $('r-none').hidden = sessions.length > 0;
    window.quotaPage.running = { state: 'ready', sessions: sessions.length };
  }
}
