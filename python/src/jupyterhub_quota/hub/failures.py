"""A quota refusal is the user's answer, not a failed spawn, on JupyterHub before 6 too.

`c.Spawner.consecutive_failure_limit` (z2jh: `hub.consecutiveFailureLimit: 5`) stops the hub after
that many failed spawns in a row. JupyterHub 6 counts only errors (an HTTP error below 500 is a
handled rejection). JupyterHub 5 and older count every exception of a spawn, the gate's 403 and
400 included, so five refusals in a row would stop the hub.

JupyterHub 5 has no supported way to say "this exception is a rejection", so this leans on its
internals, pinned by `python/tests/test_failure_limit.py` on JupyterHub 5.5: the count lives in
the request handler's `settings["failure_count"]`, and `BaseHandler.spawn_single_user` adds its
counting callback to `spawner._spawn_future` before the spawn (and so the gate) runs. A refusal
adds a callback after it that puts the count back where it was, and sets the spawner's limit to 0
until then, so the counting callback schedules no exit. Callbacks of one future run in the order
they were added, one after another, so nothing else sees the count in between."""

from __future__ import annotations

from typing import Any

from ..host.service import log

try:
    from jupyterhub import version_info as _hub_version
except ImportError:  # no JupyterHub: nothing counts spawns
    _hub_version = (6,)

#: Whether this JupyterHub counts refusals toward the limit.
COUNTS_REFUSALS = tuple(_hub_version[:1]) < (6,)


def keep_failure_count(spawner: Any) -> None:
    """Called just before the gate refuses a spawn (403 or 400): on JupyterHub < 6, that refusal
    leaves the consecutive-failure count as it was and cannot stop the hub."""
    if not COUNTS_REFUSALS:
        return
    handler = getattr(spawner, "handler", None)
    settings = getattr(handler, "settings", None)
    future = getattr(spawner, "_spawn_future", None)
    if not isinstance(settings, dict) or future is None or future.done():
        # Not a spawn through the hub's handlers (a test, a service calling user.spawn): nothing counts it.
        log.debug("quota: no spawn future to keep the failure count of %s", getattr(spawner, "_log_name", spawner))
        return
    before = settings.get("failure_count", 0)
    limit = spawner.consecutive_failure_limit
    spawner.consecutive_failure_limit = 0

    def restore(_future: Any) -> None:
        spawner.consecutive_failure_limit = limit
        # Only undo the count that this refusal added.
        if settings.get("failure_count", 0) == before + 1:
            settings["failure_count"] = before

    future.add_done_callback(restore)
