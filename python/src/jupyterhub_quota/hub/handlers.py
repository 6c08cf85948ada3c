"""The quota REST routes inside the hub (`/hub/api/quota/...`, `/hub/api/accelerators`,
`/hub/admin/api/quota/...`), answered by the engine's `handle-request`, byte for byte as quota-hub
answers them. Authentication and XSRF are the hub's own: these handlers subclass its API handler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jupyterhub.apihandlers.base import APIHandler
from tornado import web

from .callers import caller_for, managed_groups, may_self_serve
from .integration import installed, register
from .reach import reach_now
from ..host.service import log
from .timers import parse_time

if TYPE_CHECKING:
    from .integration import Integration

#: The refresh route and its alias: a refresh reads the hub's groups first.
REFRESH_PATHS = ("/admin/api/quota/refresh",)

#: An extension: the auto-stop timer of the session's server moves with it.
EXTEND_ROUTE = "/api/quota/sessions/{id}/extend"

#: An admin's change of one user.
USER_ROUTE = "/admin/api/quota/users/{name}"

#: The API's OpenAPI document: public, as the engine serves it (no token needed to read it).
OPENAPI_PATH = "/api/quota/openapi.json"

class QuotaAPIHandler(APIHandler):
    def initialize(self, key: str) -> None:
        self.quota = installed(key)
        #: The engine's route template of this request's path, once the engine has seen it.
        self.route = "unmatched"

    def on_finish(self) -> None:
        # Every answer, the hub's own refusals included, as quota-hub counts its requests.
        self.quota.metrics.http_request(self.route, self.request.method, self.get_status(), self.request.request_time())
        super().on_finish()

    async def _answer(self, method: str) -> None:
        user = self.current_user
        base = self.hub.base_url  # e.g. /hub/
        path = "/" + self.request.path[len(base):]
        if user is None and path != OPENAPI_PATH:
            # The hub's own answer and shape for a missing or bad token.
            raise web.HTTPError(403, "Missing or invalid credentials.")
        if user is not None and path != OPENAPI_PATH and not may_self_serve(user, self.expanded_scopes):
            # A token narrowed below its owner's own quota (a server started before this scope
            # existed, or one made with chosen scopes): the same refusal as any missing scope.
            raise web.HTTPError(403, "This token lacks the scope custom:quota:self (its owner's own quota)")
        caller = None if user is None else caller_for(user, self.expanded_scopes)
        body = self.request.body.decode("utf-8", "replace") if self.request.body else ""
        may_refresh = caller is not None and (caller.admin or "quota:refresh" in caller.scopes)
        managed = [] if caller is None or caller.admin else managed_groups(self.expanded_scopes)
        if managed:
            # Course staff reach their groups' members as the hub has them at this moment.
            try:
                await reach_now(self.quota, managed)
            except Exception:
                log.exception("quota: reading the hub's groups for course staff failed")
                raise web.HTTPError(503, "The hub's groups could not be read; nothing was changed") from None
        if method == "POST" and path.rstrip("/") in REFRESH_PATHS and may_refresh:
            # A rule targeting a group changes exactly the hub's members of this moment.
            try:
                await self.quota.snapshot_groups()
            except Exception:
                log.exception("quota: reading the hub's groups before a refresh failed")
                raise web.HTTPError(503, "The hub's groups could not be read; nothing was changed") from None
        try:
            r, self.route = await self.quota.service.answer(method, path, body, caller, query=self.request.query)
        except Exception as e:
            log.exception("quota: %s %s failed", method, path)
            busy = getattr(e, "busy", False)
            raise web.HTTPError(503 if busy else 500, "The quota engine failed; nothing was changed") from None
        if r.status == 200 and self.route == EXTEND_ROUTE and self.quota.timers is not None:
            # The auto-stop timer moves to the extended end at once.
            s = r.json()
            self.quota.timers.extend(s["username"], s["server_name"], parse_time(s["ends_at"]))
        if method != "GET" and r.status < 300:
            # Open hub pages show the change (live.py): one user's when the route names them.
            if self.route == EXTEND_ROUTE:
                self.quota.touch(r.json()["username"])
            elif self.route == USER_ROUTE and self.quota.live is not None:
                self.quota.live.tell(r.json())
            else:
                self.quota.touch()
        self.set_status(r.status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        # The engine's bytes and a newline, as quota-hub answers (curl output ends its line).
        self.finish(r.body + "\n")

    async def get(self, *_args: Any) -> None:
        await self._answer("GET")

    async def post(self, *_args: Any) -> None:
        await self._answer("POST")

    async def put(self, *_args: Any) -> None:
        await self._answer("PUT")

    async def delete(self, *_args: Any) -> None:
        await self._answer("DELETE")


def handlers(quota: "Integration") -> tuple[str, list]:
    """The key the handlers find `quota` by, and the `c.JupyterHub.extra_handlers` entries of the
    routes (patterns below the hub's prefix)."""
    key = register(quota)
    args = {"key": key}
    return key, [
        (r"/api/quota/.*", QuotaAPIHandler, args),
        (r"/api/accelerators", QuotaAPIHandler, args),
        (r"/admin/api/quota(?:/.*)?", QuotaAPIHandler, args),
    ]
