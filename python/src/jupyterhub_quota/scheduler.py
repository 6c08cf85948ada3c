"""Scheduled refresh rules inside the hub: each enabled rule of the values file runs at its cron
times (UTC) with ``run_id = <rule>@<minute>Z``, as quota-hub's scheduler does. The engine applies a
run id at most once, so a restart within the minute, or several hubs (or a hub and quota-hub) on one
database, never apply a run twice. A run missed while no hub was up is reported, not replayed."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Awaitable, Callable, Optional

from .service import QuotaService, log

#: How far back the hub looks for a run it missed.
MISSED_LOOKBACK_S = 7 * 24 * 3600


def run_id(rule: str, at: int) -> str:
    return f"{rule}@{dt.datetime.fromtimestamp(at, dt.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S')}Z"


class Scheduler:
    """`clock` and `sleep` are the real ones in a hub; tests pass their own."""

    def __init__(
        self,
        service: QuotaService,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        before_run: Optional[Callable[[], Awaitable[None]]] = None,
    ):
        self.service = service
        #: Runs before each rule run (inside a hub: the hub's groups into the engine).
        self.before_run = before_run
        self.clock = clock
        self.sleep = sleep
        self.tasks: list[asyncio.Task] = []

    async def start(self, now: Optional[int] = None) -> None:
        t0 = int(self.clock()) if now is None else now
        summary = self.service.engine.summary
        for rule in [r for r in (summary.rules if summary else ()) if r.enabled]:
            await self._report_missed(rule.name, t0)
            self.tasks.append(asyncio.ensure_future(self._forever(rule.name, t0)))

    def stop(self) -> None:
        for t in self.tasks:
            t.cancel()

    async def _report_missed(self, rule: str, now: int) -> None:
        def last_fire(e) -> Optional[int]:
            t, last = now - MISSED_LOOKBACK_S, None
            while (n := e.next_fire(rule, t)) is not None and n <= now:
                last, t = n, n
            return last

        at = await self.service.run(last_fire)
        if at is None:
            return
        rid = run_id(rule, at)
        if not await self.service.run(lambda e: e.run_applied(rid)):
            log.info("quota: refresh rule %s: the last scheduled run %s was not applied (no hub was up then); missed runs are not replayed", rule, rid)

    async def _forever(self, rule: str, since: int) -> None:
        while True:
            at = await self.service.run(lambda e: e.next_fire(rule, since))
            if at is None:
                log.info("quota: refresh rule %s never fires again", rule)
                return
            while (wait := at - self.clock()) > 0:
                await self.sleep(wait)
            now = int(self.clock())
            since = max(at, now)
            rid = run_id(rule, at)
            try:
                if self.before_run is not None:
                    await self.before_run()
                r = await self.service.run(lambda e: e.run_rule(rule, rid, now=now))
            except Exception as e:  # noqa: BLE001 - logged; the rule goes on at its next time
                log.error("quota: refresh rule %s: run %s failed and changed nothing: %s", rule, rid, e)
                continue
            if r.get("replayed"):
                log.info("quota: refresh rule %s: run %s was already applied (by another hub or quota-hub)", rule, rid)
            else:
                log.info(
                    "quota: refresh rule %s: run %s applied: %s users updated, total change %s, %s skipped",
                    rule, rid, r.get("users_updated"), r.get("total_change"), r.get("skipped"),
                )
