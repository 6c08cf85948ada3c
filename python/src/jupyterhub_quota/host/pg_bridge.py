"""The component's ``quota:engine/sql`` import over PostgreSQL (psycopg 3), for several hubs on one
database. The statements of its own (set-up, SERIALIZABLE transactions, the migration lock) and the
meaning of each SQLSTATE are the hosting contract's: a serialization failure or deadlock is a
``conflict``, and the engine runs the whole call again."""

from __future__ import annotations

import re
from typing import Any, Optional

from .bridge import Bridge
from .contract import HostingContract, StorageError

_PLACEHOLDER = re.compile(r"\$(\d+)")


def _by_name(params: Any) -> dict:
    """Positional parameters as the names `_named` gives their placeholders."""
    return {f"p{i}": v for i, v in enumerate(params, 1)}


def _named(statement: str) -> str:
    """``$1`` placeholders as psycopg's ``%(p1)s`` (a ``$N`` may appear more than once)."""
    return _PLACEHOLDER.sub(lambda m: f"%(p{m.group(1)})s", statement.replace("%", "%%"))


class PgBridge(Bridge):
    """The bridge over one psycopg connection (autocommit: the engine's caller owns transactions)."""

    def __init__(self, url: str, contract: HostingContract, *, busy_wait_ms: Optional[int] = None):
        self.url = url
        self.busy_wait_ms = busy_wait_ms
        super().__init__(self._connect(url, contract), contract)
        self._statements: dict[str, str] = {}
        self.set_up(busy_wait_ms)

    @staticmethod
    def _connect(url: str, contract: HostingContract) -> Any:
        import psycopg

        try:
            return psycopg.connect(url, autocommit=True)
        except psycopg.Error as e:
            raise contract.failed("other", f"postgres: connecting: {e}") from e

    def _gone(self) -> bool:
        return bool(self.conn.closed or self.conn.broken)

    def begin(self, write: bool = True) -> None:
        """A connection the server closed (a restart, a failover) is opened again and set up before
        the next transaction, as quota-hub's bridge does; until the server answers, each call fails
        with a storage error and changes nothing."""
        if self._gone():
            self._reopen()
        try:
            super().begin(write)
        except StorageError:
            if not self._gone():
                raise
            self._reopen()
            super().begin(write)

    def _reopen(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - it is gone either way
            pass
        self.conn = self._connect(self.url, self.contract)
        self.set_up(self.busy_wait_ms)

    def _sql(self, statement: str) -> str:
        s = self._statements.get(statement)
        if s is None:
            s = self._statements[statement] = _named(statement)
        return s

    def _execute(self, statement: str, params: Any) -> Any:
        return self.conn.execute(self._sql(statement), _by_name(params), prepare=None)

    def run(self, sql: str, params: Any = ()) -> list:
        cur = self._execute(sql, params)
        return [list(r) for r in cur.fetchall()] if cur.description is not None else []

    def _execute_rows(self, statement: str, rows: list) -> int:
        # One `executemany` (psycopg pipelines it: one round trip for the rows, not one each;
        # `rowcount` sums them): a page of a group snapshot inserts about 1,100 index rows, which
        # one round trip each made 96 s of a first snapshot of 100,000 users (issue 36).
        if not rows:
            return 0
        try:
            with self.conn.cursor() as cur:
                cur.executemany(self._sql(statement), [_by_name(r) for r in rows])
                return cur.rowcount
        except Exception as e:  # noqa: BLE001
            raise self.classify(e) from e

    def classify(self, e: Exception) -> StorageError:
        state = getattr(getattr(e, "diag", None), "sqlstate", None) or ""
        where = "postgres" if state else "postgres: connection"
        return self.contract.error(state, f"{where}: {e}".strip())
