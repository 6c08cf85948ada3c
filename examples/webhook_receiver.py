"""A webhook receiver for quota events (docs/notifications.md): checks each POST's
`Quota-Signature` against the shared secret, drops a repeated event by its signed body's `id` (deliveries
are at least once; the `Quota-Event-Id` header is not signed), prints the event and answers 200 (anything else, or no answer within 10 s, is
retried). Standard library only:

    QUOTA_WEBHOOK_SECRET=... python3 webhook_receiver.py 8090
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["QUOTA_WEBHOOK_SECRET"].encode()
#: Refuse signatures older than this (a replayed request); 0: do not check.
TOLERANCE_S = int(os.environ.get("QUOTA_WEBHOOK_TOLERANCE_S", "300"))
#: Ids of the events printed (the signed body's `id`).
seen: set[int] = set()


def verify(header: str, body: bytes) -> bool:
    """`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    t, v1 = parts.get("t", ""), parts.get("v1", "")
    expected = hmac.new(SECRET, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    fresh = TOLERANCE_S == 0 or (t.isdigit() and abs(time.time() - int(t)) <= TOLERANCE_S)
    return fresh and hmac.compare_digest(v1, expected)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not verify(self.headers.get("Quota-Signature", ""), body):
            self.send_response(401)
            self.end_headers()
            return
        event = json.loads(body)
        if event["id"] not in seen:
            seen.add(event["id"])
            print(f"event {event['id']} {event['kind']} {event['username']}: {json.dumps(event['data'])}", flush=True)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_args) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8090), Receiver).serve_forever()
