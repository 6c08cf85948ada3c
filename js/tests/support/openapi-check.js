// The published API contract (core/src/api/openapi.json) applied to exchanges, as
// tests/support/src/openapi_check.rs does for the Rust hosts and python/tests/support/openapi_check.py for Python:
// every status is documented for its operation and its body validates against that status's
// schema; a request the engine accepted (2xx) validates against the operation's request schema and
// names only documented query parameters.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import Ajv2020 from 'ajv/dist/2020.js';

import { REPO } from './scenarios.js';

export const DOCUMENT = JSON.parse(readFileSync(join(REPO, 'core', 'src', 'api', 'openapi.json'), 'utf8'));

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(DOCUMENT, 'openapi');
const validators = new Map();

export function templateOf(path) {
  const segs = path.split('/').filter(Boolean);
  let best = null;
  for (const t of Object.keys(DOCUMENT.paths)) {
    const tsegs = t.split('/').filter(Boolean);
    if (tsegs.length !== segs.length) continue;
    let literal = 0;
    let ok = true;
    tsegs.forEach((a, i) => {
      if (a.startsWith('{')) return;
      if (a !== segs[i]) ok = false;
      else literal += 1;
    });
    if (ok && (best === null || literal > best[0])) best = [literal, t];
  }
  return best ? best[1] : null;
}

const escape = (s) => s.replaceAll('~', '~0').replaceAll('/', '~1');

function resolve(pointer) {
  return pointer.slice(1).split('/').reduce((node, p) => node[p.replaceAll('~1', '/').replaceAll('~0', '~')], DOCUMENT);
}

function validate(pointer, value) {
  let v = validators.get(pointer);
  if (!v) {
    v = ajv.compile({ $ref: `openapi#${encodeURI(pointer)}` });
    validators.set(pointer, v);
  }
  return v(value) ? null : ajv.errorsText(v.errors);
}

/** null when the exchange is as the document says, else what is not. */
export function check(method, target, sent, status, body) {
  const q = target.indexOf('?');
  const [path, query] = q < 0 ? [target, ''] : [target.slice(0, q), target.slice(q + 1)];
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch (e) {
    return `${status} body is not JSON (${e.message}): ${body}`;
  }
  const template = templateOf(path);
  if (template === null) {
    if (status !== 400 && status !== 404) return `undocumented path answered ${status}`;
    return validate('/components/schemas/Error', parsed);
  }
  const opPtr = `/paths/${escape(template)}/${method.toLowerCase()}`;
  const op = DOCUMENT.paths[template][method.toLowerCase()];
  if (!op) {
    if (status !== 405) return `${method} is not documented for ${template} but answered ${status}`;
    return validate('/components/schemas/Error', parsed);
  }
  let response = op.responses[String(status)];
  if (!response) return `${method} ${template}: status ${status} is not documented (${body})`;
  let respPtr = `${opPtr}/responses/${status}`;
  if (response.$ref) {
    respPtr = response.$ref.slice(1);
    response = resolve(respPtr);
  }
  if (response.content?.['application/json']) {
    const problem = validate(`${respPtr}/content/application~1json/schema`, parsed);
    if (problem) return `${method} ${template} ${status}: response ${body}: ${problem}`;
  }
  if (status >= 200 && status < 300) {
    if (op.requestBody) {
      const request = sent.trim() ? JSON.parse(sent) : {};
      const problem = validate(`${opPtr}/requestBody/content/application~1json/schema`, request);
      if (problem) return `${method} ${template}: accepted request ${sent} is not in the document: ${problem}`;
    }
    const documented = new Set((op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name));
    for (const pair of query.split('&').filter(Boolean)) {
      const key = pair.split('=')[0];
      if (!documented.has(key)) return `${method} ${template}: accepted the undocumented query parameter \`${key}\``;
    }
  }
  return null;
}

/** Every exchange of a replay's transcript as the document says (the problems, [] when none). */
export function problems(transcript) {
  return transcript
    .map((x) => {
      const sp = x.request.indexOf(' ');
      const p = check(x.request.slice(0, sp), x.request.slice(sp + 1), x.sent, x.status, x.body);
      return p && `step ${x.step} ${x.request}: ${p}`;
    })
    .filter(Boolean);
}
