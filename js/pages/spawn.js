// The spawn form's live price: the engine component in the page computes the estimated cost of
// the chosen accelerator and runtime as the user types, exactly as the hub's gate will. Below a
// KubeSpawner profile list, a profile (or a chosen profile option) that names its accelerator
// prices the spawn by it and hides the accelerator choice, as the gate does. The cost is checked
// against the account chosen under "Charge to" (or the budget a profile names).
import { loadEngine } from '../src/browser.js';

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
    note.textContent = price.refused;
    return;
  }
  const text = runtime.value.trim();
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > 480) {
    cost.textContent = '-';
    note.textContent = 'Runtime: a whole number of minutes from 1 to 480';
    return;
  }
  try {
    const { rate, estimatedCost } = engine.estimateCost(fixed ? price.fixed : chosen(), Number(text));
    cost.textContent = `${estimatedCost} credits (${rate}/min x ${text} min)`;
    if (!cfg.enabled) note.textContent = 'Quota is disabled on this hub: nothing is charged.';
    else if (budget()) {
      const available = cfg.budgets?.[budget()];
      note.textContent = available !== undefined && estimatedCost > available
        ? `This is more than the budget ${budget()} has available to you (${available}): the hub will refuse this start.`
        : available === undefined ? `Charged to the budget ${budget()}.` : '';
    } else if (cfg.unlimited) note.textContent = 'Your quota is unlimited: nothing is charged.';
    else if (estimatedCost > cfg.balance) note.textContent = `This is more than your balance (${cfg.balance}): the hub will refuse this start.`;
    else if (cfg.balance - estimatedCost < (cfg.minimumToStart ?? 0)) {
      const next = cfg.nextRefresh ? ` until the next top-up (${cfg.nextRefresh.at.replace('T', ' ')} UTC)` : '';
      note.textContent = `Warning: a full run leaves ${cfg.balance - estimatedCost} credits, less than the ${cfg.minimumToStart} needed to start a server again${next}.`;
    } else note.textContent = '';
  } catch (e) {
    cost.textContent = '-';
    note.textContent = e.message;
  }
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
  note.textContent = `The cost cannot be computed here (${e.message}); the hub still checks it at start.`;
  window.quotaSpawn = { state: 'error', error: String(e) };
}
