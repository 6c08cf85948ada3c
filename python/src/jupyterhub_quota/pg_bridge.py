"""The component's ``quota:engine/sql`` import over PostgreSQL (psycopg 3), for several hubs on one
database. Every engine call is one SERIALIZABLE transaction; a serialization failure or deadlock
is a ``conflict`` (the guest sees ``busy``) and the engine runs the whole call again."""

from __future__ import annotations

import re
from typing import Any, Optional

from wasmtime.component import Variant

from .bridge import BridgeFailure, _dumps, _param_rows, _params

#: The advisory lock key hosts take around the engine's ``migrate`` (the one quota-hub takes).
MIGRATION_LOCK = 0x71756F7461

_PLACEHOLDER = re.compile(r"\$(\d+)")


def _named(statement: str) -> str:
    """``$1`` placeholders as psycopg's ``%(p1)s`` (a ``$N`` may appear more than once)."""
    return _PLACEHOLDER.sub(lambda m: f"%(p{m.group(1)})s", statement.replace("%", "%%"))


def _classify(e: Exception) -> BridgeFailure:
    import psycopg

    state = getattr(getattr(e, "diag", None), "sqlstate", None) or ""
    if state in ("40001", "40P01"):
        return BridgeFailure("conflict", str(e).strip())
    if state in ("55P03", "57014"):
        return BridgeFailure("busy", str(e).strip())
    if state.startswith("23"):
        return BridgeFailure("constraint", str(e).strip())
    if isinstance(e, psycopg.OperationalError) and not state:
        return BridgeFailure("other", f"postgres: connection: {e}".strip())
    return BridgeFailure("other", f"postgres: {e}".strip())


def connect(url: str) -> Any:
    import psycopg

    try:
        return psycopg.connect(url, autocommit=True)
    except psycopg.Error as e:
        raise BridgeFailure("other", f"postgres: connecting: {e}") from e


class PgBridge:
    """The ``quota:engine/sql`` import over one psycopg connection."""

    dialect = "postgres"

    def __init__(self, conn: Any):
        self.conn = conn
        self.failed: Optional[BridgeFailure] = None
        self._statements: dict[str, str] = {}

    def _sql(self, statement: str) -> str:
        s = self._statements.get(statement)
        if s is None:
            s = self._statements[statement] = _named(statement)
        return s

    def get_dialect(self, _store: Any) -> str:
        return self.dialect

    def query(self, _store: Any, statement: str, params_json: str) -> Any:
        try:
            params = {f"p{i}": v for i, v in enumerate(_params(params_json), 1)}
            cur = self.conn.execute(self._sql(statement), params, prepare=None)
            rows = cur.fetchall() if cur.description is not None else []
            for row in rows:
                for v in row:
                    if v is not None and not isinstance(v, (int, str)):
                        raise BridgeFailure("other", f"a column holds {type(v).__name__}, which the engine never stores")
            return _dumps([list(r) for r in rows])
        except Exception as e:  # noqa: BLE001 - every failure goes back as a value
            return self._fail(e)

    def execute_many(self, _store: Any, statement: str, rows_json: str) -> Any:
        try:
            sql = self._sql(statement)
            changed = 0
            for row in _param_rows(rows_json):
                changed += self.conn.execute(sql, {f"p{i}": v for i, v in enumerate(row, 1)}).rowcount
            return changed
        except Exception as e:  # noqa: BLE001
            return self._fail(e)

    def _fail(self, e: Exception) -> Variant:
        f = e if isinstance(e, BridgeFailure) else _classify(e)
        if self.failed is None:
            self.failed = f
        return Variant("busy") if f.kind in ("busy", "conflict") else Variant(f.kind, str(f))

    # Transactions, owned by the engine's caller.

    def begin(self, write: bool = True) -> None:
        self.failed = None
        try:
            self.conn.execute("BEGIN ISOLATION LEVEL SERIALIZABLE" + ("" if write else " READ ONLY"))
        except Exception as e:  # noqa: BLE001
            raise _classify(e) from e

    def commit(self) -> None:
        try:
            self.conn.execute("COMMIT")
        except Exception as e:  # noqa: BLE001
            self.rollback()
            raise _classify(e) from e

    def rollback(self) -> None:
        try:
            self.conn.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - nothing open, or the connection is gone (reported on next use)
            pass

    def lock_for_migration(self) -> None:
        self.conn.execute(f"SELECT pg_advisory_lock({MIGRATION_LOCK})")

    def unlock_after_migration(self) -> None:
        self.conn.execute(f"SELECT pg_advisory_unlock({MIGRATION_LOCK})")

    def close(self) -> None:
        self.conn.close()
