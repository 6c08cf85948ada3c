"""The live balance in the hub's navigation bar: `/hub/quota/live`, a server-sent event stream of
the signed-in user's balance and their default server's end, pushed when they change.

An admin's change of one user is pushed from its own answer; a spawn, a stop or an extension reads
its owner's status whole; every other write route (a batch, a refresh run, a budget) wakes a pass
that reads the ledger's rows since the last one, and a pass every 30 s catches what changed
elsewhere (charges, the sweep's expiries, the CLI, another hub on the same database). The cost
follows the changes, not the number of connected users; only what differs from the last push is
pushed. A comment line every 15 s keeps proxies from
closing an idle stream; the page falls back to polling when the stream cannot be held (js/pages/live.js).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Optional

from jupyterhub.apihandlers.base import APIHandler
from tornado import web
from tornado.iostream import StreamClosedError

from .callers import may_self_serve
from ..host.engine import Caller
from .integration import installed
from ..host.service import SYSTEM, log

if TYPE_CHECKING:
    from ..host.service import QuotaService

#: Seconds between keep-alive comments on an idle stream.
KEEPALIVE_S = 15.0
#: Seconds between passes over every connected user (changes made outside this hub's routes).
SWEEP_S = 30.0


async def within(awaitable: Any, seconds: float) -> tuple[bool, Any]:
    """``(True, result)`` if ``awaitable`` finished within ``seconds``, else ``(False, None)``.
    Not ``asyncio.wait_for``: before Python 3.12 it returns the result instead of raising when the
    task is cancelled just as the awaitable finishes (the hub's shutdown sets the live balances'
    wake-up as it cancels every task), and a loop around it then never ends: JupyterHub waits for
    every task it cancelled, and the hub did not exit on SIGTERM."""
    inner = asyncio.ensure_future(awaitable)
    try:
        await asyncio.wait({inner}, timeout=seconds)
    finally:
        if not inner.done():
            inner.cancel()
    # Done even if after the timeout (a queue's item taken is never dropped).
    return (True, inner.result()) if inner.done() and not inner.cancelled() else (False, None)


def view(status: dict) -> dict:
    """What the navigation bar shows, from a `/api/quota/me/status` answer."""
    me = status["me"]
    s = status.get("session")
    return {
        "balance": me["balance"],
        "unlimited": me["unlimited"],
        # What can be spent now and what running servers hold (docs/glossary.md).
        "available": me.get("available"),
        "held": me.get("held", 0),
        "ends_at": s["ends_at"] if s else None,
        "seconds_left": status.get("seconds_left"),
        "server_name": s["server_name"] if s else "",
    }


def with_balance(v: dict, balance: int, unlimited: Any = None) -> dict:
    """`v` after a change of the balance alone: what is held stays, so what is available moves by
    as much (null stays null: unlimited)."""
    unlimited = v["unlimited"] if unlimited is None else unlimited
    held = v.get("held") or 0
    return {**v, "balance": balance, "unlimited": unlimited, "available": None if unlimited else balance - held}



class Live:
    """Connected users' streams and the task that feeds them.

    What a pass reads is what changed, not who is connected: the ledger's rows since the last pass
    (one engine call for a page of up to 1,000 changes: a batch, a refresh run, charges, expiries,
    changes by the CLI or another hub), and a whole read only for the users whose server started,
    stopped or was extended here. An admin's change of one user is pushed from its own answer."""

    def __init__(self, service: "QuotaService") -> None:
        self.service = service
        self.streams: dict[str, set[asyncio.Queue]] = {}
        #: The last view pushed to each connected user.
        self.shown: dict[str, dict] = {}
        #: Users to read whole at the next pass (their session changed).
        self.dirty: set[str] = set()
        #: The ledger's newest row id seen (None: not read yet).
        self.cursor: Optional[int] = None
        self.wake: Optional[asyncio.Event] = None
        self.task: Optional[asyncio.Task] = None
        self._starting: Optional[asyncio.Lock] = None
        #: Views pushed and engine calls made (tests and the benchmark read them).
        self.pushed = 0
        self.reads = 0

    @property
    def max_streams(self) -> int:
        """`custom.quota.liveStreamsPerUser`: open streams per user; the next is refused (429)."""
        return self.service.engine.summary.settings.live_streams_per_user

    def _ensure(self) -> None:
        if self.task is None or self.task.done():
            self.wake = asyncio.Event()
            self.task = asyncio.get_running_loop().create_task(self._run())

    def subscribe(self, name: str) -> asyncio.Queue:
        self._ensure()
        q: asyncio.Queue = asyncio.Queue()
        self.streams.setdefault(name, set()).add(q)
        return q

    def unsubscribe(self, name: str, q: asyncio.Queue) -> None:
        qs = self.streams.get(name)
        if qs is not None:
            qs.discard(q)
            if not qs:
                del self.streams[name]
                self.shown.pop(name, None)

    def touch(self, name: Optional[str] = None) -> None:
        """`name`'s server changed (read them whole), or (None) balances may have: the next pass
        reads the ledger. From the event loop only."""
        if not self.streams:
            return
        if name is not None:
            self.dirty.add(name.lower())
        if self.wake is not None:
            self.wake.set()

    def tell(self, answer: dict) -> None:
        """An admin's change of one user, from its answer (`username`, `balance`, and `unlimited`
        when it changed that): pushed at once, no read."""
        name = str(answer.get("username", "")).lower()
        if name in self.shown and isinstance(answer.get("balance"), int):
            old = self.shown[name]
            self._push(name, with_balance(old, answer["balance"], answer.get("unlimited")))

    def _push(self, name: str, v: dict) -> None:
        old = self.shown.get(name)
        if old is not None and all(old.get(k) == v.get(k) for k in ("balance", "unlimited", "available", "held", "ends_at")):
            return
        self.shown[name] = v
        for q in list(self.streams.get(name, ())):
            q.put_nowait(v)
            self.pushed += 1

    async def _call(self, path: str, query: str = "", caller: Any = SYSTEM) -> dict:
        self.reads += 1
        r = await self.service.request("GET", path, caller=caller, query=query)
        if r.status != 200:
            raise RuntimeError(f"GET {path}?{query}: {r.status} {r.body}")
        return r.json()

    async def read(self, name: str) -> dict:
        """`name`'s view, read whole."""
        return view(await self._call("/api/quota/me/status", caller=Caller(name)))

    async def newest_row(self) -> int:
        """The ledger's newest row id, without reading the ledger: whether a row follows an id
        answers in one indexed step (`limit=1`), so doubling then halving finds it in about
        2 log2(id) steps."""
        async def after(i: int) -> bool:
            return bool((await self._call("/admin/api/quota/transactions", f"after_id={i}&limit=1"))["transactions"])

        hi = 1
        while await after(hi):
            hi *= 2
        lo = 0  # the newest id is >= lo and <= hi
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if await after(mid - 1):
                lo = mid
            else:
                hi = mid - 1
        return lo

    async def start(self) -> None:
        """The ledger's cursor, set once before any user's first read (so no change falls between)."""
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self.cursor is None:
                self.cursor = await self.newest_row()

    async def _ledger(self) -> None:
        await self.start()
        assert self.cursor is not None
        while True:
            page = await self._call("/admin/api/quota/transactions", f"after_id={self.cursor}")
            for t in page["transactions"]:
                self.cursor = max(self.cursor, t["id"])
                name = t["username"]
                if t.get("budget") is None and name in self.shown:
                    self._push(name, with_balance(self.shown[name], t["balance_after"]))
            if page.get("next_after_id") is None:
                return

    async def _run(self) -> None:
        assert self.wake is not None
        while True:
            await within(self.wake.wait(), SWEEP_S)
            self.wake.clear()
            if not self.streams:
                continue
            names = [n for n in self.dirty if n in self.streams]
            self.dirty.clear()
            try:
                await self._ledger()
            except Exception:  # noqa: BLE001 - the next pass tries again
                log.exception("quota: reading the ledger for the live balances")
            for name in names:
                try:
                    self._push(name, await self.read(name))
                except Exception:  # noqa: BLE001 - one user's read failing stops nobody's stream
                    log.exception("quota: the live balance of %s", name)


