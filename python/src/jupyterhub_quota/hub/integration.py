"""`Integration`: what `configure()` installs in a hub (the engine's service, timers, scheduler,
placement, metrics), kept on the hub so that hooks, handlers and tests reach it; and the
installed ones by key, for the handlers (traitlets deep-copies handler arguments)."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Optional

from . import hooks
from .callers import self_scope_missing, unfiltered_manage_roles, unfiltered_refusal
from .deliveries import Deliveries
from .metrics import NoMetrics
from .options import check_profiles
from .placement import Placement
from .scheduler import Scheduler
from ..host.engine_types import HostSettings
from ..host.service import QuotaService, log
from .timers import Timers


class Integration:
    """What `configure()` installs; kept on the hub so tests and hooks reach it."""

    def __init__(
        self,
        service: QuotaService,
        *,
        scheduler: bool,
        auto_stop: bool,
        placement: Optional[Placement] = None,
        metrics: Any = None,
        default_runtime: Optional[int] = None,
        snapshot_groups: Optional[Callable[["Integration"], Awaitable[None]]] = None,
    ):
        self.service = service
        self._snapshot_groups = snapshot_groups
        #: configure()'s deprecated `default_runtime_minutes`, which overrides the values file's.
        self._default_runtime = default_runtime
        #: (username, server name) of servers started unbilled while the database failed.
        self.unbilled: set[tuple[str, str]] = set()
        #: (username, server name) -> the last refusal (forms.Refused: when, the message, the
        #: engine's `next_refresh`, the form as posted), for the spawn form rendered again under it.
        self.refusals: dict[tuple[str, str], Any] = {}
        self.placement = placement or Placement({})
        self.metrics = metrics or NoMetrics()
        #: The hooks configure() set, by trait name (checked at start).
        self.installed: dict[str, Any] = {}
        self.timers = Timers(service) if auto_stop else None
        self.scheduler = Scheduler(service, before_run=self.snapshot_groups) if scheduler else None
        #: Webhook deliveries (every hub runs them; the engine lets one process send at a time).
        self.deliveries: Optional[Deliveries] = None
        #: (username, server name) of servers that became ready (JupyterHub's server-action event).
        self.ready: set[tuple[str, str]] = set()
        self.listening = False
        #: The live balance streams of the hub's navigation bar (live.py; set by configure()).
        self.live: Any = None
        #: The scheduled backups' task (backup_schedule.py; set by configure() when asked).
        self.backups: Any = None
        #: The JupyterHub application (its database holds the groups), set at start.
        self.app: Any = None

    # Start-up

    async def start(self, app: Any) -> None:
        """Stale cleanup at once; the rest when the hub has started."""
        self.app = app
        self.refuse_unfiltered_manage(app, unfiltered_manage_roles(
            getattr(app, "load_roles", None), getattr(app, "extra_user_scopes", None)))
        self.check_config(app)
        try:
            for s in await self.service.run(lambda e: e.cleanup_stale()):
                log.warning(
                    "quota: closed stale session %s of %s (server %r, started %s, %s min, not billed)",
                    s["session_id"], s["username"], s["server_name"], s["start_time"], s["duration_minutes"],
                )
        except Exception:
            log.exception("quota: stale-session cleanup at start failed")
        started = getattr(app, "_start_future", None)
        if started is not None:
            await started
        db = getattr(app, "db", None)
        if db is not None:
            # Roles an authenticator manages are the hub's stored ones, not its configuration's.
            from jupyterhub import orm

            self.refuse_unfiltered_manage(app, unfiltered_manage_roles(db.query(orm.Role).all()))
        self.listen(app)
        for user in list(app.users.values()):
            for name, spawner in list(user.spawners.items()):
                if spawner.ready:
                    self.ready.add((user.name, name))
        if self.timers is not None:
            await self.timers.rearm(app)
        if self.scheduler is not None:
            await self.scheduler.start()
        try:
            self.deliveries = Deliveries(self.service, self.metrics)
            await self.deliveries.start()
        except Exception:
            log.exception("quota: starting the webhook deliveries failed")
        self.service.poke()  # the first read of the active sessions, for the metrics

    @property
    def settings(self) -> HostSettings:
        """What the engine's configuration says the hub acts on (runtime bounds and default, live
        streams per user, what the gate does when its database fails, ...): read from the engine
        at each use, so a values file loaded again applies."""
        return self.service.engine.summary.settings

    @property
    def default_runtime(self) -> int:
        """The runtime of a spawn that gives none."""
        return self._default_runtime if self._default_runtime is not None else self.settings.default_runtime_minutes

    @property
    def on_storage_error(self) -> str:
        """`custom.quota.onStorageError`: what the gate does when the quota database fails."""
        return self.settings.on_storage_error

    def touch(self, name: Optional[str] = None) -> None:
        """`name`'s quota may have changed (None: anyone's): their open hub pages are told."""
        if self.live is not None:
            self.live.touch(name)

    async def snapshot_groups(self) -> None:
        """The hub's groups into the engine (before each refresh run)."""
        if self._snapshot_groups is not None:
            await self._snapshot_groups(self)

    @staticmethod
    def refuse_unfiltered_manage(app: Any, roles: list) -> None:
        """A hub whose roles hand out custom:quota:manage without a group filter stops, with a
        CRITICAL line naming them and the fix."""
        if roles:
            log.critical(unfiltered_refusal(roles))
            app.exit(1)

    def check_config(self, app: Any) -> None:
        """Says at start what the final configuration undid or cannot price: a hook set after
        configure() (the gate would not run), a profile that names no accelerator."""
        missing = self_scope_missing(app)
        if missing:
            log.critical(
                "quota: the hub's %s role%s lack%s custom:quota:self (set c.JupyterHub.load_roles before calling "
                "configure(), or add 'custom:quota:self!user' to them): users' own quota routes, the live balance and "
                "JupyterLab's status bar are refused", " and ".join(missing), "s" if len(missing) > 1 else "",
                "" if len(missing) > 1 else "s",
            )
        cls = getattr(app, "spawner_class", None)
        if not isinstance(cls, type):
            return
        for problem in hooks.check(app.config, cls, self.installed):
            log.critical("quota: %s", problem)
        profiles = hooks.previous(app.config, hooks.sections(cls), "profile_list")
        if isinstance(profiles, dict):
            profiles = [profiles[k] for k in sorted(profiles)]
        if isinstance(profiles, list):
            for problem in check_profiles([p for p in profiles if isinstance(p, dict)], self.placement.accels):
                log.error("quota: %s (such a spawn is refused)", problem)

    def listen(self, app: Any) -> None:
        if self.listening or getattr(app, "eventlog", None) is None:
            return

        # jupyter_events calls listeners with keywords (logger, schema_id, data); an exception here
        # would fail the spawn that emitted the event, so nothing may escape.
        async def on_server_action(*_args: Any, data: Any = None, **_kwargs: Any) -> None:
            try:
                if isinstance(data, dict) and data.get("action") == "start":
                    self.ready.add((data.get("username", ""), data.get("servername", "") or ""))
            except Exception:  # noqa: BLE001
                log.exception("quota: reading a server-action event")

        app.eventlog.add_listener(
            schema_id="https://schema.jupyter.org/jupyterhub/events/server-action", listener=on_server_action
        )
        self.listening = True


#: Installed integrations by key.
_installed: dict[str, Integration] = {}


def register(quota: Integration) -> str:
    """A key the handlers of `quota` find it by."""
    key = str(id(quota))
    _installed[key] = quota
    return key


def installed(key: str) -> Integration:
    return _installed[key]
