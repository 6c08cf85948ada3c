"""The hosting contract (``wit/0.3.0``, interface ``hosting``): how the component must be hosted, as
it states it. Read once per compiled component and dialect; this module is the one place the Python
host applies it: connection set-up, the busy wait, retry pauses, error kinds and what they mean.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional

#: The storage error kinds every host reports (the contract's ``storage-error-kind``).
KINDS = ("busy", "conflict", "constraint", "other")


class StorageError(RuntimeError):
    """A statement failed; the call changed nothing. ``kind`` is ``busy``, ``conflict``,
    ``constraint`` or ``other``; ``transient`` (also ``busy``, for older callers) says the caller may
    simply try again later, ``http_status`` what a server answers (the contract's)."""

    def __init__(self, kind: str, message: str, *, transient: bool = False, http_status: int = 500):
        super().__init__(message)
        self.kind = kind
        self.transient = transient
        self.busy = transient
        self.http_status = http_status


@dataclass(frozen=True)
class Setup:
    sql: str
    expect: tuple[str, ...]
    retry_while_busy: bool


class Handling(NamedTuple):
    """What a failure of one kind means: run the call again, the HTTP status, may the caller retry."""
    retry: bool
    http_status: int
    transient: bool


@dataclass(frozen=True)
class HostingContract:
    dialect: str
    #: The component's ``connection-setup`` for this dialect: ``(busy_wait_ms, durability)`` to the
    #: statements, the wait and durability in them.
    setup_statements: Callable[[int, str], tuple[Setup, ...]] = field(compare=False, repr=False)
    #: A busy set-up statement runs again after ``setup_pause_ms[0]``, doubling up to ``[1]``.
    setup_pause_ms: tuple[int, int]
    tx: dict[str, str]
    migration_lock: Optional[tuple[str, str]]
    busy_wait_ms: int
    retry_attempts: int
    backoff_base_us: int
    backoff_max_us: int
    jitter_percent: int
    refresh_chunk_users: int
    call_deadline_ms: int
    migration_deadline_ms: int
    memory_limit_bytes: int
    #: How often a host runs the sweep, how long a webhook's receiver may take to answer, and the
    #: largest page a host asks of the users and memberships lists.
    sweep_interval_ms: int
    webhook_timeout_ms: int
    users_page_max: int
    error_codes: tuple[tuple[str, str], ...]
    handling: dict[str, Handling]
    tables: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]

    def kind_of(self, code: str) -> str:
        """The kind of a driver's error code (SQLite's result code name, PostgreSQL's SQLSTATE)."""
        for prefix, kind in self.error_codes:
            if code.startswith(prefix):
                return kind
        return "other"

    def error(self, code: str, message: str) -> StorageError:
        return self.failed(self.kind_of(code), message)

    def failed(self, kind: str, message: str) -> StorageError:
        h = self.handling[kind]
        return StorageError(kind, message, transient=h.transient, http_status=h.http_status)

    def backoff_s(self, attempt: int) -> float:
        """The pause before run ``attempt`` (1-based) of a retried call, in seconds."""
        full = min(self.backoff_max_us, self.backoff_base_us * attempt * attempt)
        return (full - random.uniform(0, full * self.jitter_percent / 100)) / 1e6

    def set_up(self, run: Callable[[str], Any], busy_wait_ms: Optional[int] = None, durability: str = "full") -> None:
        """Runs the set-up statements through ``run(sql) -> first column or None`` (which raises a
        :class:`StorageError`); ``retry_while_busy`` statements run again, after the contract's
        set-up pause, until the wait passed."""
        wait = self.busy_wait_ms if busy_wait_ms is None else busy_wait_ms
        first_ms, max_ms = self.setup_pause_ms
        for s in self.setup_statements(wait, durability):
            sql = s.sql
            deadline, pause = time.monotonic() + wait / 1000, first_ms / 1000
            while True:
                try:
                    got = run(sql)
                    break
                except StorageError as e:
                    if not (s.retry_while_busy and e.kind == "busy" and time.monotonic() < deadline):
                        raise
                    time.sleep(pause)
                    pause = min(pause * 2, max_ms / 1000)
            if s.expect and str(got).lower() not in s.expect:
                raise self.failed("other", f"`{sql}` answered {got!r}, expected one of {list(s.expect)}")


def _get(r: Any, name: str) -> Any:
    return getattr(r, name.replace("_", "-"))


def setup_from_wit(statements: Any) -> tuple[Setup, ...]:
    """The ``connection-setup`` answer (a list of ``setup-statement``) as wasmtime-py lifts it."""
    return tuple(Setup(s.sql, tuple(x.lower() for x in s.expect), _get(s, "retry_while_busy")) for s in statements)


def from_wit(r: Any, setup_statements: Callable[[int, str], tuple[Setup, ...]]) -> HostingContract:
    """The ``hosting-contract`` record as wasmtime-py lifts it; ``setup_statements`` asks the
    component's ``connection-setup`` for this dialect."""
    t = _get(r, "transactions")
    retry = r.retry
    lock = _get(t, "migration_lock")
    pause = _get(r, "setup_pause")
    return HostingContract(
        dialect=str(r.dialect),
        setup_statements=setup_statements,
        setup_pause_ms=(_get(pause, "first_ms"), _get(pause, "max_ms")),
        tx={k: _get(t, k) for k in ("begin_write", "begin_read", "commit", "rollback")},
        migration_lock=None if lock is None else (lock[0], lock[1]),
        busy_wait_ms=_get(r, "busy_wait_ms"),
        retry_attempts=retry.attempts,
        backoff_base_us=_get(retry, "backoff_base_us"),
        backoff_max_us=_get(retry, "backoff_max_us"),
        jitter_percent=min(100, _get(retry, "jitter_percent")),
        refresh_chunk_users=_get(r, "refresh_chunk_users"),
        call_deadline_ms=_get(r, "call_deadline_ms"),
        migration_deadline_ms=_get(r, "migration_deadline_ms"),
        memory_limit_bytes=_get(r, "memory_limit_bytes"),
        sweep_interval_ms=_get(r, "sweep_interval_ms"),
        webhook_timeout_ms=_get(r, "webhook_timeout_ms"),
        users_page_max=_get(r, "users_page_max"),
        error_codes=tuple((_get(e, "code_prefix"), str(e.kind)) for e in _get(r, "error_codes")),
        handling={str(h.kind): Handling(h.retry, _get(h, "http_status"), h.transient) for h in _get(r, "error_handling")},
        tables=tuple((x.name, tuple(x.columns), tuple(x.key)) for x in r.tables),  # identity: quota-hub's migrate-db only
    )
