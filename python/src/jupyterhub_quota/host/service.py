"""The engine as the hub uses it: engines on worker threads, so engine calls never run on the
hub's event loop."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

from .engine import Caller, QuotaEngine, Response

#: A child of the hub's own logger, so its lines appear in the hub log.
log = logging.getLogger("JupyterHub.quota")

#: The hub acts on the quota routes as this caller (scope `quota:sessions`).
HUB = Caller("jupyterhub", scopes=("quota:sessions",))
#: Start-up and scheduled work run as an admin caller of this name.
SYSTEM = Caller("jupyterhub", admin=True)


async def maybe_await(v: Any) -> Any:
    """A hook's result, awaited if it is awaitable (hub hooks may be sync or async)."""
    return await v if inspect.isawaitable(v) else v


class QuotaService:
    """:class:`QuotaEngine` calls on worker threads, never on the hub's event loop.

    ``workers`` threads each open their own engine, so each has its own database connection: a
    pool of connections for PostgreSQL, where calls of several threads run at once (each waits on
    the network, not the GIL). SQLite has one writer at a time, so one worker is enough there.
    """

    def __init__(
        self,
        open_engine: Callable[[], QuotaEngine],
        workers: int = 1,
        after_call: Optional[Callable[[QuotaEngine], None]] = None,
    ):
        if workers < 1:
            raise ValueError(f"workers: must be at least 1, got {workers}")
        self._open = open_engine
        #: Runs on the worker after each call (the metrics' active-session read).
        self.after_call = after_call
        self._local = threading.local()
        self._opened: list[QuotaEngine] = []
        self._lock = threading.Lock()
        self.workers = workers
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="quota-engine")
        # The first engine is opened now, so a bad database or values file fails at start-up.
        self.engine: QuotaEngine = self.executor.submit(self._engine).result()

    @property
    def contract(self) -> Any:
        """The engine's hosting contract for this database (its waits, its sweep interval, its page
        sizes): every value a host would otherwise write down again."""
        return self.engine.contract

    def _engine(self) -> QuotaEngine:
        """This worker thread's engine, opened on first use; only this thread ever touches it."""
        engine = getattr(self._local, "engine", None)
        if engine is None:
            engine = self._open()
            self._local.engine = engine
            with self._lock:
                self._opened.append(engine)
        return engine

    def _on_worker(self, fn: Callable[[QuotaEngine], Any]) -> Any:
        engine = self._engine()
        try:
            return fn(engine)
        finally:
            if self.after_call is not None:
                self.after_call(engine)

    def poke(self) -> None:
        """Runs `after_call` on a worker soon, without waiting for it."""
        self.executor.submit(self._on_worker, lambda _e: None)

    async def run(self, fn: Callable[[QuotaEngine], Any]) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self._on_worker, fn)

    def run_sync(self, fn: Callable[[QuotaEngine], Any]) -> Any:
        return self.executor.submit(self._on_worker, fn).result()

    async def run_steps(self, step: Callable[[QuotaEngine], Any]) -> Any:
        """Long work a transaction at a time: `step` runs on a worker until it answers something
        other than None, each time as its own call, so the calls made meanwhile (a spawn's gate)
        run between the steps instead of after the whole of it."""
        while (out := await self.run(step)) is None:
            pass
        return out

    @property
    def conflicts_retried(self) -> int:
        """Calls run again after a conflict, over every worker's engine."""
        with self._lock:
            return sum(e.conflicts_retried for e in self._opened)

    async def request(
        self, method: str, path: str, body: Any = None, caller: Optional[Caller] = HUB, query: str = ""
    ) -> Response:
        text = body if isinstance(body, str) else ("" if body is None else json.dumps(body, separators=(",", ":")))
        now = int(time.time())
        return await self.run_steps(lambda e: e.handle_request_step(method, path, query, text, caller, now))

    async def answer(self, method: str, path: str, body: str, caller: Optional[Caller], query: str = "") -> tuple[Response, str]:
        """`request`, and the route template the engine gives the path (for the HTTP metrics;
        `unmatched` for a path no route answers), in one trip to a worker."""
        now = int(time.time())

        def step(e: QuotaEngine) -> Optional[tuple[Response, str]]:
            r = e.handle_request_step(method, path, query, body, caller, now)
            return None if r is None else (r, e.route_template(path) or "unmatched")

        return await self.run_steps(step)

    async def active_sessions(self) -> list[dict]:
        """Every active session, for re-arming auto-stop timers."""
        out: list[dict] = []
        after = 0
        while True:
            r = await self.request("GET", "/api/quota/sessions", caller=SYSTEM, query=f"status=active&after_id={after}")
            if r.status != 200:
                raise RuntimeError(f"listing active sessions: {r.status} {r.body}")
            # No `limit`: the engine's largest page; `next_after_id` is null on the last one.
            body = r.json()
            out.extend(body["sessions"])
            if body.get("next_after_id") is None:
                return out
            after = body["next_after_id"]
