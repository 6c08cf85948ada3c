"""The quota admin page (`/hub/admin/users`) and every user's own quota page (`/hub/quota`)
inside the hub (in the hub's own page template, with
the hub's login and XSRF rules) and the pages' assets (`/hub/quota-static/...`: the scripts, and
the engine component the admin page and the spawn form compute with, js/gen, carried in this
package's `static/`), so the cost a user sees and the refresh an admin previews are what the hub
then does. The spawn form itself is forms.py."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import ChoiceLoader, FileSystemLoader
from jupyterhub import orm
from jupyterhub.handlers.base import BaseHandler
from tornado import web

from .forms import STATIC_PREFIX, json_for_script
from .callers import is_quota_staff, managed_groups
from .integration import installed

if TYPE_CHECKING:
    from .integration import Integration

STATIC = Path(__file__).resolve().parent / "static"


#: The hub-side templates (page.html: the navigation links; quota-page.html: the admin page and a
#: user's own page).
TEMPLATES = Path(__file__).resolve().parent / "templates"


def _main(name: str = "admin-main.html") -> str:
    path = STATIC / "pages" / name
    if not path.is_file():
        raise web.HTTPError(500, f"the admin page's assets are missing from this package ({path}); rebuild the wheel")
    return path.read_text(encoding="utf-8")


def server_states(users: Any, only: Any = None) -> dict:
    """Each hub user's servers as the hub knows them, for the Server column: {name: {running,
    pending}} for users with a server running or starting/stopping (the rest are stopped); only the
    users named in `only` when given (course staff's members). Only users the hub holds in memory
    can have one."""
    out = {}
    keep = None if only is None else set(only)
    for user in list(users.values()):
        if keep is not None and user.name not in keep:
            continue
        running = pending = 0
        for spawner in list(user.spawners.values()):
            if spawner.pending:
                pending += 1
            elif spawner.ready:
                running += 1
        if running or pending:
            out[user.name] = {"running": running, "pending": pending}
    return out


class AdminPageHandler(BaseHandler):
    """`/hub/admin/users`: hub admins (or holders of `custom:quota:admin`) only, inside the hub's
    own page template."""

    _overlays: dict = {}

    def initialize(self, key: str) -> None:
        self.quota = installed(key)

    def get_template(self, name: str, sync: bool = False):
        """The hub's templates, then this package's (the hub's page.html, or an operator's, wins;
        quota-page.html is found here even if `template_paths` was replaced after configure())."""
        key = "jinja2_env_sync" if sync else "jinja2_env"
        env = self.settings[key]
        overlay = self._overlays.get(id(env))
        if overlay is None:
            overlay = self._overlays[id(env)] = env.overlay(loader=ChoiceLoader([env.loader, FileSystemLoader(str(TEMPLATES))]))
        return overlay.get_template(name)

    @web.authenticated
    async def get(self) -> None:
        user = self.current_user
        if not is_quota_staff(self.expanded_scopes):
            raise web.HTTPError(403, "The quota admin page is for quota admins (custom:quota:admin) and course staff "
                                     "(custom:quota:manage!group=<group>)")
        base = self.hub.base_url.rstrip("/")
        statics = f"{self.hub.base_url}{STATIC_PREFIX}"
        # Hub users without a quota record yet are listed too (balance 0), by name only.
        names = [n for (n,) in self.db.query(orm.User.name).order_by(orm.User.name)]
        manages = [] if "custom:quota:admin" in self.expanded_scopes else managed_groups(self.expanded_scopes)
        if manages:
            # Course staff: the hub's members of their groups, nobody else.
            members = set()
            for g in self.db.query(orm.Group).filter(orm.Group.name.in_(manages)):
                members.update(u.name for u in g.users)
            names = [n for n in names if n in members]
        config = {"base": base, "auth": "hub", "xsrf": self.xsrf_token.decode() if isinstance(self.xsrf_token, bytes) else self.xsrf_token,
                  "static": statics, "hubUsers": names, "hubServers": server_states(self.users, names if manages else None),
                  "manages": manages}
        page = await self.render_template(
            "quota-page.html", quota_title="Manage credits", quota_script="admin.js", quota_static=statics,
            quota_config=json_for_script(config), quota_main=_main(),
        )
        self.set_header("Cache-Control", "no-store")
        self.finish(page)


class UserPageHandler(AdminPageHandler):
    """`/hub/quota`: any signed-in user's own quota page (their balance, running servers, next
    top-up, usage chart and ledger), inside the hub's page template; the data comes from the quota
    routes with the hub's login, so a user sees only their own."""

    @web.authenticated
    async def get(self) -> None:
        base = self.hub.base_url.rstrip("/")
        statics = f"{self.hub.base_url}{STATIC_PREFIX}"
        xsrf = self.xsrf_token.decode() if isinstance(self.xsrf_token, bytes) else self.xsrf_token
        config = {"base": base, "auth": "hub", "xsrf": xsrf, "static": statics}
        page = await self.render_template(
            "quota-page.html", quota_title="Your credits", quota_script="user.js", quota_static=statics,
            quota_config=json_for_script(config), quota_main=_main("user-main.html"),
        )
        self.set_header("Cache-Control", "no-store")
        self.finish(page)


class StaticHandler(web.StaticFileHandler):
    """The pages' scripts, styles and the engine's modules (no data: no login needed)."""

    def set_extra_headers(self, path: str) -> None:
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Content-Type-Options", "nosniff")

    def get_content_type(self) -> str:
        if self.absolute_path.endswith(".wasm"):
            return "application/wasm"
        if self.absolute_path.endswith(".js"):
            return "text/javascript; charset=utf-8"
        return super().get_content_type()


def page_handlers(quota: "Integration", key: str) -> list:
    return [
        (r"/admin/users", AdminPageHandler, {"key": key}),
        (r"/quota", UserPageHandler, {"key": key}),
        (rf"/{STATIC_PREFIX}(.*)", StaticHandler, {"path": str(STATIC)}),
    ]
