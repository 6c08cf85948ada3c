"""The component's SQL bridge over the standard library's ``sqlite3`` (a file, or ``:memory:``). Its
set-up (WAL, busy wait, ``synchronous``), transaction statements and the meaning of each SQLite
result code are the hosting contract's; what every bridge shares is :class:`bridge.Bridge`."""

from __future__ import annotations

import sqlite3
from typing import Any, Optional

from .bridge import Bridge
from .contract import HostingContract, StorageError

#: Prepared statements ``sqlite3`` keeps per connection (the engine has about 20).
STATEMENT_CACHE = 64


class SqliteBridge(Bridge):
    """The bridge over one ``sqlite3`` connection (autocommit: the engine's caller owns every
    transaction), or ``:memory:``."""

    def __init__(self, path: str, contract: HostingContract, *, durability: str = "full",
                 busy_wait_ms: Optional[int] = None):
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                                   cached_statements=STATEMENT_CACHE)
        except sqlite3.Error as e:
            raise contract.error(getattr(e, "sqlite_errorname", ""), f"sqlite: {e}") from e
        super().__init__(conn, contract)
        self.set_up(busy_wait_ms, durability)

    def run(self, sql: str, params: Any = ()) -> list:
        return self.conn.execute(sql, params).fetchall()

    def _execute_rows(self, statement: str, rows: list) -> int:
        # One `executemany` (its loop in C; `rowcount` sums the rows each run changed): a refresh
        # chunk writes 2,000 user rows, which one `execute` per row made most of its time.
        try:
            return self.conn.executemany(statement, rows).rowcount
        except sqlite3.Error as e:
            raise self.classify(e) from e

    def classify(self, e: Exception) -> StorageError:
        return self.contract.error(getattr(e, "sqlite_errorname", ""), f"sqlite: {e}")
