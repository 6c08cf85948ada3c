"""Quota series in the hub's own Prometheus registry (`/hub/metrics`, JupyterHub's
`prometheus_client` default registry), with the names and labels quota-hub's `/metrics` uses.

The engine's observations (gate decisions, ended sessions and their charges, refreshes) are counted
when their transaction commits, never for a call rolled back, retried or replayed; a refusal is
`result="refused"`, not an error. A spawn option refused before it reaches the engine (a runtime
that is not a number, a profile that does not exist) is `result="invalid"`,
`resource_type="other"`. Labels have bounded values: configured resource types (`other` for
anything else, as the engine reports it), configured rule names (`manual` for a refresh without a
name, `other` for any other name).

`quota_sessions_active` is read from the database after every call that started or ended a
session, and again (for the next scrape) whenever the hub is scraped, so sessions that another hub
or quota-hub started on a shared database show up one scrape later."""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable, Optional, Sequence

from prometheus_client import REGISTRY, Counter, Histogram, Info
from prometheus_client.core import GaugeMetricFamily

from ..version import __version__
from ..host.engine import Caller, Observation, Observer, QuotaEngine
from ..host.service import log


#: Who reads the budgets' balances for the gauge.
_READER = Caller("metrics", admin=True)


class _ActiveSessions:
    """A collector of the last active-session counts read (a dict replaced whole)."""

    def __init__(self, metrics: "Metrics"):
        self.metrics = metrics

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "quota_sessions_active",
            "Usage sessions active now, by resource type (read from the database)",
            labels=["resource_type"],
        )

    def describe(self) -> Iterable[GaugeMetricFamily]:
        yield self._family()

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = self._family()
        for resource_type, n in sorted(self.metrics.active.items()):
            family.add_metric([resource_type], n)
        self.metrics.scraped()
        yield family


class _BudgetBalances:
    """Each budget's balance as last read (after a call that charged or a scrape; a dict replaced
    whole), as quota-hub's scrape-time gauge."""

    def __init__(self, metrics: "Metrics"):
        self.metrics = metrics

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "quota_budget_balance",
            "Each shared budget's balance as of now (read from the database)",
            labels=["budget"],
        )

    def describe(self) -> Iterable[GaugeMetricFamily]:
        yield self._family()

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = self._family()
        for name, balance in sorted(self.metrics.budget_balances.items()):
            family.add_metric([name], balance)
        yield family


class _Webhooks:
    """Each webhook's pending and failed deliveries as last read (after a scrape), as quota-hub's
    scrape-time gauges."""

    def __init__(self, metrics: "Metrics"):
        self.metrics = metrics

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        return [
            GaugeMetricFamily("quota_webhook_pending", "Events each webhook is still to be sent (read from the database)",
                              labels=["webhook"]),
            GaugeMetricFamily("quota_webhook_failed_deliveries",
                              "Deliveries that failed for good after 24 hours of retries, of events still kept", labels=["webhook"]),
        ]

    def describe(self) -> Iterable[GaugeMetricFamily]:
        yield from self._families()

    def collect(self) -> Iterable[GaugeMetricFamily]:
        pending, failed = self._families()
        for name, (p, f) in sorted(self.metrics.webhooks.items()):
            pending.add_metric([name], p)
            failed.add_metric([name], f)
        yield pending
        yield failed


class _Durability:
    """The backups' and the replica's series (durability.py), read at each scrape."""

    def __init__(self, metrics: "Metrics"):
        self.metrics = metrics

    def describe(self) -> Iterable:
        return []

    def collect(self) -> Iterable:
        from . import durability

        yield from durability.families(self.metrics.backup_dir, self.metrics.replica)


class _RefreshRules:
    """The refresh rules' last scheduled and applied runs, as quota-hub exports them: read from the
    database on an engine worker after each scrape, shown at the next (the dict replaced whole)."""

    def __init__(self, metrics: "Metrics"):
        self.metrics = metrics

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        return [
            GaugeMetricFamily("quota_refresh_last_scheduled_timestamp_seconds",
                              "An enabled refresh rule's newest fire time at or before now (Unix seconds)", labels=["rule"]),
            GaugeMetricFamily("quota_refresh_last_success_timestamp_seconds",
                              "The newest fire time of an enabled refresh rule whose run was applied, by any hub, server or CronJob (read from the database)",
                              labels=["rule"]),
            GaugeMetricFamily("quota_refresh_last_run_applied",
                              "1 when an enabled refresh rule's newest scheduled run was applied, else 0", labels=["rule"]),
        ]

    def describe(self) -> Iterable[GaugeMetricFamily]:
        yield from self._families()

    def collect(self) -> Iterable[GaugeMetricFamily]:
        scheduled, success, applied = self._families()
        for s in self.metrics.rule_statuses:
            scheduled.add_metric([s.rule], s.last_scheduled)
            applied.add_metric([s.rule], 1 if s.last_applied else 0)
            if s.last_success is not None:
                success.add_metric([s.rule], s.last_success)
        yield from (scheduled, success, applied)


