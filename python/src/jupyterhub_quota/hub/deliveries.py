"""Webhook deliveries inside the hub (credit model 2, "Webhooks"), as quota-hub makes them: one
task per configured webhook steps the engine's delivery state
(``POST .../admin/api/quota/webhooks/<name>/deliveries``), POSTs the events it is handed in id
order, signed, each within 10 s, and reports back in its next step. The engine keeps the cursor,
the retries and the hold, so a hub restart loses nothing and only one process (a hub or a
quota-hub replica on the same database) sends to a webhook at a time."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import socket
import time
import uuid
from typing import Any, Optional

from tornado.httpclient import AsyncHTTPClient, HTTPRequest

from ..host.engine_types import Caller
from ..host.service import QuotaService, log

#: A batch stops being sent after this long and is reported (within the engine's 30 s hold).
BATCH_S = 15.0
#: Events asked for per step.
BATCH_EVENTS = 200
#: How often an idle webhook looks for new events.
IDLE_POLL_S = 1.0

DELIVERER = Caller("jupyterhub-quota", scopes=("quota:admin",))
READER = Caller("jupyterhub-quota", admin=True)


def signature(secret: str, t: int, body: str) -> str:
    """``t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``."""
    mac = hmac.new(secret.encode(), f"{t}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def _parse_time(s: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(s.rstrip("Z")).replace(tzinfo=dt.timezone.utc).timestamp()


class Deliveries:
    def __init__(self, service: QuotaService, metrics: Any = None):
        self.service = service
        self.metrics = metrics
        self.holder = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.tasks: list[asyncio.Task] = []
        self.client = AsyncHTTPClient()

    async def names(self) -> list[str]:
        r = await self.service.request("GET", "/admin/api/quota/webhooks", caller=READER)
        if r.status != 200:
            raise RuntimeError(f"listing webhooks: {r.status} {r.body}")
        return [w["name"] for w in r.json()["webhooks"]]

    async def step(self, name: str, report: dict) -> dict:
        r = await self.service.request("POST", f"/admin/api/quota/webhooks/{name}/deliveries", report, caller=DELIVERER)
        if r.status != 200:
            raise RuntimeError(f"{r.status} {r.body}")
        return r.json()

    async def start(self) -> None:
        """Registers every webhook (one new to the values file is sent what happens from now on)
        and starts one task each."""
        for name in await self.names():
            await self.step(name, {"holder": self.holder, "release": True})
            log.info("quota: webhook %s: delivering as %s", name, self.holder)
            self.tasks.append(asyncio.ensure_future(self._forever(name)))

    def stop(self) -> None:
        for t in self.tasks:
            t.cancel()

    async def _forever(self, name: str) -> None:
        report: dict = {}
        last_problem = ""
        while True:
            try:
                answer = await self.step(name, {"holder": self.holder, "limit": BATCH_EVENTS, **report})
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - the report is kept and sent again
                if str(e) != last_problem:
                    log.error("quota: webhook %s: delivery step failed (tried again): %s", name, e)
                    last_problem = str(e)
                await asyncio.sleep(IDLE_POLL_S)
                continue
            last_problem = ""
            report = {}
            events = answer.get("events") or []
            if not events:
                retry = answer.get("retry_at")
                wait = IDLE_POLL_S if retry is None else min(60.0, max(0.2, _parse_time(retry) - time.time()))
                await asyncio.sleep(wait)
                continue
            report = await self._send_batch(name, answer, events)

    async def _send_batch(self, name: str, answer: dict, events: list) -> dict:
        var: Optional[str] = answer.get("secret_env")
        secret = None if var is None else os.environ.get(var)
        started = time.monotonic()
        report: dict = {}
        for e in events:
            if time.monotonic() - started >= BATCH_S:
                break
            if var is not None and secret is None:
                problem: Optional[str] = f"the environment variable {var} (secretEnv) is not set"
            else:
                problem = await self._send_one(answer["url"], e["id"], e["body"], secret)
            if problem is None:
                report["delivered_through"] = e["id"]
                if self.metrics is not None:
                    self.metrics.webhook_delivered(name, max(0.0, time.time() - _parse_time(e["at"])))
            else:
                if self.metrics is not None:
                    self.metrics.webhook_failed(name)
                report["failed"] = {"event_id": e["id"], "error": problem}
                break
        return report

    async def _send_one(self, url: str, event_id: int, body: str, secret: Optional[str]) -> Optional[str]:
        headers = {"Content-Type": "application/json", "Quota-Event-Id": str(event_id)}
        if secret is not None:
            headers["Quota-Signature"] = signature(secret, int(time.time()), body)
        # A receiver has as long to answer as the hosting contract says.
        wait = self.service.contract.webhook_timeout_ms / 1000
        req = HTTPRequest(url, method="POST", body=body, headers=headers, connect_timeout=wait, request_timeout=wait)
        try:
            resp = await self.client.fetch(req, raise_error=False)
        except Exception as e:  # noqa: BLE001 - the delivery failed: reported, retried
            return str(e) or type(e).__name__
        if 200 <= resp.code < 300:
            return None
        if resp.code == 599:
            return str(resp.error) if resp.error else "no answer"
        return f"{resp.code} from the receiver"
