// The spawn form's live price: the engine component in the page computes the estimated cost of
// the chosen accelerator and runtime as the user types, exactly as the hub's gate will. Below a
// KubeSpawner profile list, a profile (or a chosen profile option) that names its accelerator
// prices the spawn by it and hides the accelerator choice, as the gate does. The cost is checked
// against what the account chosen under "Charge to" (or the budget a profile names) has available
// now: a start that needs more is an alert that says what would start instead, offers "Request
// credits", and turns Start off with the reason (the hub would refuse it). After a refusal the
// form comes back with the user's choices and the hub's error in plain words above the
// specification's text.
import { loadEngine } from '../src/browser.js';
import { credits, minutes, number, payer, rate, refusalNext, when } from './words.js';

const $ = (id) => document.getElementById(id);
const cfg = JSON.parse($('quota-spawn-config').textContent);
const cost = $('quota-cost');
const note = $('quota-cost-note');
const runtime = $('quota-runtime');
const choices = $('quota-accelerators');
const fixedNote = $('quota-profile-accelerator');
const form = $('quota-spawn').closest('form') ?? document;
const chosen = () => form.querySelector('#quota-spawn input[name="gpu_selection"]:checked')?.value ?? '';
const chargeTo = $('quota-charge-to');
const budgetNote = $('quota-profile-budget');
/** The budget the start charges: the profile's `quotaBudget`, else the "Charge to" choice ('' : own credit). */
const budget = () => cfg.profiles?.[profile()]?.budget ?? form.querySelector('#quota-spawn input[name="budget"]:checked')?.value ?? '';

/** The profile the form would start: the checked one (radio or select), else the default. */
function profile() {
  const input = form.querySelector('input[name="profile"]:checked') ?? form.querySelector('select[name="profile"]');
  return input?.value || cfg.defaultProfile;
}

/**
 * What the chosen profile says about the price (the gate's rule): `{fixed: key}` when it (or a
 * chosen option) names an accelerator ('' for CPU), `{refused: message}` when it moves the
 * server without naming one, `{}` when the accelerator choice decides.
 */
function profilePrice() {
  const slug = profile();
  const p = cfg.profiles?.[slug];
  if (!p) return {};
  // A chosen option that names an accelerator wins over the profile's own (the gate's rule).
  const own = new Set(p.accelerator ? [p.accelerator] : []);
  const chosen = new Set();
  let moves = !!p.moves;
  for (const [name, o] of Object.entries(p.options)) {
    const field = form.querySelector(`[name="profile-option-${CSS.escape(slug)}--${CSS.escape(name)}"]`);
    const value = field?.value || o.default;
    const part = value === 'unlisted-choice' ? o.unlisted : o.choices[value];
    if (part?.accelerator) chosen.add(part.accelerator);
    moves ||= !!part?.moves;
  }
  const named = chosen.size ? chosen : own;
  if (named.size > 1) return { refused: `The profile "${slug}" names more than one accelerator with these choices: the hub will refuse it.` };
  if (named.size === 1) {
    const key = [...named][0];
    return { fixed: key === 'cpu' ? '' : key };
  }
  if (moves) return { refused: `The profile "${slug}" changes where the server runs but names no accelerator to price it: the hub will refuse it.` };
  return {};
}

/** A profile that names its budget fixes the "Charge to" choice (the gate charges that budget). */
function showBudget() {
  const fixed = cfg.profiles?.[profile()]?.budget;
  if (budgetNote) {
    budgetNote.hidden = !fixed;
    if (fixed) budgetNote.textContent = `This profile is charged to the budget ${fixed}.`;
  }
  if (chargeTo) {
    chargeTo.hidden = !!fixed;
    for (const r of chargeTo.querySelectorAll('input')) r.disabled = !!fixed;
  }
}

