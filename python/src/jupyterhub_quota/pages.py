"""The quota pages inside the hub: the admin page (`/hub/admin/users`, the hub's login and XSRF
rules) with its assets (`/hub/quota-static/...`), and the spawn form (`Spawner.options_form`).
Both compute with the engine component in the page (js/gen, carried in this package's `static/`),
so the cost a user sees and the refresh an admin previews are what the hub then does."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyterhub import orm
from jupyterhub.handlers.base import BaseHandler
from tornado import web

from .engine import Caller
from .handlers import _registry, caller_for
from .service import log

if TYPE_CHECKING:
    from .hub import QuotaHub

STATIC = Path(__file__).resolve().parent / "static"
#: Below the hub's prefix.
STATIC_PREFIX = "quota-static/"


def _json_for_script(value: Any) -> str:
    """JSON inside a `<script type="application/json">`: `<` escaped, so it cannot end the element."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")


def _template() -> str:
    path = STATIC / "pages" / "admin.html"
    if not path.is_file():
        raise web.HTTPError(500, f"the admin page's assets are missing from this package ({path}); rebuild the wheel")
    return path.read_text(encoding="utf-8")


class AdminPageHandler(BaseHandler):
    """`/hub/admin/users`: hub admins (or holders of `custom:quota:admin`) only."""

    def initialize(self, key: str) -> None:
        self.quota = _registry[key]

    @web.authenticated
    async def get(self) -> None:
        user = self.current_user
        if not caller_for(user, self.expanded_scopes).admin:
            raise web.HTTPError(403, "The quota admin page is for hub admins")
        base = self.hub.base_url.rstrip("/")
        statics = f"{self.hub.base_url}{STATIC_PREFIX}"
        # Hub users without a quota record yet are listed too (balance 0), by name only.
        names = [n for (n,) in self.db.query(orm.User.name).order_by(orm.User.name)]
        config = {"base": base, "auth": "hub", "xsrf": self.xsrf_token.decode() if isinstance(self.xsrf_token, bytes) else self.xsrf_token,
                  "static": statics, "hubUsers": names}
        page = _template().replace("{{static}}", html.escape(statics, quote=True)).replace("{{config}}", _json_for_script(config))
        self.set_header("Content-Type", "text/html; charset=utf-8")
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


def page_handlers(quota: "QuotaHub", key: str) -> list:
    return [
        (r"/admin/users", AdminPageHandler, {"key": key}),
        (rf"/{STATIC_PREFIX}(.*)", StaticHandler, {"path": str(STATIC)}),
    ]


def _number(v: Any) -> str:
    """A rate as the engine prints it (2, 4.5), never `2.0`."""
    return str(int(v)) if isinstance(v, (int, float)) and float(v).is_integer() else str(v)


def spawn_form(quota: "QuotaHub", values: dict):
    """`Spawner.options_form`: the accelerators (names, descriptions, rates; CPU first), a runtime
    (1-480 minutes), the user's balance, and the estimated cost computed in the page as the user
    types. It posts `runtime_minutes` and `gpu_selection` (empty for CPU), the keys the gate reads."""
    custom = (values or {}).get("custom") or {}
    page_values = {"custom": {k: custom[k] for k in ("authMode", "quota", "accelerators") if k in custom}}

    async def options_form(spawner: Any) -> str:
        user = spawner.user.name
        try:
            me = (await quota.service.request("GET", "/api/quota/me", "", Caller(user))).json()
            rates = (await quota.service.request("GET", "/api/quota/rates", "", Caller(user))).json()
            accels = (await quota.service.request("GET", "/api/accelerators", "", Caller(user))).json()["accelerators"]
        except Exception:
            log.exception("quota: the spawn form could not read %s's balance", user)
            raise web.HTTPError(503, "The quota service is not answering; try again") from None
        e = lambda s: html.escape(str(s), quote=True)  # noqa: E731
        unit = "credits/min"
        options = [f'<label class="quota-choice"><input type="radio" name="gpu_selection" value="" checked> '
                   f'<strong>CPU</strong> <span>CPU only</span> <span class="quota-rate">{e(_number(rates["rates"].get("cpu", 0)))} {unit}</span></label>']
        for k, a in accels.items():
            options.append(
                f'<label class="quota-choice"><input type="radio" name="gpu_selection" value="{e(k)}"> '
                f'<strong>{e(a.get("displayName") or k)}</strong> <span>{e(a.get("description", ""))}</span> '
                f'<span class="quota-rate">{e(_number(rates["rates"].get(k, a.get("quotaRate", 0))))} {unit}</span></label>'
            )
        balance = "unlimited" if me.get("unlimited") and rates.get("enabled") else str(me.get("balance", 0))
        config = {"static": f"{spawner.hub.base_url}{STATIC_PREFIX}", "values": page_values, "balance": me.get("balance", 0),
                  "unlimited": bool(me.get("unlimited")), "enabled": bool(rates.get("enabled"))}
        return f"""
<div id="quota-spawn">
<script type="application/json" id="quota-spawn-config">{_json_for_script(config)}</script>
<fieldset>
  <legend>Accelerator</legend>
  {"".join(options)}
</fieldset>
<p><label for="quota-runtime">Runtime (minutes, 1-480)</label>
  <input id="quota-runtime" name="runtime_minutes" type="number" min="1" max="480" step="1" value="{quota.default_runtime}" required></p>
<p>Your balance: <strong id="quota-balance">{e(balance)}</strong></p>
<p>Estimated cost: <output id="quota-cost" for="quota-runtime" aria-live="polite">computing...</output></p>
<p id="quota-cost-note" role="status"></p>
<script type="module" src="{e(config["static"])}pages/spawn.js"></script>
</div>"""

    return options_form
