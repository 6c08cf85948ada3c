// The spawn form's live price: the engine component in the page computes the estimated cost of
// the chosen accelerator and runtime as the user types, exactly as the hub's gate will.
import { loadEngine } from '../src/browser.js';

const $ = (id) => document.getElementById(id);
const cfg = JSON.parse($('quota-spawn-config').textContent);
const cost = $('quota-cost');
const note = $('quota-cost-note');
const runtime = $('quota-runtime');
const choice = () => document.querySelector('#quota-spawn input[name="gpu_selection"]:checked')?.value ?? '';

function show(engine) {
  const text = runtime.value.trim();
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > 480) {
    cost.textContent = '-';
    note.textContent = 'Runtime: a whole number of minutes from 1 to 480';
    return;
  }
  try {
    const { rate, estimatedCost } = engine.estimateCost(choice(), Number(text));
    cost.textContent = `${estimatedCost} credits (${rate}/min x ${text} min)`;
    if (!cfg.enabled) note.textContent = 'Quota is disabled on this hub: nothing is charged.';
    else if (cfg.unlimited) note.textContent = 'Your quota is unlimited: nothing is charged.';
    else if (estimatedCost > cfg.balance) note.textContent = `This is more than your balance (${cfg.balance}): the hub will refuse this start.`;
    else note.textContent = '';
  } catch (e) {
    cost.textContent = '-';
    note.textContent = e.message;
  }
}

try {
  const engine = await loadEngine(`${cfg.static}gen/`, cfg.values);
  const update = () => show(engine);
  runtime.addEventListener('input', update);
  $('quota-spawn').addEventListener('change', update);
  update();
  window.quotaSpawn = { state: 'ready' };
} catch (e) {
  cost.textContent = '-';
  note.textContent = `The cost cannot be computed here (${e.message}); the hub still checks it at start.`;
  window.quotaSpawn = { state: 'error', error: String(e) };
}
