"""The hub's quota routes as this server sees them: one read of
``GET {JUPYTERHUB_API_URL}/quota/me/status`` answers everything the status bar shows, kept for
30 s and shared by every browser tab (so the hub serves at most one quota read per server per
30 s, however many tabs poll), and read again at once after an extension. While a tab listens,
one stream of the hub's live balance (``{hub}/quota/live``, the server's token) tells every
tab at once that the user's balance or server changed (an extension or an end anywhere)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import Any, Callable, Optional
from urllib.parse import quote

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

log = logging.getLogger("jupyterlab_quota")

#: Seconds a status read is reused for.
FRESH_S = 30.0
#: Events kept for the browser (the newest).
EVENTS_KEPT = 50
#: Seconds before the hub's live stream is opened again after it ended or failed.
RETRY_S = 5.0


class Unavailable(Exception):
    """No quota here: not in a JupyterHub server, or the hub has no quota package (or this
    server's token lacks the scope). Said once in the server's log."""


class HubQuota:
    def __init__(self, env: Optional[dict] = None, clock: Callable[[], float] = time.monotonic,
                 logger: Optional[logging.Logger] = None) -> None:
        env = os.environ if env is None else env
        #: The server's own log (Jupyter Server's), or this module's.
        self.log = logger or log
        self.api = (env.get("JUPYTERHUB_API_URL") or "").rstrip("/")
        self.token = env.get("JUPYTERHUB_API_TOKEN") or ""
        self.server = env.get("JUPYTERHUB_SERVER_NAME") or ""
        self.clock = clock
        self.unavailable: Optional[str] = None
        if not (self.api and self.token):
            self._give_up("not running as a JupyterHub single-user server (no JUPYTERHUB_API_URL/JUPYTERHUB_API_TOKEN)")
        self._status: Optional[dict] = None
        self._read_at = float("-inf")
        self._reading: Optional[asyncio.Future] = None
        self._events: list = []
        self._cursor: Optional[int] = None
        #: Hub reads made (the benchmark and tests count them).
        self.reads = 0
        #: The browser tabs listening (quota/live), each a queue of "changed" notes.
        self.listeners: set[asyncio.Queue] = set()
        self._following: Optional[asyncio.Future] = None
        self.retry_s = RETRY_S
        #: Changes the hub's stream announced (tests read it).
        self.pushes = 0

    def _give_up(self, why: str) -> None:
        if self.unavailable is None:
            self.unavailable = why
            self.log.info("jupyterlab-quota: no quota status in this server: %s", why)

    async def _call(self, method: str, path: str, body: Optional[dict] = None) -> tuple[int, Any]:
        req = HTTPRequest(
            f"{self.api}{path}", method=method, headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
            body=None if body is None else json.dumps(body), request_timeout=20,
        )
        try:
            r = await AsyncHTTPClient().fetch(req, raise_error=False)
        except (OSError, HTTPClientError) as e:
            raise ConnectionError(f"the hub did not answer: {e}") from None
        try:
            data = json.loads(r.body or b"null")
        except ValueError:
            data = None
        return r.code, data

    async def _read(self) -> dict:
        q = f"?server={quote(self.server, safe='')}"
        if self._cursor is not None:
            q += f"&events_after={self._cursor}"
        else:
            # The first read: the newest events there are (the browser tells apart those it showed).
            q += "&events_after=0"
        self.reads += 1
        code, data = await self._call("GET", f"/quota/me/status{q}")
        if code == 404:
            self._give_up(f"the hub at {self.api} has no quota routes (jupyterhub-quota is not configured there)")
        elif code == 403:
            self._give_up("this server's token lacks the hub scope custom:quota:self (restart the server once the hub runs jupyterhub-quota 0.2 or later)")
        if self.unavailable is not None:
            raise Unavailable(self.unavailable)
        if code != 200 or not isinstance(data, dict):
            raise ConnectionError(f"the hub answered {code}: {data}")
        self._events = (self._events + list(data.get("events") or []))[-EVENTS_KEPT:]
        self._cursor = max(int(data.get("last_event_id") or 0), self._cursor or 0)
        self._status = data
        self._read_at = self.clock()
        return data

    async def status(self, fresh: bool = False) -> dict:
        """The hub's status of this server, at most 30 s old (read now with `fresh`); one read at a
        time, shared by every caller waiting for it."""
        if self.unavailable is not None:
            raise Unavailable(self.unavailable)
        if not fresh and self._status is not None and self.clock() - self._read_at < FRESH_S:
            return self._status
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._read())
            self._reading.add_done_callback(lambda _f: setattr(self, "_reading", None))
        return await asyncio.shield(self._reading)

    def listen(self) -> asyncio.Queue:
        """A tab's queue of changes; the hub's stream is followed while any tab listens."""
        q: asyncio.Queue = asyncio.Queue()
        self.listeners.add(q)
        if self._following is None or self._following.done():
            self._following = asyncio.ensure_future(self._follow())
        return q

    def unlisten(self, q: asyncio.Queue) -> None:
        self.listeners.discard(q)

    def _changed(self) -> None:
        """The hub pushed a new value: the next status read goes to the hub, every tab is told."""
        self.pushes += 1
        self._read_at = float("-inf")
        for q in list(self.listeners):
            q.put_nowait("changed")

    async def _follow(self) -> None:
        """Holds the hub's live stream open while tabs listen (reconnecting after a failure, at
        most every RETRY_S); each `quota` event is a change."""
        url = self.api[: -len("/api")] + "/quota/live" if self.api.endswith("/api") else self.api + "/../quota/live"
        buf = b""

        class _Done(Exception):
            pass

        def chunk(data: bytes) -> None:
            nonlocal buf
            if not self.listeners:
                raise _Done()
            buf += data
            while b"\n\n" in buf:
                message, buf = buf.split(b"\n\n", 1)
                if any(line.strip() == b"event: quota" for line in message.split(b"\n")):
                    self._changed()

        while self.listeners and self.unavailable is None:
            buf = b""
            req = HTTPRequest(url, headers={"Authorization": f"token {self.token}"}, streaming_callback=chunk,
                              connect_timeout=20, request_timeout=0)
            try:
                r = await AsyncHTTPClient().fetch(req, raise_error=False)
                if r.code in (403, 404):
                    self.log.info("jupyterlab-quota: the hub's live stream answered %s; the status is read every 30 s", r.code)
                    return
            except _Done:
                return
            except Exception as e:  # noqa: BLE001 - the stream is tried again; the 30 s reads go on
                self.log.debug("jupyterlab-quota: the hub's live stream stopped: %s", e)
            if self.listeners:
                await asyncio.sleep(self.retry_s)

    def events(self, after: int) -> list:
        return [e for e in self._events if int(e.get("id", 0)) > after]

    async def extend(self, minutes: int) -> tuple[int, Any]:
        """Extends this server's running session by `minutes` (the hub's answer), then reads the
        status again at once."""
        status = await self.status()
        session = status.get("session")
        if not session:
            return 409, {"error": "This server has no running quota session to extend"}
        code, data = await self._call("POST", f"/quota/sessions/{int(session['session_id'])}/extend", {"minutes": minutes})
        self._read_at = float("-inf")
        return code, data

    async def request_credit(self, body: dict) -> tuple[int, Any]:
        """Asks the hub for credit (`POST .../me/requests`: amount, budget, reason), as the
        server's user; the hub checks every field and answers why it refuses."""
        return await self._call("POST", "/quota/me/requests", body)
