"""The quota engine component in-process, through wasmtime-py.

:class:`Component` compiles ``quota-engine.wasm`` once per process. :class:`QuotaEngine` is one
instance of it over one database connection: every call runs in one transaction (``BEGIN
IMMEDIATE`` for writes), committed only when the call returned normally and no statement failed; a
trap, a runaway guest or a storage failure rolls it back, and the instance is replaced (wasmtime-py
poisons an instance after a trap). A ``QuotaEngine`` is not thread-safe: use it from one thread
(the hub integration runs it on one worker thread).
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any, Callable, Optional

import wasmtime
from wasmtime.component import Linker, Variant

from .sqlite_bridge import SqliteBridge
from .component import _EPOCH_TICK_S, API, COMPONENT_PATH, SQL, Component  # noqa: F401  (COMPONENT_PATH: the package's name)
from .contract import StorageError
from .wasm_calls import add_import
from .answers import _answered, _get, _observation, _quota_error, _record, _responded, _timestamp
from .engine_types import (  # noqa: F401  (the package's names, imported from here by the modules and users)
    Caller,
    ConfigError,
    ConfigSummary,
    EngineError,
    HostSettings,
    Observation,
    Observer,
    QuotaError,
    Response,
    Rule,
)

class QuotaEngine:
    """One engine instance over one SQLite database (a file path, or ``:memory:``).

    ``values`` is the values document (``{"custom": {"quota": ..., "accelerators": ...,
    "authMode": ...}}``) as a dict. Opening brings the database to the engine's schema (the
    engine's ``migrate``: idempotent, safe when several processes start at once).
    """

    def __init__(
        self,
        db: str,
        values: dict,
        *,
        component: Optional[Component] = None,
        durability: str = "full",
        call_deadline: Optional[float] = None,
        refresh_chunk_users: Optional[int] = None,
        busy_wait_ms: Optional[int] = None,
        migrate: bool = True,
    ):
        self.component = component or Component.load()
        if db.startswith(("postgres://", "postgresql://")):
            from .pg_bridge import PgBridge

            self.contract = self.component.contract("postgres")
            self.bridge: Any = PgBridge(db, self.contract, busy_wait_ms=busy_wait_ms)
        else:
            self.contract = self.component.contract("sqlite")
            self.bridge = SqliteBridge(db, self.contract, durability=durability, busy_wait_ms=busy_wait_ms)
        c = self.contract
        #: Users per transaction of a refresh that has a run id: a refresh of a million users never
        #: holds its locks for long, and a run cut off between chunks is completed by its run id.
        self.refresh_chunk_users = c.refresh_chunk_users if refresh_chunk_users is None else refresh_chunk_users
        #: Calls run again after a conflict with a concurrent transaction (PostgreSQL).
        self.conflicts_retried = 0
        #: Told what committed calls did, and of traps, busy failures and retries (metrics).
        self.observer: Optional[Observer] = None
        #: A call that runs longer than this (seconds) is interrupted: a runaway guest never hangs.
        self.call_deadline = c.call_deadline_ms / 1000 if call_deadline is None else call_deadline
        self._values_json = ""
        self.summary: Optional[ConfigSummary] = None
        self._linker = Linker(self.component.engine)
        with self._linker.root() as root:
            with root.add_instance(SQL) as sql:
                add_import(sql, "get-dialect", self.bridge.get_dialect)
                add_import(sql, "query", self.bridge.query)
                add_import(sql, "execute-many", self.bridge.execute_many)
        self._instantiate()
        #: What opening did to the schema: (version found, version now); None when ``migrate`` was
        #: False (the caller checks and migrates: the hub's start-up step, docs/upgrade.md).
        self.migration = self.migrate() if migrate else None
        self.configure(values)

    # Instances

    def _instantiate(self) -> None:
        self._store = wasmtime.Store(self.component.engine)
        self._store.set_limits(memory_size=self.contract.memory_limit_bytes)
        self._store.set_epoch_deadline(1 << 40)
        inst = self._linker.instantiate(self._store, self.component.component)
        api = inst.get_export_index(self._store, API)
        if api is None:
            raise EngineError(f"the component does not export {API}")
        self._funcs: dict[str, Any] = {}
        for name in (
            "migrate", "configure", "next-fire", "check-start", "end-session", "cleanup-stale",
            "refresh", "run-rule", "run-rule-step", "run-applied", "get-rates", "handle-request",
            "handle-request-step", "active-sessions", "replace-memberships", "route-template", "name-problems",
        ):
            idx = inst.get_export_index(self._store, name, api)
            if idx is None:
                raise EngineError(f"the component does not export {API}#{name}")
            self._funcs[name] = self.component.export_call(
                name, inst.get_func(self._store, idx), self._store, lambda: self.observer is not None)

    def _replace_instance(self) -> None:
        self._instantiate()
        if self._values_json:
            self._funcs["configure"](self._store, self._values_json)

    def _raw(self, call: Callable[[dict, wasmtime.Store], Any]) -> Any:
        """Runs one export call with the deadline; a trap replaces the instance."""
        ticks = max(1, int(self.call_deadline / _EPOCH_TICK_S))
        self._store.set_epoch_deadline(ticks)
        try:
            return call(self._funcs, self._store)
        except Exception as e:  # a trap, the deadline, the memory limit, or a lowering error
            self._replace_instance()
            if self.observer is not None:
                self.observer.trapped()
            raise EngineError(f"the engine call failed and changed nothing: {e}") from e

    @property
    def conn(self) -> Any:
        """The bridge's database connection (a PostgreSQL one may be opened again after a restart)."""
        return self.bridge.conn

    def _call(
        self,
        call: Callable[[dict, wasmtime.Store], Any],
        write: bool = True,
        observed: Optional[Callable[[Any], tuple[Any, list]]] = None,
    ) -> Any:
        """One export call in one transaction; run again, whole, after a failure the contract says
        to retry (a conflict with a concurrent transaction), as often and as far apart as it says:
        engine calls are deterministic. ``observed`` splits an observing export's result into its
        answer and what it observed (told to the observer once the transaction has committed)."""
        attempt = 0
        while True:
            try:
                return self._call_once(call, write, observed)
            except StorageError as e:
                if not self.contract.handling[e.kind].retry or attempt == self.contract.retry_attempts:
                    if e.transient and self.observer is not None:
                        self.observer.busy()
                    raise
                attempt += 1
                self.conflicts_retried += 1
                if self.observer is not None:
                    self.observer.conflict_retried()
                time.sleep(self.contract.backoff_s(attempt))

    def _call_once(
        self,
        call: Callable[[dict, wasmtime.Store], Any],
        write: bool = True,
        observed: Optional[Callable[[Any], tuple[Any, list]]] = None,
    ) -> Any:
        self.bridge.begin(write)
        try:
            result = self._raw(call)
        except BaseException:
            self.bridge.rollback()
            raise
        failed = self.bridge.failed
        if failed is not None:
            self.bridge.rollback()
            raise failed
        # What this attempt did, counted only once it has committed (never for a rolled-back or
        # retried attempt). Reads observe nothing.
        raw: list = []
        if observed is not None:
            result, raw = observed(result)
        self.bridge.commit()
        if raw and self.observer is not None:
            told = [o for o in map(_observation, raw) if o is not None]
            if told:
                self.observer.committed(told)
        return result

    # Exports

    def migrate(self) -> tuple[int, int]:
        # Hosts starting at once on a new database take turns (the contract's migration lock).
        self.bridge.lock_for_migration()
        # The contract's migration deadline, not a call's: a migration may rebuild derived tables
        # from the whole ledger.
        call_deadline, self.call_deadline = self.call_deadline, max(self.call_deadline, self.contract.migration_deadline_ms / 1000)
        try:
            r = self._call(lambda f, s: f["migrate"](s))
        finally:
            self.call_deadline = call_deadline
            self.bridge.unlock_after_migration()
        if isinstance(r, Variant):
            raise self.contract.failed("other", str(_quota_error(r)))
        return (_get(r, "from_version"), _get(r, "to_version"))

    def check_schema(self) -> tuple[int, int]:
        """The schema as the engine finds it, changing nothing: (version found, version this engine
        would leave), equal when the database needs no migration (a newer release's schema whose
        floor allows this engine included). The engine's ``migrate`` in a transaction that is
        rolled back; a schema this engine may not write raises, as ``migrate`` would."""
        call_deadline, self.call_deadline = self.call_deadline, max(self.call_deadline, self.contract.migration_deadline_ms / 1000)
        self.bridge.begin(True)
        try:
            r = self._raw(lambda f, s: f["migrate"](s))
        finally:
            self.bridge.rollback()
            self.call_deadline = call_deadline
        if isinstance(r, Variant):
            raise self.contract.failed("other", str(_quota_error(r)))
        return (_get(r, "from_version"), _get(r, "to_version"))

    def configure(self, values: dict) -> ConfigSummary:
        """Replaces the configuration; on error the previous one stays in force."""
        text = json.dumps(values, separators=(",", ":"), allow_nan=False)
        r = self._raw(lambda f, s: f["configure"](s, text))
        if isinstance(r, list):
            raise ConfigError([(_get(p, "field"), _get(p, "message")) for p in r])
        self._values_json = text
        h = r.settings
        self.summary = ConfigSummary(
            enabled=r.enabled,
            rules=tuple(Rule(x.name, x.enabled, x.schedule) for x in r.rules),
            # Every field of the component's record, by its name (a list as a tuple).
            settings=HostSettings(**{
                f.name: (tuple(v) if isinstance(v := _get(h, f.name), list) else v)
                for f in dataclasses.fields(HostSettings)
            }),
        )
        return self.summary

    def next_fire(self, rule: str, after: int) -> Optional[int]:
        """The first firing minute of ``rule`` strictly after ``after`` (seconds), or None."""
        return self._raw(lambda f, s: f["next-fire"](s, rule, _timestamp(after)))

    def handle_request(
        self,
        method: str,
        path: str,
        query: str = "",
        body: str = "",
        caller: Optional[Caller] = None,
        now: Optional[int] = None,
    ) -> Response:
        """Answers one REST request below the base URL (``/api/quota/me``, ...), as quota-hub does.
        GETs run in a read transaction; a refresh with a run id is committed a chunk of users per
        transaction (``handle_request_step`` until it answers)."""
        t = _timestamp(now)
        while (r := self.handle_request_step(method, path, query, body, caller, t)) is None:
            pass
        return r

    def handle_request_step(
        self,
        method: str,
        path: str,
        query: str = "",
        body: str = "",
        caller: Optional[Caller] = None,
        now: Optional[int] = None,
    ) -> Optional[Response]:
        """One transaction of ``handle_request``: None while a refresh with a run id has chunks left
        (send the same request, with the same ``now``, again), then the response. A host that
        serves other calls between the chunks (the hub's worker) never makes them wait for a run."""
        req = _record(
            method=method,
            path=path,
            query=query,
            body=body,
            caller=None if caller is None else _record(name=caller.name, admin=caller.admin, scopes=list(caller.scopes)),
        )
        t = _timestamp(now)
        if method == "GET":
            r = self._call(lambda f, s: f["handle-request"](s, req, t), write=False, observed=_responded)
        else:
            chunk = self.refresh_chunk_users
            r = self._call(lambda f, s: f["handle-request-step"](s, req, t, chunk), observed=_responded)
            if r is None:
                return None
        if isinstance(r, str):
            raise self.contract.failed("other", r)
        return Response(r.status, r.body)

    def cleanup_stale(self, now: Optional[int] = None) -> list[dict]:
        """Closes sessions active for more than 8 hours (not billed); returns them for the log."""
        t = _timestamp(now)
        r = self._call(lambda f, s: f["cleanup-stale"](s, t), observed=_answered)
        if isinstance(r, Variant):
            raise _quota_error(r)
        return [
            {
                "session_id": _get(c, "session_id"),
                "username": c.username,
                "server_name": _get(c, "server_name"),
                "start_time": _get(c, "start_time"),
                "duration_minutes": _get(c, "duration_minutes"),
            }
            for c in r
        ]

    def run_rule(self, rule: str, run_id: Optional[str], now: Optional[int] = None, dry_run: bool = False) -> dict:
        """Runs refresh rule ``rule`` of the values file once for ``run_id`` (a run id already
        applied changes nothing and answers as the first run did). Returns the result as JSON
        (``replayed`` added). With a run id it is committed a chunk of users per transaction
        (``run_rule_step`` until it answers)."""
        t = _timestamp(now)
        if run_id is None or dry_run:
            r = self._call(lambda f, s: f["run-rule"](s, rule, run_id, dry_run, t), observed=_answered)
            return self._rule_result(r)
        while (out := self.run_rule_step(rule, run_id, t)) is None:
            pass
        return out

    def run_rule_step(self, rule: str, run_id: str, now: Optional[int] = None) -> Optional[dict]:
        """One transaction of ``run_rule`` with a run id: None while users are left (call again with
        the same arguments), then the result."""
        t = _timestamp(now)
        chunk = self.refresh_chunk_users
        r = self._call(lambda f, s: f["run-rule-step"](s, rule, run_id, t, chunk), observed=_answered)
        return None if r is None else self._rule_result(r)

    @staticmethod
    def _rule_result(r: Any) -> dict:
        if isinstance(r, Variant):
            raise _quota_error(r)
        out = json.loads(r.json)
        out["replayed"] = r.replayed
        return out

    def replace_memberships(self, users: "list[tuple[str, list[str]]]", complete: bool, now: Optional[int] = None) -> dict:
        """Sets every listed user's groups to exactly these, in one transaction of any size;
        ``complete``: a user left out is in no group afterwards. Returns ``{changed, users}``."""
        t = _timestamp(now)
        entries = [_record(username=u, groups=list(g)) for u, g in users]
        r = self._call(lambda f, s: f["replace-memberships"](s, entries, complete, t))
        if isinstance(r, Variant):
            raise _quota_error(r)
        return {"changed": _get(r, "changed"), "users": _get(r, "users")}

    def run_applied(self, run_id: str) -> bool:
        r = self._call(lambda f, s: f["run-applied"](s, run_id), write=False)
        if isinstance(r, Variant):
            raise _quota_error(r)
        return bool(r)

    def route_template(self, path: str) -> Optional[str]:
        """The route template of a path below the base URL (`/api/quota/sessions/{id}/end`), as
        every host labels its HTTP metrics; None for a path no route answers. Touches no storage."""
        return self._raw(lambda f, s: f["route-template"](s, path))

    def name_problems(self, kind: str, names: "list[str]") -> "list[Optional[str]]":
        """What the engine finds wrong with each name (`kind`: "user" or "group"); None for one it
        takes. Touches no storage."""
        return list(self._raw(lambda f, s: f["name-problems"](s, kind, list(names))))

    def active_sessions(self) -> dict[str, int]:
        """Active sessions per resource type (a read)."""
        r = self._call(lambda f, s: f["active-sessions"](s), write=False)
        if isinstance(r, Variant):
            raise _quota_error(r)
        return {_get(c, "resource_type"): _get(c, "sessions") for c in r}

    def close(self) -> None:
        self.bridge.close()
