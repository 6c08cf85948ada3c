"""What every Python bridge for the component's ``quota:engine/sql`` import shares (:class:`Bridge`):
SQLite's is in ``sqlite_bridge``, PostgreSQL's in ``pg_bridge``.

The component sends every statement (schema, migrations, queries); a bridge only runs them:
parameters and rows cross the boundary as JSON text (integers within +-(2^53-1), strings, null).
Every statement of its own (connection set-up, transactions) and the meaning of each driver error
code come from the hosting contract. An exception must never escape into the component
(wasmtime-py would poison the instance), so every failure is returned as a value and remembered in
:attr:`Bridge.failed`, which makes the engine roll the call back.
"""

from __future__ import annotations

import json
from functools import partial
from itertools import chain, compress
from operator import is_
from typing import Any, Callable, Iterable, Optional

from wasmtime.component import Variant

from .contract import HostingContract, StorageError

#: The largest magnitude an integer may have on the wire (exact in JSON everywhere).
JSON_INT_MAX = 2**53 - 1

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _check(values: Any) -> Any:
    """``values`` (a row, or parameters) as they are, if each is an integer within +-(2^53-1), a
    string or null; else a StorageError naming the first that is not."""
    for v in values:
        t = type(v)
        if t is not str and v is not None and not (t is int and -JSON_INT_MAX <= v <= JSON_INT_MAX):
            raise StorageError("other", f"a value {v!r}: only integers within +-(2^53-1), strings and null")
    return values


#: The types a value on the wire may have (a bool is not an int here).
_WIRE_TYPES = frozenset((str, int, type(None)))


_is_int = partial(is_, int)


def _check_rows(rows: list) -> list:
    """``_check`` of every row (values read from the database), done in C a column at a time: the
    column's types as a set, and its integers' largest and smallest; only a row set that fails goes
    value by value, for the message. The admin list of 50,000 users checked 200,000 values one at a
    time here: 41 ms of its 126 (issue 36, docs/performance.md)."""
    for column in zip(*rows):
        types = set(map(type, column))
        if not types <= _WIRE_TYPES:
            _check(chain.from_iterable(rows))
        if int in types:
            ints = column if len(types) == 1 else list(compress(column, map(_is_int, map(type, column))))
            if max(ints) > JSON_INT_MAX or min(ints) < -JSON_INT_MAX:
                _check(chain.from_iterable(rows))
    return rows


def _sent(values: Callable[[], Iterable[Any]]) -> None:
    """The component's parameters (`values()` gives them): their types checked in C
    (`set(map(type, ...))`), and only when one is not a string, an integer or null, value by value
    for the message. Their bound is the component's: it refuses an integer past +-(2^53-1) before
    sending it (a chunk of a refresh checked 32,000 values one at a time here: issue 36)."""
    if not set(map(type, values())) <= _WIRE_TYPES:
        _check(values())


def _params(text: str) -> list:
    params = json.loads(text)
    if not isinstance(params, list):
        raise StorageError("other", "parameters: expected a JSON array")
    _sent(lambda: params)
    return params


def _param_rows(rows_json: str) -> list:
    rows = json.loads(rows_json)
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        raise StorageError("other", "parameter rows: expected an array of arrays")
    _sent(lambda: chain.from_iterable(rows))
    return rows


class Bridge:
    """What every bridge shares: the three imports (never raising), the transaction statements."""

    def __init__(self, conn: Any, contract: HostingContract):
        self.conn = conn
        self.contract = contract
        self.dialect = contract.dialect
        #: The first failure of the current engine call, if any (the call is then rolled back).
        self.failed: Optional[StorageError] = None

    def run(self, sql: str, params: Any = ()) -> list:
        raise NotImplementedError

    def classify(self, e: Exception) -> StorageError:
        raise NotImplementedError

    def _safe(self, sql: str, params: Any = ()) -> list:
        try:
            return self.run(sql, params)
        except StorageError:
            raise
        except Exception as e:  # noqa: BLE001 - every driver failure becomes a typed one
            raise self.classify(e) from e

    # The imports.

    def get_dialect(self, _store: Any) -> str:
        return self.dialect

    def query(self, _store: Any, statement: str, params_json: str) -> Any:
        try:
            return _dumps(_check_rows(self._safe(statement, _params(params_json))))
        except Exception as e:  # noqa: BLE001 - every failure goes back as a value
            return self._fail(e)

    def execute_many(self, _store: Any, statement: str, rows_json: str) -> Any:
        try:
            return self._execute_rows(statement, _param_rows(rows_json))
        except Exception as e:  # noqa: BLE001
            return self._fail(e)

    def _execute_rows(self, statement: str, rows: list) -> int:
        """Runs `statement` once per row (in one driver call); the rows it changed in all."""
        raise NotImplementedError

    def _fail(self, e: Exception) -> Variant:
        if isinstance(e, StorageError):
            f = e
        elif isinstance(e, ValueError):
            f = self.contract.failed("other", f"parameters are not JSON: {e}")
        else:
            f = self.contract.failed("other", f"{type(e).__name__}: {e}")
        if self.failed is None:
            self.failed = f
        return Variant("busy") if f.kind == "busy" else Variant(f.kind, str(f))

    # Transactions, owned by the engine's caller, by the contract's statements.

    def begin(self, write: bool = True) -> None:
        self.failed = None
        self._safe(self.contract.tx["begin_write" if write else "begin_read"])

    def commit(self) -> None:
        try:
            self._safe(self.contract.tx["commit"])
        except StorageError:
            self.rollback()
            raise

    def rollback(self) -> None:
        try:
            self._safe(self.contract.tx["rollback"])
        except StorageError:  # nothing open, or the connection is gone (reported on next use)
            pass

    def lock_for_migration(self) -> None:
        if self.contract.migration_lock:
            self._safe(self.contract.migration_lock[0])

    def unlock_after_migration(self) -> None:
        if self.contract.migration_lock:
            self._safe(self.contract.migration_lock[1])

    def set_up(self, busy_wait_ms: Optional[int] = None, durability: str = "full") -> None:
        def first(sql: str) -> Any:
            rows = self._safe(sql)
            return rows[0][0] if rows and rows[0] else None

        self.contract.set_up(first, busy_wait_ms, durability)

    def close(self) -> None:
        self.conn.close()
