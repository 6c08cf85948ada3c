"""The spawn gate (`pre_spawn_hook`), the session end at stop (`post_stop_hook`) and the spawn
form's options (`options_from_form`)."""

from __future__ import annotations

import inspect
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from tornado import web

from .service import HUB, OptionError, accelerator_option, log, runtime_option

if TYPE_CHECKING:
    from .hub import QuotaHub

#: Spawn options this integration reads (the original spawn page's keys).
OPTION_KEYS = ("runtime_minutes", "gpu_selection")


def _previous(section: Any, name: str) -> Optional[Callable]:
    if name in section:
        v = section[name]
        return v if callable(v) else None
    return None


async def _maybe_await(v: Any) -> Any:
    return await v if inspect.isawaitable(v) else v


def _call_options_from_form(fn: Callable, form: dict, spawner: Any) -> Any:
    if "spawner" in inspect.signature(fn).parameters:
        return fn(form, spawner=spawner)
    return fn(form)


def install_spawn_hooks(c: Any, quota: "QuotaHub") -> None:
    previous_pre = _previous(c.Spawner, "pre_spawn_hook")
    previous_stop = _previous(c.Spawner, "post_stop_hook")
    previous_form = _previous(c.Spawner, "options_from_form")

    async def pre_spawn_hook(spawner: Any) -> None:
        if previous_pre is not None:
            await _maybe_await(previous_pre(spawner))
        await gate(quota, spawner)

    async def post_stop_hook(spawner: Any) -> None:
        try:
            await end(quota, spawner)
        finally:
            if previous_stop is not None:
                await _maybe_await(previous_stop(spawner))

    def options_from_form(form_data: dict, spawner: Any = None) -> dict:
        # The form posts lists of strings; the gate wants one value per option.
        if previous_form is not None:
            options = dict(_call_options_from_form(previous_form, form_data, spawner))
        else:
            options = dict(form_data)
        for key in OPTION_KEYS:
            v = options.get(key)
            if isinstance(v, list):
                options[key] = v[0] if len(v) == 1 else v
        return options

    c.Spawner.pre_spawn_hook = pre_spawn_hook
    c.Spawner.post_stop_hook = post_stop_hook
    c.Spawner.options_from_form = options_from_form


async def gate(quota: "QuotaHub", spawner: Any) -> None:
    """Check-start before the spawner starts anything: 403 with the engine's message when the user
    cannot afford it, 400 naming the option for bad options; both record nothing."""
    user, server = spawner.user.name, spawner.name or ""
    options = spawner.user_options or {}
    try:
        runtime = runtime_option(options.get("runtime_minutes"), quota.default_runtime)
        accelerator = accelerator_option(options.get("gpu_selection"))
    except OptionError as e:
        raise web.HTTPError(400, str(e)) from None
    body: dict = {"username": user, "runtime_minutes": runtime, "server_name": server}
    if accelerator is not None:
        body["resource_type"] = accelerator
    tic = time.perf_counter()
    try:
        r = await quota.service.request("POST", "/api/quota/sessions", body, HUB)
    except Exception as e:
        log.exception("quota: the spawn gate failed for %s", spawner._log_name if hasattr(spawner, "_log_name") else user)
        raise web.HTTPError(503, f"Quota check failed, the server was not started: {e}") from None
    took_ms = (time.perf_counter() - tic) * 1000
    if r.status == 201:
        s = r.json()
        log.info(
            "quota: %s server %r allowed: session %s, %s x %s min, estimated %s, balance %s (gate %.1f ms)",
            user, server, s["session_id"], s["rate"], s["runtime_minutes"], s["estimated_cost"], s["balance"], took_ms,
        )
        quota.ready.discard((user, server))
        if quota.timers is not None:
            quota.timers.arm(user, server, time.time() + runtime * 60)
        return
    message = r.json().get("error", r.body) if r.body.startswith("{") else r.body
    if r.status == 400 and message.startswith("resource_type:"):
        message = "gpu_selection:" + message[len("resource_type:"):]
    if r.status in (400, 403):
        log.info("quota: %s server %r refused (%s): %s", user, server, r.status, message)
        raise web.HTTPError(r.status, message)
    log.error("quota: the spawn gate answered %s for %s: %s", r.status, user, r.body)
    raise web.HTTPError(503, f"Quota check failed, the server was not started: {message}")


async def end(quota: "QuotaHub", spawner: Any) -> None:
    """Ends the session of (user, server): `completed` (billed) if the server became ready, else
    `failed`. No active session (a refused spawn, quota off at start, already ended) is a no-op."""
    user, server = spawner.user.name, spawner.name or ""
    if quota.timers is not None:
        quota.timers.cancel(user, server)
    # Without the hub's event log (a hub that has none) there is no "ready" signal: bill the session
    # rather than let every server run for free.
    became_ready = (user, server) in quota.ready or not quota.listening
    quota.ready.discard((user, server))
    outcome = "completed" if became_ready else "failed"
    body = {"username": user, "server_name": server, "outcome": outcome}
    try:
        r = await quota.service.request("POST", "/api/quota/sessions/end", body, HUB)
    except Exception:
        log.exception("quota: ending the session of %s server %r failed; it stays active", user, server)
        return
    if r.status == 200:
        s = r.json()
        log.info(
            "quota: %s server %r stopped (%s): session %s, %s min, charged %s, balance %s",
            user, server, outcome, s["session_id"], s["duration_minutes"], s["cost"], s["balance"],
        )
    elif r.status == 404:
        log.debug("quota: %s server %r stopped with no active session", user, server)
    else:
        log.error("quota: ending the session of %s server %r: %s %s", user, server, r.status, r.body)
