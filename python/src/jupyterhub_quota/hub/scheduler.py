"""Scheduled refresh rules inside the hub: each enabled rule of the values file runs at its cron
times (UTC) with ``run_id = <rule>@<minute>Z``, as quota-hub's scheduler does. The engine applies a
run id at most once, so a restart within the minute, or several hubs (or a hub and quota-hub) on one
database, never apply a run twice. A run missed while no hub was up is reported, not replayed.
Beside the rules, due grants are written off at start and every minute (the sweep)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Optional

from ..host.engine_types import Caller
from ..host.service import QuotaService, log

#: How far back the hub looks for a run it missed.
MISSED_LOOKBACK_S = 7 * 24 * 3600


def run_id(rule: str, at: int) -> str:
    return f"{rule}@{dt.datetime.fromtimestamp(at, dt.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S')}Z"


#: How many of a rule's latest fire times the metrics look through for the last applied run.
METRICS_FIRES_CHECKED = 32


@dataclass(frozen=True)
class RuleStatus:
    """One enabled rule as the metrics show it (quota-hub's `RuleStatus`)."""

    rule: str
    #: Its newest fire time at or before now (within the lookback).
    last_scheduled: int
    #: Whether that run was applied (by any hub, server or CronJob: the database says).
    last_applied: bool
    #: The newest of its latest fire times whose run was applied, if any.
    last_success: Optional[int]


def _recent_fires(engine, rule: str, now: int) -> list[int]:
    """The fire times of `rule` at or before `now`, oldest first: the window widens from an hour
    until it holds METRICS_FIRES_CHECKED of them or reaches the lookback."""
    window = 3600
    while True:
        w = min(window, MISSED_LOOKBACK_S)
        t, fires = now - w, []
        while (n := engine.next_fire(rule, t)) is not None and n <= now:
            fires.append(n)
            t = n
        if len(fires) >= METRICS_FIRES_CHECKED or w == MISSED_LOOKBACK_S:
            return fires[-METRICS_FIRES_CHECKED:]
        window *= 4


def rule_statuses(engine, rules, now: int) -> list[RuleStatus]:
    """Each enabled rule's last scheduled run and last applied run, read from the database (right
    after a restart, and whichever hub, server or CronJob ran it), as quota-hub computes them."""
    out = []
    for rule in rules:
        fires = _recent_fires(engine, rule, now)
        if not fires:
            continue
        success = next((at for at in reversed(fires) if engine.run_applied(run_id(rule, at))), None)
        out.append(RuleStatus(rule, fires[-1], success == fires[-1], success))
    return out


#: The sweep's caller: a service with the refresh scope, as quota-hub's own sweep is.
SWEEPER = Caller("jupyterhub-quota", scopes=("quota:refresh",))


class Scheduler:
    """`clock` and `sleep` are the real ones in a hub; tests pass their own."""

    def __init__(
        self,
        service: QuotaService,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        before_run: Optional[Callable[[], Awaitable[None]]] = None,
        sweep_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.service = service
        #: Runs before each rule run (inside a hub: the hub's groups into the engine).
        self.before_run = before_run
        self.clock = clock
        self.sleep = sleep
        #: The pause between sweeps (a test's rule clock need not count them).
        self.sweep_sleep = sweep_sleep
        self.tasks: list[asyncio.Task] = []

    async def start(self, now: Optional[int] = None) -> None:
        t0 = int(self.clock()) if now is None else now
        summary = self.service.engine.summary
        for rule in [r for r in (summary.rules if summary else ()) if r.enabled]:
            await self._report_missed(rule.name, t0)
            self.tasks.append(asyncio.ensure_future(self._forever(rule.name, t0)))
        # Grants that lapsed while no hub ran are written off now, then every minute.
        await self.sweep(t0)
        self.tasks.append(asyncio.ensure_future(self._sweep_forever()))

    async def sweep(self, now: Optional[int] = None) -> dict:
        """Writes every expiry due now (``POST .../admin/api/quota/expire`` in chunks, each its own
        transaction, so the hub's writes never wait long behind it); what it wrote off."""
        at = int(self.clock()) if now is None else now
        total = {"grants_expired": 0, "credits_expired": 0}
        while True:
            r = await self.service.run(
                lambda e: e.handle_request("POST", "/admin/api/quota/expire", "", '{"in_chunks":true}', SWEEPER, at)
            )
            if r.status != 200:
                raise RuntimeError(f"{r.status} {r.body}")
            swept = r.json()
            total["grants_expired"] += swept["grants_expired"]
            total["credits_expired"] += swept["credits_expired"]
            for d in swept.get("holds_repaired", ()):
                log.warning(
                    "quota: budget %s: its running total said %s credits held, its running sessions hold %s; set right "
                    "(docs/operations.md, QuotaBudgetHoldsRepaired)", d["budget"], d["kept"], d["summed"])
            if not swept.get("more"):
                break
        if total["grants_expired"]:
            log.info("quota: expired %s grant(s): %s credits written off", total["grants_expired"], total["credits_expired"])
        return total

    async def _sweep_forever(self) -> None:
        # As often as the hosting contract says: due grants written off, `session.ending` and
        # `grant.expiring` warnings written (a warning is at most this late), old events purged.
        every = self.service.contract.sweep_interval_ms / 1000
        while True:
            await self.sweep_sleep(every)
            try:
                await self.sweep()
            except Exception as e:  # noqa: BLE001 - logged; the next minute tries again
                log.error("quota: the sweep failed (the next one tries again): %s", e)

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
                r = await self.service.run_steps(lambda e: e.run_rule_step(rule, rid, now=now))
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
