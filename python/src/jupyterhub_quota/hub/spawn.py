"""The spawn gate (`pre_spawn_hook`), the session end at stop (`post_stop_hook`), and their
installation into the hub's configuration (with the form and, on KubeSpawner, `modify_pod_hook`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Optional

from tornado import web

from . import hooks
from .failures import keep_failure_count
from .forms import Refused, options_from_form, spawn_form
from . import names
from .groups import user_groups
from .options import OptionError, choose
from .timers import parse_time
from ..host.service import HUB, log, maybe_await
from ..host.contract import StorageError

try:  # JupyterHub 6: a spawn's handled rejection, with a reason for the hub's metrics
    from jupyterhub.spawner import SpawnException
except ImportError:  # JupyterHub 5 and older
    SpawnException = None

if TYPE_CHECKING:
    from .integration import Integration


def _callable(v: Any) -> Optional[Any]:
    return v if callable(v) else None


def install_spawn_hooks(c: Any, quota: "Integration", *, form: bool = False, values: Optional[dict] = None) -> dict[str, Any]:
    """Sets the gate, the stop hook, the form parser (and with `form`, the spawn form; on
    KubeSpawner, `modify_pod_hook`) on every spawner section of the configured class's ancestry.
    What was configured before is kept and runs first. Returns what was installed, by trait name."""
    cls = hooks.spawner_class(c)
    names = hooks.sections(cls)
    previous_pre = _callable(hooks.previous(c, names, "pre_spawn_hook"))
    previous_stop = _callable(hooks.previous(c, names, "post_stop_hook"))
    previous_parser = _callable(hooks.previous(c, names, "options_from_form"))

    async def pre_spawn_hook(spawner: Any) -> None:
        if previous_pre is not None:
            await maybe_await(previous_pre(spawner))
        await gate(quota, spawner)
        quota.touch(spawner.user.name)

    async def post_stop_hook(spawner: Any) -> None:
        try:
            await end(quota, spawner)
            quota.touch(spawner.user.name)
        finally:
            if previous_stop is not None:
                await maybe_await(previous_stop(spawner))

    installed: dict[str, Any] = {
        "pre_spawn_hook": pre_spawn_hook,
        "post_stop_hook": post_stop_hook,
        "options_from_form": options_from_form(previous_parser),
    }
    if form:
        installed["options_form"] = spawn_form(quota, values or {}, hooks.previous(c, names, "options_form"))
    for trait, value in installed.items():
        hooks.install(c, names, trait, value)

    kube = hooks.has_trait(cls, "modify_pod_hook")
    if kube:
        previous_modify = _callable(hooks.previous(c, kube, "modify_pod_hook"))

        async def modify_pod_hook(spawner: Any, pod: Any) -> Any:
            if previous_modify is not None:
                pod = await maybe_await(previous_modify(spawner, pod))
            return quota.placement.modify_pod(spawner, pod)

        hooks.install(c, kube, "modify_pod_hook", modify_pod_hook)
        installed["modify_pod_hook"] = modify_pod_hook
    return installed


def _refuse(spawner: Any, status: int, message: str, reason: str) -> web.HTTPError:
    """The exception that refuses a spawn without counting toward the hub's consecutive-failure
    limit: on JupyterHub 6 a `SpawnException` (a handled rejection, `status="failure"` with this
    `reason` in the hub's `jupyterhub_server_spawn_duration_seconds`); before 6 an `HTTPError`
    whose count is undone (`failures.py`). The hub's pages and REST API say `message` itself,
    never the exception's own text ("403 SpawnException(reason=quota-refused): ...", "HTTP 403:
    Forbidden (...)"); the spawn form (spawn.js) puts its plain words above it."""
    if SpawnException is not None:
        e = SpawnException(message, reason=reason, status_code=status)
    else:
        keep_failure_count(spawner)
        e = web.HTTPError(status, message)
    e.jupyterhub_message = message
    return e


#: The `reason` labels of the hub's spawn metrics for the gate's refusals (JupyterHub 6).
REASON_REFUSED = "quota-refused"
REASON_OPTION = "quota-invalid-option"
REASON_STORAGE = "quota-storage-error"


def _storage_failed(quota: "Integration", spawner: Any, e: Exception) -> None:
    """The quota database failed at the gate: refuse (503, never counted as the hub's failure), or
    with `onStorageError: allow` let the spawn go ahead unbilled (no session, no auto-stop)."""
    user, server = spawner.user.name, spawner.name or ""
    if quota.on_storage_error == "allow":
        log.warning(
            "quota: the quota database failed at the gate (%s); %s server %r starts UNBILLED (onStorageError: allow)",
            e, user, server,
        )
        quota.metrics.gate_storage_error("allowed")
        quota.unbilled.add((user, server))
        return
    log.error("quota: the quota database failed at the gate for %s server %r: %s", user, server, e)
    quota.metrics.gate_storage_error("refused")
    raise _refuse(
        spawner, 503,
        f"Quota check failed, the server was not started: the quota database failed ({e}). Try again in a few minutes.",
        REASON_STORAGE,
    ) from None


async def gate(quota: "Integration", spawner: Any) -> None:
    """Check-start before the spawner starts anything: 403 with the engine's message when the user
    cannot afford it, 400 naming the option for bad options; both record nothing and do not count
    toward the hub's consecutive-failure limit. An allowed spawn gets its accelerator applied."""
    user, server = spawner.user.name, spawner.name or ""
    options = spawner.user_options or {}
    try:
        choice = await choose(spawner, options, quota.default_runtime, quota.placement.accels)
    except OptionError as e:
        log.info("quota: %s server %r refused (400): %s", user, server, e)
        quota.metrics.option_refused()
        raise _refuse(spawner, 400, str(e), REASON_OPTION) from None
    body: dict = {
        "username": user,
        "runtime_minutes": choice.runtime,
        "server_name": server,
        # The hub's groups now: they decide a restricted accelerator and a first grant (a name the
        # engine cannot take is skipped with a warning: it can be in no rule).
        "groups": await names.usable_groups(quota.service, user_groups(spawner.user)),
    }
    if choice.accelerator is not None:
        body["resource_type"] = choice.accelerator
    if choice.budget is not None:
        body["budget"] = choice.budget
    tic = time.perf_counter()
    quota.unbilled.discard((user, server))
    try:
        r = await quota.service.request("POST", "/api/quota/sessions", body, HUB)
    except StorageError as e:
        _storage_failed(quota, spawner, e)
        await quota.placement.apply(spawner, choice.accelerator if choice.accelerator not in (None, "cpu") else None)
        return
    except Exception as e:
        log.exception("quota: the spawn gate failed for %s server %r", user, server)
        raise _refuse(spawner, 503, f"Quota check failed, the server was not started: {e}", REASON_STORAGE) from None
    took_ms = (time.perf_counter() - tic) * 1000
    if r.status == 201:
        s = r.json()
        log.info(
            "quota: %s server %r allowed: session %s, %s x %s min, estimated %s, balance %s%s%s (gate %.1f ms)",
            user, server, s["session_id"], s["rate"], s["runtime_minutes"], s["estimated_cost"], s["balance"],
            f" of budget {s['budget']}" if s.get("budget") else "",
            f", profile {choice.profile}" if choice.profile else "", took_ms,
        )
        quota.ready.discard((user, server))
        if quota.timers is not None:
            # The engine's own end of the session (the start plus the minutes it recorded).
            quota.timers.arm(user, server, parse_time(s["ends_at"]))
        # The key the engine recorded (and billed) is the one placed: one decision.
        resource = s.get("resource_type") or "cpu"
        await quota.placement.apply(spawner, None if resource == "cpu" else resource)
        return
    answer = r.json() if r.body.startswith("{") else {}
    message = answer.get("error", r.body)
    if r.status == 400 and message.startswith("resource_type:"):
        message = "gpu_selection:" + message[len("resource_type:"):]
    if r.status in (400, 403):
        log.info("quota: %s server %r refused (%s): %s", user, server, r.status, message)
        if r.status == 403:
            # The spawn form, rendered again under the hub's error, keeps the user's choices and
            # says when this start would pass.
            quota.refusals[(user, server)] = Refused(
                time.monotonic(), message, answer.get("next_refresh"), "next_refresh" in answer,
                dict(getattr(spawner, "_quota_form", None) or {}))
        raise _refuse(spawner, r.status, message, REASON_REFUSED if r.status == 403 else REASON_OPTION)
    log.error("quota: the spawn gate answered %s for %s: %s", r.status, user, r.body)
    raise _refuse(spawner, 503, f"Quota check failed, the server was not started: {message}", REASON_STORAGE)


async def end(quota: "Integration", spawner: Any) -> None:
    """Ends the session of (user, server): `completed` (billed) if the server became ready, else
    `failed`. No active session (a refused spawn, quota off at start, already ended) is a no-op."""
    user, server = spawner.user.name, spawner.name or ""
    if quota.timers is not None:
        quota.timers.cancel(user, server)
    if (user, server) in quota.unbilled:
        # Started while the quota database failed (onStorageError: allow): nothing to bill or end.
        quota.unbilled.discard((user, server))
        quota.ready.discard((user, server))
        log.warning("quota: %s server %r stopped; it started unbilled (the quota database had failed)", user, server)
        return
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
