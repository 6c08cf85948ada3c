// Refresh Quota: the fields make one refresh body; Preview runs it through the engine in the page
// over the loaded users (the server's own dry run, so the preview is what the server would do);
// Apply sends that body once with a run id, so a second click (or a retried request) applies once.

const $ = (id) => document.getElementById(id);

/** A whole number typed into a field, or undefined when the field is empty. */
function int(id, label) {
  const text = $(id).value.trim();
  if (text === '') return undefined;
  if (!/^[-+]?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new FieldError(id, `${label}: must be a whole number, got "${text}"`);
  }
  return Number(text);
}

/** Names separated by commas or spaces, or undefined when none. */
function names(id) {
  const list = $(id).value.split(/[\s,]+/).filter(Boolean);
  return list.length ? list : undefined;
}

/** Group names separated by commas (a group's name may hold spaces), or undefined when none. */
function groupNames(id) {
  const list = $(id).value.split(',').map((g) => g.trim()).filter(Boolean);
  return list.length ? list : undefined;
}

export class FieldError extends Error {
  constructor(id, message) {
    super(message);
    this.id = id;
  }
}

/** The refresh body the fields describe (`rule_name` is the server's default, `manual`). */
export function refreshBody() {
  const amount = int('r-amount', 'Amount');
  if (amount === undefined) throw new FieldError('r-amount', 'Amount: required');
  const body = { action: $('r-action').value, amount };
  const max = int('r-max', 'Maximum balance');
  const min = int('r-min', 'Minimum balance');
  if (max !== undefined) body.max_balance = max;
  if (min !== undefined) body.min_balance = min;
  const targets = {};
  const below = int('r-below', 'Balance below');
  const above = int('r-above', 'Balance above');
  if ($('r-unlimited').checked) targets.includeUnlimited = true;
  if (below !== undefined) targets.balanceBelow = below;
  if (above !== undefined) targets.balanceAbove = above;
  const include = names('r-include');
  const exclude = names('r-exclude');
  if (include) targets.includeUsers = include;
  if (exclude) targets.excludeUsers = exclude;
  const pattern = $('r-pattern').value.trim();
  if (pattern) targets.usernamePattern = pattern;
  const includeGroups = groupNames('r-include-groups');
  const excludeGroups = groupNames('r-exclude-groups');
  if (includeGroups) targets.includeGroups = includeGroups;
  if (excludeGroups) targets.excludeGroups = excludeGroups;
  if (Object.keys(targets).length) body.targets = targets;
  return body;
}

function runId() {
  const b = crypto.getRandomValues(new Uint8Array(12));
  return `page-${[...b].map((x) => x.toString(16).padStart(2, '0')).join('')}`;
}

export class RefreshPanel {
  /** `page`: {engine, api, table, error(msg, field), clearError(), say(msg), reload()}. */
  constructor(page) {
    this.page = page;
    this.preview = null; // {key, body, result, runId}
    this.applying = false;
    const panel = $('refresh');
    const opener = $('refresh-open');
    opener.addEventListener('click', () => this.toggle(panel.hidden));
    $('r-close').addEventListener('click', () => this.toggle(false));
    // Preview always computes afresh (over the users as loaded now) with a new run id; Apply reuses
    // the last preview while the fields are unchanged.
    $('r-preview').addEventListener('click', () => this.showPreview(true));
    $('r-apply').addEventListener('click', () => this.apply());
    panel.addEventListener('keydown', (ev) => {
      // Enter in a field previews (it writes nothing); it never applies.
      if (ev.key === 'Enter' && ev.target.matches('input, select')) {
        ev.preventDefault();
        this.showPreview(true);
      }
    });
  }

  toggle(open) {
    $('refresh').hidden = !open;
    $('refresh-open').setAttribute('aria-expanded', String(open));
    if (open) $('r-action').focus();
    else $('refresh-open').focus();
  }

  /** Computes the preview of the current fields; null (with the error shown) when they are invalid. */
  compute() {
    const { page } = this;
    let body;
    try {
      body = refreshBody();
    } catch (e) {
      page.error(e.message, e.id);
      return null;
    }
    const key = JSON.stringify(body);
    if (this.preview?.key === key) return this.preview;
    let result;
    try {
      result = page.engine.refreshPreview(body, page.table.list());
    } catch (e) {
      page.error(e.message);
      return null;
    }
    this.preview = { key, body, result, runId: runId() };
    return this.preview;
  }

  showPreview(fresh = false) {
    this.page.clearError();
    if (fresh) this.preview = null;
    const p = this.compute();
    if (!p) return;
    const { result } = p;
    const rows = document.createDocumentFragment();
    for (const c of result.changes ?? []) {
      const tr = document.createElement('tr');
      const change = c.balance_after - c.balance_before;
      for (const [v, num] of [[c.username, false], [c.balance_before, true], [c.balance_after, true], [change > 0 ? `+${change}` : String(change), true]]) {
        const td = document.createElement('td');
        if (num) td.className = 'num';
        td.textContent = String(v);
        tr.append(td);
      }
      rows.append(tr);
    }
    $('r-table').tBodies[0].replaceChildren(rows);
    $('r-table').hidden = false;
    $('r-summary').textContent =
      `Preview: ${result.users_updated} user(s) change, total change ${signed(result.total_change)}, ${result.skipped} skipped.`;
    $('r-result').textContent = '';
  }

  async apply() {
    if (this.applying) return; // a double click sends one request
    this.page.clearError();
    const p = this.compute();
    if (!p) return;
    if ($('r-table').hidden) this.showPreview();
    this.applying = true;
    $('r-apply').disabled = true;
    try {
      const r = await this.page.api.post('/admin/api/quota/refresh', { ...p.body, run_id: p.runId });
      const differs = r.users_updated !== p.result.users_updated || r.total_change !== p.result.total_change;
      const out = $('r-result');
      out.textContent = `${r.replayed ? 'Already applied (this run id was used before): ' : 'Applied: '}` +
        `users_updated ${r.users_updated}, total_change ${signed(r.total_change)}.`;
      if (differs && !r.replayed) {
        const flag = document.createElement('span');
        flag.className = 'diff';
        flag.textContent = ` This differs from the preview (${p.result.users_updated} user(s), ${signed(p.result.total_change)}):` +
          ' balances changed in between, for example by another admin.';
        out.append(flag);
      }
      this.page.say(out.textContent);
      await this.page.reload();
    } catch (e) {
      this.page.error(e.message);
    } finally {
      this.applying = false;
      $('r-apply').disabled = false;
    }
  }
}

const signed = (n) => (n > 0 ? `+${n}` : String(n));