class LiveHandler(APIHandler):
    """`GET /hub/quota/live`: the signed-in user's stream (the hub's login cookie with `_xsrf` in
    the query, as an EventSource sends it; or a token in the Authorization header)."""

    def initialize(self, key: str) -> None:
        self.quota = installed(key)

    async def get(self) -> None:
        user = self.current_user
        if user is None:
            raise web.HTTPError(403, "Missing or invalid credentials.")
        if not may_self_serve(user, self.expanded_scopes):
            raise web.HTTPError(403, "This token lacks the scope custom:quota:self (its owner's own quota)")
        live: Live = self.quota.live
        name = user.name.lower()
        if len(live.streams.get(name, ())) >= live.max_streams:
            raise web.HTTPError(429, f"At most {live.max_streams} live quota streams per user are open at once "
                                     "(custom.quota.liveStreamsPerUser); close a tab")
        q = live.subscribe(name)
        self.set_header("Content-Type", "text/event-stream; charset=UTF-8")
        self.set_header("Cache-Control", "no-store")
        # nginx (and ingress-nginx) would otherwise buffer the stream.
        self.set_header("X-Accel-Buffering", "no")
        try:
            await live.start()
            first = live.shown.get(name) or await live.read(name)
            live.shown[name] = first
            await self._send(first)
            while True:
                got, v = await within(q.get(), KEEPALIVE_S)
                if not got:
                    self.write(": keep-alive\n\n")
                    await self.flush()
                    continue
                await self._send(v)
        except StreamClosedError:
            pass
        finally:
            live.unsubscribe(name, q)

    async def _send(self, v: dict) -> None:
        self.write(f"event: quota\ndata: {json.dumps(v, separators=(',', ':'))}\n\n")
        await self.flush()


def live_handlers(key: str) -> list:
    return [(r"/quota/live", LiveHandler, {"key": key})]
