"""The routes the labextension calls, under the server's base URL: ``quota/status``,
``quota/extend``, ``quota/requests``, ``quota/events`` and ``quota/live`` (a server-sent event
stream: ``changed`` whenever the hub pushes a change of the user's balance or server). Jupyter Server's own login and XSRF checks apply (these are
its ``APIHandler``); the answers carry the hub's data, never the server's token."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.iostream import StreamClosedError

from .hub import HubQuota, Unavailable


class _Base(APIHandler):
    def initialize(self, quota: HubQuota) -> None:
        self.quota = quota

    def unavailable(self, why: str) -> None:
        self.finish(json.dumps({"available": False, "reason": why}))

    async def relay(self, call: Any) -> None:
        """Answers with the hub's answer to `call` (status and body as they are): "no quota here"
        when there is none, 502 when the hub cannot be reached."""
        try:
            code, data = await call
        except Unavailable as e:
            return self.unavailable(str(e))
        except ConnectionError as e:
            raise web.HTTPError(502, str(e)) from None
        self.set_status(code)
        self.finish(json.dumps(data))


class StatusHandler(_Base):
    @web.authenticated
    async def get(self) -> None:
        try:
            status = await self.quota.status()
        except Unavailable as e:
            return self.unavailable(str(e))
        except ConnectionError as e:
            raise web.HTTPError(502, str(e)) from None
        self.finish(json.dumps({"available": True, **{k: v for k, v in status.items() if k != "events"}}))


class EventsHandler(_Base):
    @web.authenticated
    async def get(self) -> None:
        try:
            after = int(self.get_query_argument("after", "0"))
        except ValueError:
            raise web.HTTPError(400, "after: must be an event id (a whole number)") from None
        try:
            await self.quota.status()
        except Unavailable as e:
            return self.unavailable(str(e))
        except ConnectionError as e:
            raise web.HTTPError(502, str(e)) from None
        self.finish(json.dumps({"available": True, "events": self.quota.events(after)}))


class ExtendHandler(_Base):
    @web.authenticated
    async def post(self) -> None:
        try:
            body = json.loads(self.request.body or b"{}")
            minutes = body["minutes"]
            if not isinstance(minutes, int) or isinstance(minutes, bool):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise web.HTTPError(400, "minutes: must be a whole number of minutes") from None
        await self.relay(self.quota.extend(minutes))


class RequestHandler(_Base):
    """``quota/requests``: a credit request of this server's user, passed to the hub as asked
    (amount, budget, reason); the hub's answer (201, or the 400/409 naming the field) as it is."""

    @web.authenticated
    async def post(self) -> None:
        try:
            body = json.loads(self.request.body or b"{}")
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:
            raise web.HTTPError(400, "body: must be a JSON object {amount, budget?, reason}") from None
        asked = {k: body[k] for k in ("amount", "budget", "reason") if k in body}
        await self.relay(self.quota.request_credit(asked))


#: Seconds between keep-alive comments on a quiet stream.
KEEPALIVE_S = 15.0


class LiveHandler(_Base):
    """``quota/live``: ``event: changed`` each time the hub's live stream pushes (the tab then reads
    ``quota/status``); 204 where there is no quota (EventSource then stops asking)."""

    @web.authenticated
    async def get(self) -> None:
        if self.quota.unavailable is not None:
            self.set_status(204)
            return self.finish()
        q = self.quota.listen()
        self.set_header("Content-Type", "text/event-stream; charset=UTF-8")
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Accel-Buffering", "no")
        try:
            self.write(": listening\n\n")
            await self.flush()
            while True:
                try:
                    await asyncio.wait_for(q.get(), KEEPALIVE_S)
                    self.write("event: changed\ndata: {}\n\n")
                except asyncio.TimeoutError:
                    self.write(": keep-alive\n\n")
                await self.flush()
        except StreamClosedError:
            pass
        finally:
            self.quota.unlisten(q)


def setup(serverapp: Any) -> None:
    quota = HubQuota(logger=serverapp.log)
    web_app = serverapp.web_app
    base = web_app.settings["base_url"]
    args = {"quota": quota}
    web_app.add_handlers(".*$", [
        (url_path_join(base, "quota/status"), StatusHandler, args),
        (url_path_join(base, "quota/events"), EventsHandler, args),
        (url_path_join(base, "quota/extend"), ExtendHandler, args),
        (url_path_join(base, "quota/requests"), RequestHandler, args),
        (url_path_join(base, "quota/live"), LiveHandler, args),
    ])
    web_app.settings["jupyterlab_quota"] = quota
