// The words every quota page says (docs/glossary.md), in one place: the hub's pages, quota-hub's
// pages, the spawn form and JupyterLab's extension (which bundles this file) import them, so a
// number of credits, a rate, a resource, a payer, a time and a time left read the same everywhere.
// The spawn form's lines, which the hub writes before the page's script runs, are here too: the
// hub's `hub/words.py` says them by the same rules (python/tests/test_words.py holds the two equal).
// The API's texts (the specification's refusal among them) stay as the engine writes them.

/** A number of credits as a number: "1,250", "2.5" (at most three decimals, as the engine keeps). */
export const number = (n) => Number(n).toLocaleString('en-US', { maximumFractionDigits: 3 });

/** "1 credit", "2.5 credits", "-3 credits". */
export const credits = (n) => `${number(n)} credit${Number(n) === 1 ? '' : 's'}`;

/** A rate: "1 credit/min", "4.5 credits/min". */
export const rate = (n) => `${credits(n)}/min`;

/** Minutes: "1 minute", "30 minutes". */
export const minutes = (n) => `${number(n)} minute${Number(n) === 1 ? '' : 's'}`;

/**
 * A resource as users know it: the accelerator's display name from `names` (key -> display name:
 * `/api/quota/me`'s `resource_names`), "CPU" for the CPU (key "cpu" or ""), else the key itself.
 */
export function resource(key, names = {}) {
  const k = key ?? '';
  if (names[k]) return names[k];
  if (k === '' || k === 'cpu') return names.cpu ?? 'CPU';
  return k;
}

/** Who pays: "your balance" or "budget physics-101". */
export const payer = (budget) => (budget ? `budget ${budget}` : 'your balance');

/** A server's name as the pages show it. */
export const server = (name) => (name ? `"${name}"` : '(default)');

/** An engine time ("2026-11-29T06:00:00", UTC, with or without "Z") as a Date. */
export function parse(t) {
  if (!t) return null;
  const s = String(t);
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(s) ? s : `${s}Z`);
}

const pad = (n) => String(n).padStart(2, '0');
const day = (d, utc) => (utc
  ? `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
  : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`);
const clock = (d, utc) => (utc ? `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}` : `${pad(d.getHours())}:${pad(d.getMinutes())}`);

/**
 * A time, in the user's local time with UTC beside it: "2026-11-29 07:00 (06:00 UTC)", or
 * "2026-11-29 06:00 UTC" where the browser's time zone is UTC. The UTC day is named when it
 * differs from the local one: "2026-11-30 00:30 (2026-11-29 23:30 UTC)".
 */
export function when(t) {
  const d = parse(t);
  if (!d || Number.isNaN(d.getTime())) return '';
  if (d.getTimezoneOffset() === 0) return `${day(d, true)} ${clock(d, true)} UTC`;
  const utcDay = day(d, true) === day(d, false) ? '' : `${day(d, true)} `;
  return `${day(d, false)} ${clock(d, false)} (${utcDay}${clock(d, true)} UTC)`;
}

/** Whole minutes left, rounded up (a server with 61 s left has "2 min left"); 0 when over. */
export const minutesLeft = (seconds) => (seconds > 0 ? Math.ceil(seconds / 60) : 0);

/** Seconds from now to an engine time. */
export const secondsUntil = (t, now = Date.now()) => (parse(t).getTime() - now) / 1000;

/** "32 min left", "2 h 5 min left", "stopping": the status bar's and the navigation bar's words. */
export function timeLeft(seconds) {
  const m = minutesLeft(seconds);
  if (m === 0) return 'stopping';
  return m < 120 ? `${m} min left` : `${Math.floor(m / 60)} h ${m % 60} min left`;
}

/** "stops in 2 minutes", "is stopping": the warnings' words, from the same minutes as timeLeft. */
export function stopsIn(seconds) {
  const m = minutesLeft(seconds);
  return m === 0 ? 'is stopping' : `stops in ${minutes(m)}`;
}

/**
 * What can be spent now: "98 credits available (2 held by running servers)", "unlimited".
 * `held` is named only when servers hold some.
 */
export function available(avail, held) {
  if (avail === null || avail === undefined) return 'unlimited';
  return Number(held) > 0 ? `${credits(avail)} available (${number(held)} held by running servers)` : `${credits(avail)} available`;
}

/** What the spawn form says with unlimited credits, and on a hub whose quota is off. */
export const UNLIMITED = 'Your credits are unlimited.';
export const QUOTA_OFF = 'Quota is disabled on this hub: nothing is charged.';

/**
 * The spawn form's balance line: "Available now: 98 credits (balance 100, 2 held by your running
 * servers)"; the part in brackets only when servers hold some.
 */
export const availableNow = (avail, balance, held) => `Available now: ${credits(avail)}${
  Number(held) > 0 ? ` (balance ${number(balance)}, ${number(held)} held by your running servers)` : ''}`;

/** The spawn form's next top-up: "Next top-up: <when>, to 120 credits.", or that none is scheduled. */
export const nextTopUp = (next) => (next
  ? `Next top-up: ${when(next.at)}, to ${credits(next.balance)}.`
  : 'No refresh rule will change your balance.');

/** After a refusal for credits: the first top-up after which the same start would pass, or none. */
export const refusalNext = (next) => (next
  ? `The first top-up after which this start would pass: ${when(next.at)}, when your balance becomes ${credits(next.balance)}.`
  : 'No scheduled top-up within a year would let this start pass.');

/** "Charge to": the user's own credit ("Your balance (98 available)", unlimited: null). */
export const ownChoice = (avail) => `Your balance (${avail === null || avail === undefined ? 'unlimited' : `${number(avail)} available`})`;

/** "Charge to": a budget's share for this user ("(50 available to you)"). */
export const budgetChoice = (avail) => `(${number(avail)} available to you)`;