function show(engine) {
  showBudget();
  const price = profilePrice();
  const fixed = price.fixed !== undefined;
  choices.hidden = fixed || !!price.refused;
  // A disabled radio is not posted: the profile's accelerator is the one the gate bills.
  for (const r of choices.querySelectorAll('input')) r.disabled = fixed;
  fixedNote.hidden = !fixed;
  if (fixed) fixedNote.textContent = `This profile runs on ${cfg.names[price.fixed] ?? price.fixed}.`;
  if (price.refused) {
    cost.textContent = '-';
    say(price.refused);
    startButton(price.refused);
    return;
  }
  const text = runtime.value.trim();
  const { runtimeMinutesMin: least, runtimeMinutesMax: most } = engine.summary.settings;
  if (!/^\d+$/.test(text) || Number(text) < least || Number(text) > most) {
    cost.textContent = '-';
    say(`Runtime: a whole number of minutes from ${least} to ${most}`);
    return;
  }
  try {
    const key = fixed ? price.fixed : chosen();
    const runtimeMin = Number(text);
    const { rate: perMin, estimatedCost } = engine.estimateCost(key, runtimeMin);
    cost.textContent = `${credits(estimatedCost)} (${rate(perMin)} x ${minutes(runtimeMin)})`;
    const account = budget();
    if (!cfg.enabled) return say('Quota is disabled on this hub: nothing is charged.');
    if (!account && cfg.unlimited) return say('Your credits are unlimited: nothing is charged.');
    const avail = account ? cfg.budgets?.[account] : cfg.available;
    if (avail === undefined || avail === null) return say(`Charged to ${payer(account)}.`);
    // The gate's rule: what is available must cover the estimated cost and the minimum to start.
    const needed = Math.max(estimatedCost, account ? 0 : Number(cfg.minimumToStart ?? 0));
    if (Number(avail) < needed) return overAvailable(engine, { key, fixed, runtimeMin, estimatedCost, needed, avail: Number(avail), account });
    if (!account && Number(avail) - estimatedCost < Number(cfg.minimumToStart ?? 0)) {
      const next = cfg.nextRefresh ? ` until the next top-up (${when(cfg.nextRefresh.at)})` : '';
      return say(`A full run leaves ${credits(Number(avail) - estimatedCost)} available, less than the ${credits(cfg.minimumToStart)} needed to start a server again${next}.`);
    }
    say('');
  } catch (e) {
    cost.textContent = '-';
    say(e.message);
  }
}

/** The form's Start button (JupyterHub's), turned off with `reason`, or back on (`null`). */
function startButton(reason) {
  const start = form.querySelector('[type="submit"]');
  if (!start) return;
  let why = $('quota-start-reason');
  if (!why) {
    why = document.createElement('p');
    why.id = 'quota-start-reason';
    why.className = 'text-danger';
    start.before(why);
  }
  start.disabled = !!reason;
  why.hidden = !reason;
  why.textContent = reason ? `Start is off: ${reason}` : '';
  if (reason) start.setAttribute('aria-describedby', 'quota-start-reason');
  else start.removeAttribute('aria-describedby');
}

/** A plain note under the cost (Start on). */
function say(text) {
  note.className = '';
  note.setAttribute('role', 'status');
  note.replaceChildren(text);
  startButton(null);
  return undefined;
}

/**
 * What would start now instead of a start that needs more than is available: the same resource
 * for as many minutes as are available, and the dearest other resource that fits the minutes
 * asked for (the closest to what was chosen), each priced by the engine as the gate will.
 */
export function cheaper(engine, { key, fixed, runtimeMin, avail, account }) {
  const floor = account ? 0 : Number(cfg.minimumToStart ?? 0);
  if (avail < floor) return [];
  const out = [];
  const { rate: perMin } = engine.estimateCost(key, 1);
  let m = Math.min(runtimeMin - 1, Math.floor(avail / Number(perMin)));
  while (m >= 1 && engine.estimateCost(key, m).estimatedCost > avail) m -= 1;
  if (m >= 1) out.push({ key, runtime: m, cost: engine.estimateCost(key, m).estimatedCost });
  if (!fixed) {
    const others = [...choices.querySelectorAll('input[name="gpu_selection"]')].map((r) => r.value).filter((k) => k !== key);
    const fits = others.map((k) => ({ key: k, runtime: runtimeMin, cost: engine.estimateCost(k, runtimeMin).estimatedCost }))
      .filter((c) => c.cost <= avail).sort((a, b) => b.cost - a.cost);
    if (fits.length) out.push(fits[0]);
  }
  return out;
}