class Metrics(Observer):
    """One per process (the registry is global); `configure()` attaches it to every engine."""

    def __init__(self, registry: Any = REGISTRY):
        self.gate = Counter(
            "quota_gate_decisions",
            "Spawn gate decisions by result (allowed, refused: not enough credits, forbidden: an accelerator of other groups, invalid: a bad request) and resource type",
            ["result", "resource_type"], registry=registry,
        )
        self.session_ends = Counter(
            "quota_session_ends", "Usage sessions ended, by status (completed, failed, cleaned_up) and resource type",
            ["status", "resource_type"], registry=registry,
        )
        self.credits_charged = Counter(
            "quota_credits_charged", "Credits deducted for ended sessions, by resource type", ["resource_type"], registry=registry,
        )
        self.refresh_runs = Counter(
            "quota_refresh_runs", "Refreshes applied (not dry runs or replays), by rule (manual: no rule name)", ["rule"], registry=registry,
        )
        self.refresh_users = Counter(
            "quota_refresh_users_updated", "Users whose balance a refresh changed, by rule", ["rule"], registry=registry,
        )
        self.busy_calls = Counter(
            "quota_storage_busy", "Engine calls failed because the database stayed locked or conflicting", registry=registry,
        )
        self.conflicts = Counter(
            "quota_storage_conflict_retries", "Engine calls run again after a conflict with a concurrent transaction (PostgreSQL)",
            registry=registry,
        )
        self.traps = Counter(
            "quota_engine_traps", "Engine calls that trapped (panic, deadline, memory limit) and were rolled back", registry=registry,
        )
        self.holds_repaired = Counter(
            "quota_budget_holds_repaired",
            "Budgets whose running total of what their running sessions hold the sweep found apart from the sessions' "
            "sum, and set right (a write no trigger saw: docs/operations.md)", registry=registry,
        )
        self.gate_storage_errors = Counter(
            "quota_gate_storage_errors",
            "Spawn gates whose quota database failed, by outcome (refused: onStorageError refuse; allowed: started unbilled)",
            ["outcome"], registry=registry,
        )
        for outcome in ("refused", "allowed"):
            self.gate_storage_errors.labels(outcome)
        self.http_requests = Counter(
            "quota_http_requests", "HTTP requests to the quota routes answered, by route template, method and status",
            ["route", "method", "status"], registry=registry,
        )
        self.http_durations = Histogram(
            "quota_http_request_duration_seconds",
            "Time from a quota request's arrival to its answer, by route template, method and status",
            ["route", "method", "status"], registry=registry,
            # quota-hub's buckets: 0.25 ms doubling 15 times.
            buckets=[0.00025 * 2**i for i in range(15)],
        )
        Info("quota_build", "The running jupyterhub-quota's version (and the commit it was built from, when known)",
             registry=registry).info({"version": __version__, "revision": "unknown"})
        #: The enabled refresh rules' names, and their statuses as last read (`scheduler.RuleStatus`).
        self.enabled_rules: tuple[str, ...] = ()
        self.rule_statuses: list = []
        registry.register(_RefreshRules(self))
        #: The scheduled backups' folder and Litestream's replica, when configure() set them up.
        self.backup_dir: Any = None
        self.replica: Any = None
        registry.register(_Durability(self))
        self.rules: frozenset = frozenset()
        #: The last counts read, by resource type.
        self.active: dict[str, int] = {}
        self._dirty = threading.Event()
        self._rules_dirty = threading.Event()
        #: Set by the hub: schedules a read of the counts on an engine's worker.
        self.on_scrape: Optional[Any] = None
        registry.register(_ActiveSessions(self))
        self.budget_balances: dict = {}
        registry.register(_BudgetBalances(self))
        self.budget_charged = Counter(
            "quota_budget_credits_charged", "Credits charged to shared budgets for ended sessions, by budget", ["budget"],
            registry=registry,
        )
        #: Each webhook's (pending, failed) as last read.
        self.webhooks: dict = {}
        registry.register(_Webhooks(self))
        self.webhook_sends = Counter(
            "quota_webhook_sends",
            "Webhook POSTs by webhook and outcome (delivered: a 2xx within 10 s; failed: anything else, retried)",
            ["webhook", "outcome"], registry=registry,
        )
        self.webhook_latency = Histogram(
            "quota_webhook_delivery_latency_seconds", "From an event's writing to its receiver's 2xx, by webhook",
            ["webhook"], registry=registry, buckets=[0.25 * 2**i for i in range(16)],
        )

    def webhook_delivered(self, name: str, age_s: float) -> None:
        self.webhook_sends.labels(name, "delivered").inc()
        self.webhook_latency.labels(name).observe(age_s)

    def webhook_failed(self, name: str) -> None:
        self.webhook_sends.labels(name, "failed").inc()

    def know_rules(self, names: Iterable[str]) -> None:
        self.rules = frozenset(names)

    def _rule(self, name: str) -> str:
        return name if name == "manual" or name in self.rules else "other"

    # Observer (engine worker threads)

    def committed(self, observations: Sequence[Observation]) -> None:
        for e in observations:
            if e.kind == "gate":
                self.gate.labels(e.result, e.resource_type).inc()
                if e.result == "allowed":
                    self._dirty.set()
            elif e.kind == "sessions-ended":
                self.session_ends.labels(e.status, e.resource_type).inc(e.sessions)
                self.credits_charged.labels(e.resource_type).inc(max(0, e.credits))
                if e.budget:
                    self.budget_charged.labels(e.budget).inc(max(0, e.credits))
                self._dirty.set()
            elif e.kind == "refreshed":
                rule = self._rule(e.rule_name)
                self.refresh_runs.labels(rule).inc()
                self.refresh_users.labels(rule).inc(e.users_updated)
            elif e.kind == "holds-repaired":
                self.holds_repaired.inc()

    def trapped(self) -> None:
        self.traps.inc()

    def busy(self) -> None:
        self.busy_calls.inc()

    def conflict_retried(self) -> None:
        self.conflicts.inc()

    # The hub's own decisions

    def option_refused(self) -> None:
        self.gate.labels("invalid", "other").inc()

    def gate_storage_error(self, outcome: str) -> None:
        self.gate_storage_errors.labels(outcome).inc()

    def http_request(self, route: str, method: str, status: int, seconds: float) -> None:
        m = method if method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS") else "other"
        self.http_requests.labels(route, m, str(status)).inc()
        self.http_durations.labels(route, m, str(status)).observe(seconds)

    # Active sessions

    def after_call(self, engine: QuotaEngine) -> None:
        """On an engine's worker thread, after a call returned: re-read the active sessions if the
        call started or ended one (or a scrape asked), and after a scrape the rules' runs."""
        if self._rules_dirty.is_set():
            self._rules_dirty.clear()
            try:
                from .scheduler import rule_statuses

                self.rule_statuses = rule_statuses(engine, self.enabled_rules, int(time.time()))
            except Exception:  # noqa: BLE001 - a gauge must never fail a call
                log.exception("quota: reading the refresh rules' runs for the metrics failed")
        if not self._dirty.is_set():
            return
        self._dirty.clear()
        try:
            self.active = engine.active_sessions()
            r = engine.handle_request("GET", "/admin/api/quota/budgets", "", "", _READER, int(time.time()))
            if r.status == 200:
                self.budget_balances = {b["name"]: b["balance"] for b in r.json()["budgets"]}
            r = engine.handle_request("GET", "/admin/api/quota/webhooks", "", "", _READER, int(time.time()))
            if r.status == 200:
                self.webhooks = {w["name"]: (w["pending"], w["failed"]) for w in r.json()["webhooks"]}
        except Exception:  # noqa: BLE001 - a gauge must never fail a call
            log.exception("quota: reading the active sessions for the metrics failed")

    def scraped(self) -> None:
        """A scrape read the counts: read them again for the next one."""
        self._dirty.set()
        if self.enabled_rules:
            self._rules_dirty.set()
        if self.on_scrape is not None:
            try:
                self.on_scrape()
            except Exception:  # noqa: BLE001
                log.exception("quota: scheduling the active-session read failed")


_metrics: Optional[Metrics] = None
_lock = threading.Lock()


def process_metrics() -> Metrics:
    """The process's one `Metrics` (created and registered on first use)."""
    global _metrics
    with _lock:
        if _metrics is None:
            _metrics = Metrics()
        return _metrics


class NoMetrics(Observer):
    """`configure(..., metrics=False)`: counts nothing."""

    rules: frozenset = frozenset()
    enabled_rules: tuple = ()

    def http_request(self, route: str, method: str, status: int, seconds: float) -> None:
        pass

    def know_rules(self, names: Iterable[str]) -> None:
        pass

    def option_refused(self) -> None:
        pass

    def gate_storage_error(self, outcome: str) -> None:
        pass

    def after_call(self, engine: QuotaEngine) -> None:
        pass

    def webhook_delivered(self, name: str, age_s: float) -> None:
        pass

    def webhook_failed(self, name: str) -> None:
        pass

