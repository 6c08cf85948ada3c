"""`configure(c, ...)`: the engine inside JupyterHub (spawn gate, billing at stop, stale cleanup,
auto-stop, scheduled refresh rules, the quota REST routes and pages), wired into a hub's config."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable, Optional, Union

from ..host import durable
from ..host import values as values_mod
from .callers import CUSTOM_SCOPES, grant_admin_scope, grant_self_scope, unfiltered_manage_roles, unfiltered_refusal
from ..host.engine import ConfigError, QuotaEngine
from .groups import snapshot
from .handlers import handlers
from .live import Live, live_handlers
from .metrics import NoMetrics, process_metrics
from .pages import TEMPLATES, page_handlers
from .placement import Placement, accelerators
from .integration import Integration
from ..host.service import QuotaService, log
from .spawn import install_spawn_hooks
from . import backup_schedule as backup_schedule_mod
from . import durability as durability_mod
from . import upgrade


def _hub_app() -> Any:
    """The running JupyterHub application, or None (no hub, or a sub-command such as upgrade-db)."""
    try:
        from jupyterhub.app import JupyterHub
    except ImportError:
        return None
    if not JupyterHub.initialized():
        return None
    app = JupyterHub.instance()
    if getattr(app, "subapp", None) is not None or app.generate_config or getattr(app, "generate_certs", False):
        return None
    return app


def configure(
    c: Any,
    *,
    values_file: Union[str, Path, None] = None,
    values: Optional[dict] = None,
    db_url: str = "sqlite://jupyterhub_quota.sqlite",
    scheduler: bool = True,
    auto_stop: bool = True,
    default_runtime_minutes: Optional[int] = None,
    routes: bool = True,
    pages: bool = True,
    spawn_form: bool = True,
    durability: str = "full",
    component_path: Union[str, Path, None] = None,
    db_connections: Optional[int] = None,
    apply_accelerator: Optional[Callable] = None,
    metrics: bool = True,
    allow_ephemeral_db: bool = False,
    busy_wait_ms: Optional[int] = None,
    backup_dir: Union[str, Path, None] = None,
    backup_keep: int = upgrade.BACKUP_KEEP,
    backup_schedule: Optional[str] = None,
    litestream_socket: Optional[str] = None,
) -> Optional[Integration]:
    """Wires quota into a JupyterHub configuration (call it in ``jupyterhub_config.py``).

    - ``values_file``: the values file (YAML, the Helm chart's layout: ``custom.quota``,
      ``custom.accelerators``, ``custom.authMode``), the one quota-hub reads. Or ``values``: the
      same document as a dict, or its ``custom`` block alone (z2jh: ``get_config("custom")``).
      When it gives neither ``authMode`` nor ``custom.quota.enabled``, the mode comes from the
      hub's authenticator (GitHub -> on, Dummy/SharedPassword -> off, others: an error asking for
      one of the two keys).
    - ``db_url``: the quota database, as quota-hub's ``--db`` reads it: ``sqlite://quota.db``
      (relative to the hub's working directory) or ``sqlite:///var/lib/quota/quota.db`` (absolute),
      so ``quota-hub list-quota --db <the same URL>`` opens the same file.
    - ``scheduler``: run the values file's enabled refresh rules at their cron times (each run once,
      even across restarts and several hubs). False when CronJobs or quota-hub run them.
    - ``auto_stop``: stop a server when its requested runtime is over (timers re-armed at start).
    - ``default_runtime_minutes``: deprecated (kept for 0.2; removed in the next release): the
      values file's ``custom.quota.defaultRuntimeMinutes`` is the runtime of a spawn that does not
      give ``runtime_minutes``. Given, it overrides that key, with a WARNING at start.
    - ``routes``: serve ``/hub/api/quota/...``, ``/hub/api/accelerators`` and
      ``/hub/admin/api/quota/...`` inside the hub.
    - ``pages``: serve the admin page at ``/hub/admin/users`` (hub admins; the hub's login; inside
      the hub's page template, linked as "Quota" from the hub's navigation bar for quota admins)
      and its assets at ``/hub/quota-static/``.
    - ``spawn_form``: the quota spawn form (accelerators with their rates, a runtime, the user's
      balance and the estimated cost, live); when the spawner has a form of its own (KubeSpawner's
      ``profile_list``, or a configured ``options_form``) the quota fields are added below it.
      False keeps the spawner's form as it is (it should post ``runtime_minutes`` and
      ``gpu_selection``).
    - ``durability``: ``"full"`` (``synchronous=FULL``: a commit survives power loss) or ``"normal"``.
    - ``component_path``: another ``quota-engine.wasm`` than the one in this package.
    - ``db_connections``: engine worker threads, each with its own database connection (default: 4
      for PostgreSQL, 1 for SQLite, which has one writer at a time).
    - ``apply_accelerator``: ``(spawner, key, accelerator) -> None`` (may be async), called after
      the gate allowed a spawn on an accelerator, to place the server (``accelerator`` is the values
      file's entry). KubeSpawner needs none: the accelerator's ``nodeSelector`` becomes a required
      node affinity. Every spawner gets the accelerator's ``env``.
    - ``metrics``: count quota series in the hub's ``/hub/metrics``.
    - ``busy_wait_ms``: how long a call waits for a database locked by another process (or, on
      PostgreSQL, for a row lock) before it fails as busy; default the engine's hosting contract's
      (10,000). Keep it below the hub's ``slow_spawn_timeout`` (10 s) so that a spawn the gate
      cannot check is answered as refused rather than left pending.
    - ``backup_dir``, ``backup_keep``: where the backup taken before a migration of a SQLite
      quota database goes (default: ``quota-backups`` beside the database; give it a volume of its
      own), and how many backups stay there (7). The hub's start is the migration step: it checks
      the schema, backs the file up, migrates, and logs each (docs/upgrade.md).
    - ``backup_schedule``: a five-field cron expression (UTC), e.g. ``"30 2 * * *"``: the hub
      also takes a checked online backup of a SQLite quota database into ``backup_dir`` then,
      keeping ``backup_keep`` (``jupyterhub-quota restore`` puts one back; docs/upgrade.md).
    - ``litestream_socket``: Litestream's control socket when it replicates the SQLite quota
      database off the hub's volume (docs/z2jh.md, Replication): ``/hub/metrics`` then says how far
      its replica is behind (``quota_replication_lag_seconds``). The hub's scheduled backups
      (``backup_schedule``) are exported too (``quota_backup_*``).
    - ``allow_ephemeral_db``: start even when ``db_url`` is a SQLite file on the container's own
      file system (not a mounted volume), which is lost when the container restarts; without it
      such a start is refused with a :class:`~jupyterhub_quota.ConfigError` saying how to fix it.

    Hooks already set in the config (``pre_spawn_hook``, ``post_stop_hook``, ``options_from_form``,
    KubeSpawner's ``modify_pod_hook``; on ``c.Spawner`` or the spawner class's own section) are
    kept and run first; set them before calling this. Under ``jupyterhub upgrade-db`` (or anywhere
    no hub is running) only the quota database is migrated: no hooks, timers or scheduler. Returns
    the installed :class:`Integration`, or None when no hub is running.
    """
    if (values_file is None) == (values is None):
        raise ValueError("configure(): give exactly one of values_file= and values=")
    doc = values_mod.load(values_file) if values_file is not None else values_mod.document(values)
    authenticator = c.JupyterHub.authenticator_class if "authenticator_class" in c.JupyterHub else "pam"
    doc = values_mod.with_auth_mode(doc, authenticator)
    path = values_mod.sqlite_path(db_url)
    if path != ":memory:" and "://" not in path:
        kind = None if allow_ephemeral_db else durable.on_container_layer(path)
        if kind is not None:
            raise ConfigError([("db_url", durable.refusal(db_url, path, kind))])
        Path(path).parent.mkdir(parents=True, exist_ok=True)

    counters: Any = None

    def open_engine(migrate: bool = True) -> QuotaEngine:
        from ..host.engine import Component

        comp = Component.load(Path(component_path) if component_path else None)
        engine = QuotaEngine(path, doc, component=comp, durability=durability, busy_wait_ms=busy_wait_ms, migrate=migrate)
        engine.observer = counters if metrics else None
        return engine

    if backup_schedule:
        try:
            backup_schedule_mod.parse(backup_schedule)
        except backup_schedule_mod.ScheduleError as e:
            raise ConfigError([("backup_schedule", str(e).split(": ", 1)[1])]) from None
    # The explicit step: a SQLite file is backed up before it is migrated (docs/upgrade.md).
    upgrade.start_up(path, doc, open_engine, backup_dir=backup_dir, backup_keep=backup_keep)
    app = _hub_app()
    if app is None:
        # upgrade-db and friends: the quota database brought to the current schema, nothing else.
        return None

    # No role may hand out an unfiltered manage scope (checked again at start, after the whole file).
    unfiltered = unfiltered_manage_roles(
        c.JupyterHub.load_roles if "load_roles" in c.JupyterHub else (),
        c.JupyterHub.extra_user_scopes if "extra_user_scopes" in c.JupyterHub else (),
    )
    if unfiltered:
        raise ConfigError([("load_roles", unfiltered_refusal(unfiltered).removeprefix("quota: "))])
    postgres = path.startswith(("postgres://", "postgresql://"))
    if db_connections is not None and db_connections > 1 and path == ":memory:":
        raise ValueError("configure(): db_connections > 1 needs a database file or server, not :memory:")
    counters = process_metrics() if metrics else NoMetrics()
    service = QuotaService(open_engine, workers=db_connections or (4 if postgres else 1), after_call=counters.after_call)
    if metrics:
        counters.on_scrape = service.poke
    if default_runtime_minutes is not None:
        log.warning("quota: configure(default_runtime_minutes=%s) is deprecated and goes in the next release; "
                    "set custom.quota.defaultRuntimeMinutes in the values instead", default_runtime_minutes)
    quota = Integration(
        service, default_runtime=default_runtime_minutes, scheduler=scheduler, auto_stop=auto_stop,
        placement=Placement(accelerators(doc), apply_accelerator), metrics=counters,
        snapshot_groups=snapshot,
    )
    quota.live = Live(service)
    quota.installed = install_spawn_hooks(c, quota, form=spawn_form, values=doc)
    scopes = dict(c.JupyterHub.custom_scopes) if "custom_scopes" in c.JupyterHub else {}
    scopes.update(CUSTOM_SCOPES)
    c.JupyterHub.custom_scopes = scopes
    grant_self_scope(c)
    grant_admin_scope()
    if routes or pages:
        key, api = handlers(quota)
        extra = list(c.JupyterHub.extra_handlers) if "extra_handlers" in c.JupyterHub else []
        # The page calls the quota routes: it comes with them.
        pages_too = page_handlers(quota, key) + live_handlers(key) if pages and routes else []
        c.JupyterHub.extra_handlers = extra + (api if routes else []) + pages_too
    if pages and routes:
        # After the operator's: their page.html wins; ours adds the Quota link to the hub's own.
        paths = list(c.JupyterHub.template_paths) if "template_paths" in c.JupyterHub else []
        c.JupyterHub.template_paths = paths + [str(TEMPLATES)]
    app.quota = quota
    asyncio.get_running_loop().create_task(quota.start(app))
    sqlite_file = not postgres and path != ":memory:"
    if metrics and sqlite_file and (backup_schedule or backup_dir):
        counters.backup_dir = Path(backup_dir) if backup_dir else upgrade.default_backup_dir(path)
    if litestream_socket and not sqlite_file:
        raise ConfigError([("litestream_socket", "Litestream replicates a SQLite file; PostgreSQL has its own (docs/postgres.md)")])
    if litestream_socket:
        replica = durability_mod.ReplicaProbe(litestream_socket, path)
        counters.replica = replica
        quota.replica_task = asyncio.get_running_loop().create_task(replica.run_forever())
    if backup_schedule and sqlite_file:
        folder = Path(backup_dir) if backup_dir else upgrade.default_backup_dir(path)
        quota.backups = asyncio.get_running_loop().create_task(
            backup_schedule_mod.run_forever(backup_schedule, path, doc, folder, backup_keep))
    summary = service.engine.summary
    counters.know_rules(r.name for r in (summary.rules if summary else ()))
    counters.enabled_rules = tuple(r.name for r in (summary.rules if summary else ()) if r.enabled)
    log.info(
        "quota: %s, database %s, %d refresh rule(s) enabled%s",
        "enabled" if summary and summary.enabled else "disabled",
        path,
        sum(1 for r in (summary.rules if summary else ()) if r.enabled),
        "" if scheduler else " (scheduler off)",
    )
    return quota
