"""The component's SQL bridge over the standard library's ``sqlite3``.

The component sends every statement (schema, migrations, queries); this module only runs them:
parameters and rows cross the boundary as JSON text (integers within +-(2^53-1), strings, null),
and failures come back as the WIT ``error`` variant (``busy``, ``constraint``, ``other``). No query
is written in Python.

An exception must never escape into the component (wasmtime-py would poison the instance), so
every failure is returned as a value and remembered in :attr:`SqliteBridge.failed`, which makes the
engine roll the call back.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any, Optional

from wasmtime.component import Variant

#: The largest magnitude an integer may have on the wire (exact in JSON everywhere).
JSON_INT_MAX = 2**53 - 1

#: How long a writer waits for another process's lock before the call fails with ``busy``.
BUSY_TIMEOUT_S = 10.0

#: Prepared statements ``sqlite3`` keeps per connection (the engine has about 20).
STATEMENT_CACHE = 64

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


class BridgeFailure(Exception):
    """A statement failed: ``kind`` is ``busy``, ``constraint`` or ``other``."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _param_rows(rows_json: str) -> list:
    """The rows of an ``execute-many`` (a JSON array of arrays), every value checked."""
    rows = json.loads(rows_json)
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise BridgeFailure("other", "parameter rows: expected an array of arrays")
    for row in rows:
        for v in row:
            _check_value(v)
    return rows


def _check_value(v: Any) -> None:
    if v is None or isinstance(v, str):
        return
    if type(v) is int and -JSON_INT_MAX <= v <= JSON_INT_MAX:
        return
    raise BridgeFailure("other", f"parameter {v!r}: only integers within +-(2^53-1), strings and null")


def _params(text: str) -> list:
    params = json.loads(text)
    if not isinstance(params, list):
        raise BridgeFailure("other", "parameters: expected a JSON array")
    for v in params:
        _check_value(v)
    return params


def _classify(e: sqlite3.Error) -> BridgeFailure:
    if isinstance(e, sqlite3.IntegrityError):
        return BridgeFailure("constraint", str(e))
    code = getattr(e, "sqlite_errorcode", None)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "database is locked" in str(e):
        return BridgeFailure("busy", str(e))
    return BridgeFailure("other", f"sqlite: {e}")


def _enter_wal(conn: sqlite3.Connection, wait: float) -> None:
    """Switches the file to WAL. On a new file several processes starting at once all try to; the
    switch needs the file to itself and SQLite answers busy at once, without its busy handler, so it
    is retried here for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    pause = 0.001
    while True:
        try:
            (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
        except sqlite3.OperationalError as e:
            if _classify(e).kind != "busy" or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
            continue
        if str(mode).lower() not in ("wal", "memory"):
            raise sqlite3.OperationalError(f"could not switch to WAL (journal mode stays {mode})")
        return


def open_sqlite(path: str, *, durability: str = "full", busy_timeout: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """Opens (creating if needed) a database file, or ``:memory:``: WAL, ``synchronous=FULL`` by
    default, autocommit mode (the engine's caller owns every transaction)."""
    conn = sqlite3.connect(
        path,
        timeout=busy_timeout,
        isolation_level=None,
        check_same_thread=False,
        cached_statements=STATEMENT_CACHE,
    )
    _enter_wal(conn, busy_timeout)
    conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
    return conn


class SqliteBridge:
    """The ``quota:engine/sql`` import over one ``sqlite3`` connection."""

    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        #: The first failure of the current engine call, if any (the call is then rolled back).
        self.failed: Optional[BridgeFailure] = None

    # The three imports. Each returns a value and never raises.

    def get_dialect(self, _store: Any) -> str:
        return self.dialect

    def query(self, _store: Any, statement: str, params_json: str) -> Any:
        try:
            cur = self.conn.execute(statement, _params(params_json))
            rows = cur.fetchall()
            for row in rows:
                for v in row:
                    if v is not None and not isinstance(v, (int, str)):
                        raise BridgeFailure("other", f"a column holds {type(v).__name__}, which the engine never stores")
            return _dumps(rows)
        except Exception as e:  # noqa: BLE001 - every failure goes back as a value
            return self._fail(e)

    def execute_many(self, _store: Any, statement: str, rows_json: str) -> Any:
        try:
            changed = 0
            execute = self.conn.execute
            for row in _param_rows(rows_json):
                changed += execute(statement, row).rowcount
            return changed
        except Exception as e:  # noqa: BLE001
            return self._fail(e)

    def _fail(self, e: Exception) -> Variant:
        if isinstance(e, sqlite3.Error):
            f = _classify(e)
        elif isinstance(e, BridgeFailure):
            f = e
        elif isinstance(e, ValueError):
            f = BridgeFailure("other", f"parameters are not JSON: {e}")
        else:
            f = BridgeFailure("other", f"{type(e).__name__}: {e}")
        if self.failed is None:
            self.failed = f
        return Variant("busy") if f.kind == "busy" else Variant(f.kind, str(f))

    # Transactions, owned by the engine's caller.

    def begin(self, write: bool = True) -> None:
        self.failed = None
        try:
            self.conn.execute("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")
        except sqlite3.Error as e:
            raise _classify(e) from e

    def commit(self) -> None:
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error as e:
            self.rollback()
            raise _classify(e) from e

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
