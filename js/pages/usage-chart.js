// Credits per day, stacked by resource type: one chart for the user page and the admin page's usage
// view, drawn as inline SVG by chartist (bundled in gen/), with the same numbers in a table beside
// it. Readable without colour (each resource type has its own stripe pattern, shown in the legend)
// and by keyboard (every bar segment is focusable and names its day, resource and credits).
import { BarChart, Svg } from '../gen/chartist.js';
import { credits as creditsText, resource } from './words.js';

// chartist sets a few inline `style` attributes through setAttribute, which the pages' CSP
// (style-src 'self') refuses. The same styles set through the CSSOM are allowed: route them there.
if (!Svg.prototype.quotaCsp) {
  const attr = Svg.prototype.attr;
  Svg.prototype.attr = function (attributes, ns) {
    if (attributes && typeof attributes === 'object' && 'style' in attributes) {
      const { style, ...rest } = attributes;
      if (style !== undefined) this._node.style.cssText = String(style);
      return attr.call(this, rest, ns);
    }
    return attr.call(this, attributes, ns);
  };
  Svg.prototype.quotaCsp = true;
}

/** The resource types present in `days` (rows with `by_resource`), in order. */
export function resourcesOf(days) {
  const seen = new Set();
  for (const d of days) for (const r of d.by_resource ?? []) seen.add(r.resource_type);
  return [...seen].sort();
}

/** credits[resource][dayIndex] */
function matrix(days, resources) {
  return resources.map((r) => days.map((d) => d.by_resource?.find((x) => x.resource_type === r)?.credits ?? 0));
}

const el = (tag, attrs = {}, text) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};

/**
 * Draws the chart into `host` (emptied first) and the table into `table` (a <table>), from `days`
 * (the API's day rows). `names` maps a resource type to its display name. Returns a promise that
 * resolves once the chart is drawn.
 */
export function drawUsage(host, table, days, names = {}, caption = 'Credits per day') {
  const resources = resourcesOf(days);
  const credits = matrix(days, resources);
  const label = (r) => resource(r, names);
  fillTable(table, days, resources, credits, label, caption);
  // Nothing spent: one sentence (below), no table of zeros.
  const spent = days.some((d) => d.credits > 0);
  table.hidden = !spent;
  const details = table.closest('details');
  if (details) details.hidden = !spent;
  host.replaceChildren();
  const legend = el('ul', { class: 'quota-legend', 'aria-label': 'Resource types' });
  resources.forEach((r, i) => {
    const item = el('li');
    const swatch = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    swatch.setAttribute('class', `quota-swatch quota-series-${i % 6}`);
    swatch.setAttribute('viewBox', '0 0 16 16');
    swatch.setAttribute('aria-hidden', 'true');
    const line = document.createElementNS('http://www.w3.org/2000/svg', 'line');
    for (const [k, v] of Object.entries({ x1: 8, y1: 16, x2: 8, y2: 0 })) line.setAttribute(k, v);
    swatch.append(line);
    item.append(swatch, ` ${label(r)}`);
    legend.append(item);
  });
  const box = el('div', { class: 'quota-chart' });
  host.append(box, legend);
  if (!spent) {
    box.append(el('p', { class: 'muted' }, 'No credits were spent in these days.'));
    return Promise.resolve();
  }
  const labels = days.map((d) => d.key.slice(5));
  const series = credits.map((data, i) => ({ name: resources[i], className: `quota-series-${i % 6}`, data }));
  return new Promise((resolve) => {
    const chart = new BarChart(box, { labels, series }, {
      stackBars: true,
      height: '14rem',
      axisY: { onlyInteger: true },
      axisX: { labelInterpolationFnc: (v, i) => (days.length > 14 && i % 3 ? '' : v) },
    });
    chart.on('draw', (ctx) => {
      if (ctx.type !== 'bar') return;
      const day = days[ctx.index].key;
      const r = resources[ctx.seriesIndex];
      const value = credits[ctx.seriesIndex][ctx.index];
      if (!value) {
        ctx.element.remove();
        return;
      }
      const text = `${day}, ${label(r)}: ${creditsText(value)}`;
      ctx.element.attr({ tabindex: '0', role: 'img', 'aria-label': text, 'data-day': day, 'data-resource': r, 'data-credits': String(value) });
      const title = document.createElementNS('http://www.w3.org/2000/svg', 'title');
      title.textContent = text;
      ctx.element._node.append(title);
    });
    chart.on('created', (ctx) => {
      ctx.svg.attr({ role: 'group', 'aria-label': `${caption}, stacked by resource type (the table below has the numbers)` });
      resolve();
    });
  });
}

function fillTable(table, days, resources, credits, label, caption) {
  table.replaceChildren();
  table.append(el('caption', {}, caption));
  const head = el('tr');
  head.append(el('th', { scope: 'col' }, 'Day (UTC)'));
  for (const r of resources) head.append(el('th', { scope: 'col', class: 'num' }, label(r)));
  head.append(el('th', { scope: 'col', class: 'num' }, 'Credits'), el('th', { scope: 'col', class: 'num' }, 'Minutes'));
  const thead = el('thead');
  thead.append(head);
  const body = el('tbody');
  days.forEach((d, j) => {
    const tr = el('tr', { 'data-day': d.key });
    tr.append(el('th', { scope: 'row' }, d.key));
    resources.forEach((r, i) => tr.append(el('td', { class: 'num', 'data-resource': r }, String(credits[i][j]))));
    tr.append(el('td', { class: 'num', 'data-total': '' }, String(d.credits)), el('td', { class: 'num' }, String(d.minutes)));
    body.append(tr);
  });
  table.append(thead, body);
}

/** A plain table of report rows (`key`, credits, minutes, sessions) under `caption`. */
export function fillRows(table, rows, keyTitle, caption, label = (k) => k) {
  table.replaceChildren();
  table.append(el('caption', {}, caption));
  const thead = el('thead');
  const head = el('tr');
  for (const [t, c] of [[keyTitle, ''], ['Credits', 'num'], ['Minutes', 'num'], ['Sessions', 'num']]) head.append(el('th', { scope: 'col', class: c }, t));
  thead.append(head);
  const body = el('tbody');
  for (const r of rows) {
    const tr = el('tr', { 'data-key': r.key });
    tr.append(el('th', { scope: 'row' }, label(r.key)));
    for (const v of [r.credits, r.minutes, r.sessions]) tr.append(el('td', { class: 'num' }, String(v)));
    body.append(tr);
  }
  // Nothing in these days: no empty table (the chart above says so).
  table.hidden = !rows.length;
  table.append(thead, body);
}
