// A webhook receiver for quota events (docs/notifications.md): checks each POST's
// `Quota-Signature` against the shared secret, drops a repeated event by its signed body's `id`
// (deliveries are at least once; the `Quota-Event-Id` header is not signed), prints the event and
// answers 200 (anything else, or no answer within 10 s, is retried). Node's standard library only:
//
//     QUOTA_WEBHOOK_SECRET=... node webhook-receiver.mjs 8090
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const SECRET = process.env.QUOTA_WEBHOOK_SECRET;
// Refuse signatures older than this (a replayed request); 0: do not check.
const TOLERANCE_S = Number(process.env.QUOTA_WEBHOOK_TOLERANCE_S ?? '300');
const seen = new Set();

/** `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. */
export function verify(header, body) {
  const parts = Object.fromEntries((header ?? '').split(',').map((p) => p.split('=', 2)));
  const expected = createHmac('sha256', SECRET).update(`${parts.t}.`).update(body).digest('hex');
  const fresh = TOLERANCE_S === 0 || Math.abs(Date.now() / 1000 - Number(parts.t)) <= TOLERANCE_S;
  const given = Buffer.from(parts.v1 ?? '');
  return fresh && given.length === expected.length && timingSafeEqual(given, Buffer.from(expected));
}

createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (req.method !== 'POST' || !verify(req.headers['quota-signature'], body)) {
      res.writeHead(401).end();
      return;
    }
    const e = JSON.parse(body);
    if (!seen.has(e.id)) {
      seen.add(e.id);
      console.log(`event ${e.id} ${e.kind} ${e.username}: ${JSON.stringify(e.data)}`);
    }
    res.writeHead(200, { 'Content-Length': '0' }).end();
  });
}).listen(Number(process.argv[2] ?? 8090), '127.0.0.1');
