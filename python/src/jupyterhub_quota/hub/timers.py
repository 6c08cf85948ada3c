"""Auto-stop: a server is stopped when the runtime its user asked for is over (otherwise users run
past their estimate into debt). Timers live in the hub's event loop and are re-armed from the
active sessions in storage when the hub starts."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Any, Optional

from ..host.service import QuotaService, log

#: When a server is busy starting or stopping at its deadline, try again this much later.
RETRY_S = 30.0


def parse_time(s: str) -> float:
    """`2026-11-22T10:00:00` (UTC, as the engine writes it) -> seconds."""
    return dt.datetime.fromisoformat(s.rstrip("Z")).replace(tzinfo=dt.timezone.utc).timestamp()


class Timers:
    def __init__(self, service: QuotaService):
        self.service = service
        self._handles: dict[tuple[str, str], asyncio.TimerHandle] = {}
        #: Each armed timer's deadline (seconds since the epoch).
        self._deadlines: dict[tuple[str, str], float] = {}
        self.app: Optional[Any] = None

    def arm(self, user: str, server: str, deadline: float) -> None:
        """Stops (user, server) at `deadline` (seconds since the epoch)."""
        self.cancel(user, server)
        loop = asyncio.get_running_loop()
        delay = max(0.0, deadline - time.time())
        self._deadlines[(user, server)] = deadline
        self._handles[(user, server)] = loop.call_later(
            delay, lambda: asyncio.ensure_future(self._expire(user, server))
        )

    def extend(self, user: str, server: str, deadline: float) -> None:
        """An extension's new `ends_at`: the timer moves only later. Extensions answered by several
        workers (PostgreSQL) may arrive out of order; the latest `ends_at` is the session's."""
        if deadline > self._deadlines.get((user, server), float("-inf")):
            self.arm(user, server, deadline)

    def cancel(self, user: str, server: str) -> None:
        self._deadlines.pop((user, server), None)
        h = self._handles.pop((user, server), None)
        if h is not None:
            h.cancel()

    def pending(self) -> dict[tuple[str, str], float]:
        """Armed timers and when they fire (event-loop time), for tests and diagnostics."""
        return {k: h.when() for k, h in self._handles.items()}

    async def rearm(self, app: Any) -> None:
        self.app = app
        sessions = await self.service.active_sessions()
        for s in sessions:
            # `ends_at`: the start plus the runtime, an extension's minutes included.
            deadline = parse_time(s["ends_at"])
            self.arm(s["username"], s["server_name"], deadline)
            if len(sessions) <= 20:
                log.info("quota: auto-stop of %s's server %r at %sZ", s["username"], s["server_name"], s["ends_at"])
        if sessions:
            log.info("quota: auto-stop re-armed for %d running server(s)", len(sessions))

    async def _expire(self, name: str, server: str) -> None:
        self._handles.pop((name, server), None)
        self._deadlines.pop((name, server), None)
        app = self.app or _app()
        try:
            user = app.users[name]
        except KeyError:
            return
        if server not in user.orm_spawners:
            return
        spawner = user.spawners[server]
        if spawner.pending:
            log.info("quota: %s server %r is %s at its runtime limit; retrying in %ss", name, server, spawner.pending, RETRY_S)
            self.arm(name, server, time.time() + RETRY_S)
            return
        if not spawner.active:
            return
        log.info("quota: stopping %s server %r: its requested runtime is over", name, server)
        try:
            await app.proxy.delete_user(user, server)
            await user.stop(server)
        except Exception:
            log.exception("quota: stopping %s server %r at its runtime limit failed; retrying", name, server)
            self.arm(name, server, time.time() + RETRY_S)


def _app() -> Any:
    from jupyterhub.app import JupyterHub

    return JupyterHub.instance()