/** The start needs more than is available: an alert saying so, what would start, and how to get credits. */
function overAvailable(engine, ask) {
  const { key, estimatedCost, avail, account, needed } = ask;
  const name = cfg.names[key] ?? key;
  note.className = 'alert alert-warning';
  note.setAttribute('role', 'alert');
  const lines = [];
  const p = (text) => {
    const el = document.createElement('p');
    el.className = 'mb-1';
    el.textContent = text;
    lines.push(el);
    return el;
  };
  const what = `${name} for ${minutes(ask.runtimeMin)} costs ${credits(estimatedCost)}`;
  const has = account
    ? `the budget ${account} has ${credits(avail)} available to you`
    : `you have ${credits(avail)} available${Number(cfg.held) > 0 ? ` (${number(cfg.held)} more are held by your running servers)` : ''}`;
  p(needed > estimatedCost
    ? `Not enough credits: ${what}, and a start needs at least ${credits(needed)} available; ${has}.`
    : `Not enough credits: ${what}; ${has}.`).id = 'quota-over';
  const refused = cfg.refused?.forCredits ? cfg.refused : null;
  if (!account) {
    if (refused) {
      p(refusalNext(refused.nextRefresh)).id = 'quota-first-top-up';
    } else if (cfg.nextRefresh && Number(cfg.nextRefresh.balance) - Number(cfg.held ?? 0) >= needed) {
      p(`The next top-up (${when(cfg.nextRefresh.at)}) brings your balance to ${credits(cfg.nextRefresh.balance)}: this start would pass after it.`).id = 'quota-first-top-up';
    }
  }
  const options = cheaper(engine, ask);
  if (options.length) {
    const el = p('Would start now: ');
    el.id = 'quota-cheaper';
    options.forEach((c, i) => {
      const use = document.createElement('button');
      use.type = 'button';
      use.className = 'btn btn-sm btn-outline-primary quota-use-cheaper';
      use.textContent = `${cfg.names[c.key] ?? c.key} for ${minutes(c.runtime)} (${credits(c.cost)})`;
      use.addEventListener('click', () => {
        runtime.value = String(c.runtime);
        const radio = [...choices.querySelectorAll('input[name="gpu_selection"]')].find((r) => r.value === c.key);
        if (radio && !radio.disabled) radio.checked = true;
        show(engine);
      });
      el.append(i ? ' or ' : '', use);
    });
  }
  const ask_ = document.createElement('a');
  ask_.id = 'quota-request-credits';
  ask_.className = 'btn btn-sm btn-outline-secondary';
  ask_.href = cfg.requestUrl;
  ask_.textContent = 'Request credits';
  const more = p(`Or ask for ${credits(Math.ceil(needed - avail))} more: `);
  more.append(ask_);
  note.replaceChildren(...lines);
  startButton(`${name} for ${minutes(ask.runtimeMin)} needs more credits than ${account ? `the budget ${account}` : 'you'} ${account ? 'has' : 'have'} available.`);
  return undefined;
}

/** After a refusal: the user's choices as they posted them (profile, its options, resource, runtime, payer). */
function restore(posted) {
  for (const [name, value] of Object.entries(posted ?? {})) {
    for (const field of form.querySelectorAll(`[name="${CSS.escape(name)}"]`)) {
      if (field.type === 'radio' || field.type === 'checkbox') field.checked = field.value === value;
      else if (field.type !== 'submit' && field.type !== 'hidden' && field.type !== 'file') field.value = value;
    }
  }
  // KubeSpawner's form shows a chosen profile's options on its own change event.
  form.querySelector('input[name="profile"]:checked')?.dispatchEvent(new Event('change', { bubbles: true }));
}

/**
 * The hub's error box above the form ("Error: Cannot start container: ..."), in the pages' words
 * (docs/glossary.md): the specification's text stays the API's (the hub's REST API answers it
 * as it is); a refusal for another reason (a restricted accelerator) keeps the engine's sentence.
 */
function explainRefusal(refused) {
  const box = document.querySelector('.spawn-error-msg');
  if (!box || !refused) return;
  const head = document.createElement('strong');
  head.id = 'quota-refusal-head';
  head.textContent = refused.forCredits
    ? 'Your server was not started: it needs more credits than you have available. Below: what it costs, what would start now, and how to ask for credits.'
    : 'Your server was not started.';
  box.replaceChildren(head);
  if (!refused.forCredits) {
    const why = document.createElement('div');
    why.textContent = refused.message;
    box.append(why);
  }
}

/** Engine times shown by the server in UTC: the same time in the user's time zone too. */
function localTimes() {
  for (const el of $('quota-spawn').querySelectorAll('[data-at]')) el.textContent = when(el.dataset.at);
}

localTimes();
if (cfg.refused) {
  restore(cfg.refused.form);
  explainRefusal(cfg.refused);
  // The hub's note is the form's alert now (it names the first top-up after which the start passes).
  if ($('quota-refusal-next')) $('quota-refusal-next').hidden = true;
}
try {
  const engine = await loadEngine(`${cfg.static}gen/`, cfg.values);
  const update = () => show(engine);
  runtime.addEventListener('input', update);
  // The profile list above is part of the same form: a change anywhere in it may change the price.
  form.addEventListener('change', update);
  form.addEventListener('click', () => setTimeout(update));
  update();
  window.quotaSpawn = { state: 'ready' };
} catch (e) {
  cost.textContent = '-';
  say(`The cost cannot be computed here (${e.message}); the hub still checks it at start.`);
  window.quotaSpawn = { state: 'error', error: String(e) };
}
