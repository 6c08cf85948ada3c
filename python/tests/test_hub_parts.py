"""The hub-side pieces without a hub: hook chaining, the scheduler on a test clock, engine errors in
the gate. (test_hub.py runs them inside a real JupyterHub.)"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from types import SimpleNamespace

import pytest
from tornado import web
from traitlets.config import Config

from jupyterhub_quota import Caller, QuotaEngine
from jupyterhub_quota.hub.integration import Integration
from jupyterhub_quota.hub.scheduler import Scheduler
from jupyterhub_quota.host.service import QuotaService
from jupyterhub_quota.hub.spawn import install_spawn_hooks

VALUES = {"custom": {"authMode": "github", "quota": {"defaultQuota": 0, "refreshRules": {
    "hourly": {"enabled": True, "schedule": "0 * * * *", "action": "add", "amount": 5},
    "off": {"enabled": False, "schedule": "* * * * *", "action": "add", "amount": 1}}}}}
T0 = 1_795_000_000  # 2026-11-18T11:06:40Z


def spawner(user: str, server: str = "", **options) -> SimpleNamespace:
    return SimpleNamespace(user=SimpleNamespace(name=user), name=server, user_options=options)


def quota_hub(db: str) -> Integration:
    return Integration(QuotaService(lambda: QuotaEngine(db, VALUES)), scheduler=False, auto_stop=False)


def test_hooks_already_set_run_first_and_still_run_when_quota_refuses(tmp_path):
    calls = []
    c = Config()
    c.Spawner.pre_spawn_hook = lambda s: calls.append(("pre", s.user.name))

    async def stop_hook(s):
        calls.append(("stop", s.user.name))

    c.Spawner.post_stop_hook = stop_hook
    c.Spawner.options_from_form = lambda form: {**form, "seen": True}
    q = quota_hub(str(tmp_path / "q.db"))
    install_spawn_hooks(c, q)

    with pytest.raises(web.HTTPError) as err:
        asyncio.run(c.Spawner.pre_spawn_hook(spawner("alice", runtime_minutes=5)))
    assert err.value.status_code == 403 and err.value.log_message.startswith("Cannot start container")
    asyncio.run(c.Spawner.post_stop_hook(spawner("alice")))  # no session: a quiet no-op
    assert calls == [("pre", "alice"), ("stop", "alice")]
    assert not q.listening  # no hub event log here: a stop would be billed as completed
    opts = c.Spawner.options_from_form({"runtime_minutes": ["15"], "gpu_selection": [""], "other": ["x"]})
    assert opts == {"runtime_minutes": "15", "gpu_selection": "", "other": ["x"], "seen": True}


def test_an_engine_failure_in_the_gate_is_a_clear_503_and_starts_nothing(tmp_path):
    db = tmp_path / "q.db"
    q = quota_hub(str(db))
    c = Config()
    install_spawn_hooks(c, q)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TRIGGER no_users BEFORE INSERT ON users BEGIN SELECT RAISE(ABORT, 'disk says no'); END")
    with pytest.raises(web.HTTPError) as err:
        asyncio.run(c.Spawner.pre_spawn_hook(spawner("bob", runtime_minutes=5)))
    assert err.value.status_code == 503
    assert "Quota check failed, the server was not started" in err.value.log_message
    assert "disk says no" in err.value.log_message


class Clock:
    """A test clock: `sleep` moves it forward instead of waiting."""

    def __init__(self, t: float):
        self.t = t
        self.slept: list[float] = []
        self.parked: asyncio.Event | None = None

    def __call__(self) -> float:
        return self.t

    async def sleep(self, s: float) -> None:
        self.slept.append(s)
        if len(self.slept) >= 2:
            self.parked.set()  # the first fire is done; this wait never ends, the test stops here
            await asyncio.Event().wait()
        self.t += s


def balance(db, user):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT balance FROM users WHERE username = ?", (user,)).fetchone()[0]


def test_the_scheduler_runs_each_fire_time_once_even_across_a_restart(tmp_path):
    db = str(tmp_path / "q.db")
    seed = QuotaEngine(db, VALUES)
    seed.handle_request("POST", "/admin/api/quota/users/ann", body='{"action":"set","amount":10}',
                        caller=Caller("admin", admin=True), now=T0)
    seed.close()

    async def run_until_two_fires(clock: Clock) -> Scheduler:
        clock.parked = asyncio.Event()
        s = Scheduler(QuotaService(lambda: QuotaEngine(db, VALUES)), clock=clock, sleep=clock.sleep)
        await s.start()
        await clock.parked.wait()
        s.stop()
        return s

    clock = Clock(T0)
    asyncio.run(run_until_two_fires(clock))
    assert clock.slept == [3200, 3600]  # 11:06:40 -> 12:00:00, then to 13:00:00
    assert balance(db, "ann") == 15
    # A second hub (or a restart) that reaches the same fire time does not apply it again.
    again = Clock(T0)
    asyncio.run(run_until_two_fires(again))
    assert balance(db, "ann") == 15
    with sqlite3.connect(db) as c:
        runs = [r[0] for r in c.execute("SELECT run_id FROM refresh_runs")]
    assert runs == ["hourly@2026-11-18T12:00:00Z"]


def test_a_grant_that_lapsed_while_no_hub_ran_is_written_off_when_the_scheduler_starts(tmp_path):
    db = str(tmp_path / "q.db")
    seed = QuotaEngine(db, VALUES)
    r = seed.handle_request("POST", "/admin/api/quota/users/ann",
                            body='{"action":"add","amount":50,"expires_at":"2026-11-18T12:00:00Z"}',
                            caller=Caller("admin", admin=True), now=T0)
    assert r.status == 200, r.body
    seed.close()

    async def start_and_sweep_again() -> dict:
        clock = Clock(T0 + 86_400)
        clock.parked = asyncio.Event()
        s = Scheduler(QuotaService(lambda: QuotaEngine(db, VALUES)), clock=clock, sleep=clock.sleep)
        await s.start()
        again = await s.sweep()
        s.stop()
        return again

    assert asyncio.run(start_and_sweep_again()) == {"grants_expired": 0, "credits_expired": 0}
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT transaction_type, amount, created_at, description FROM transactions"
                         " WHERE username = 'ann' ORDER BY id").fetchall()
    # Written once, at start, dated at the grant's expiry (12:00:00), not at the sweep's time.
    assert rows[-1] == ("expire", -50, 1_795_003_200, "Grant 1 expired")
    assert [r[0] for r in rows].count("expire") == 1


def test_without_the_hubs_ready_signal_a_stop_is_billed_not_free(tmp_path):
    db = str(tmp_path / "q.db")
    q = quota_hub(db)
    q.service.run_sync(lambda e: e.handle_request("POST", "/admin/api/quota/users/dan", body='{"action":"set","amount":100}',
                                                  caller=Caller("admin", admin=True)))
    c = Config()
    install_spawn_hooks(c, q)
    asyncio.run(c.Spawner.pre_spawn_hook(spawner("dan", runtime_minutes=5)))
    asyncio.run(c.Spawner.post_stop_hook(spawner("dan")))
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM sessions WHERE username = 'dan'").fetchone()[0] == "completed"
    # With the signal (a hub's event log) and no start event, the same stop is a failed spawn.
    q.listening = True
    asyncio.run(c.Spawner.pre_spawn_hook(spawner("dan", runtime_minutes=5)))
    asyncio.run(c.Spawner.post_stop_hook(spawner("dan")))
    with sqlite3.connect(db) as conn:
        assert [r[0] for r in conn.execute("SELECT status FROM sessions WHERE username = 'dan' ORDER BY id")] == ["completed", "failed"]


def test_budget_balances_and_charges_are_counted_as_quota_hub_counts_them(tmp_path):
    from prometheus_client import CollectorRegistry, generate_latest

    from jupyterhub_quota.hub.metrics import Metrics

    values = {"custom": {"authMode": "github", "quota": {"cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0,
                                                          "budgets": {"lab": {"users": ["ann"]}, "course": {}}}}}
    registry = CollectorRegistry()
    metrics = Metrics(registry=registry)
    engine = QuotaEngine(str(tmp_path / "q.db"), values)
    engine.observer = metrics
    admin, hub = Caller("admin", admin=True), Caller("hub", scopes=("quota:sessions",))
    assert engine.handle_request("POST", "/admin/api/quota/budgets/lab", body='{"action":"set","amount":100}',
                                 caller=admin, now=T0).status == 200
    r = engine.handle_request("POST", "/api/quota/sessions", body='{"username":"ann","runtime_minutes":30,"budget":"lab"}',
                              caller=hub, now=T0)
    assert r.status == 201, r.body
    sid = r.json()["session_id"]
    assert engine.handle_request("POST", f"/api/quota/sessions/{sid}/end", body="{}", caller=hub, now=T0 + 600).status == 200
    metrics.after_call(engine)
    text = generate_latest(registry).decode()
    assert 'quota_budget_credits_charged_total{budget="lab"} 10.0' in text, text
    assert 'quota_budget_balance{budget="lab"} 90.0' in text and 'quota_budget_balance{budget="course"} 0.0' in text, text
    engine.close()


def test_the_hub_grants_the_owner_own_quota_scope_to_the_user_and_server_roles_keeping_the_operators():
    from traitlets.config import Config

    from jupyterhub_quota.hub.callers import SELF_SCOPE, grant_self_scope

    c = Config()
    grant_self_scope(c)
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    assert roles["server"]["scopes"] == ["users:activity!user", "access:servers!server", SELF_SCOPE]
    # JupyterHub 6: the user role stays the default one, with the scope as an extra user scope.
    assert "user" not in roles and SELF_SCOPE in c.JupyterHub.extra_user_scopes

    c = Config()
    c.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", "read:groups"]}, {"name": "server", "scopes": ["users:activity!user"]},
                               {"name": "teachers", "scopes": ["admin:users"], "groups": ["teachers"]}]
    c.Spawner.server_token_scopes = ["users:activity!user", "read:users:name!user"]
    grant_self_scope(c)
    grant_self_scope(c)  # twice: once each
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    assert roles["user"]["scopes"] == ["self", "read:groups", SELF_SCOPE]
    assert roles["server"]["scopes"] == ["users:activity!user", SELF_SCOPE]
    assert roles["teachers"] == {"name": "teachers", "scopes": ["admin:users"], "groups": ["teachers"]}
    assert c.Spawner.server_token_scopes == ["users:activity!user", "read:users:name!user", SELF_SCOPE]


@pytest.mark.parametrize("newest", [0, 1, 2, 7, 8, 1000, 123_457])
def test_the_live_balances_find_the_ledgers_newest_row_in_logarithmic_steps(newest):
    from jupyterhub_quota.hub.live import Live

    class Ledger:
        async def request(self, method, path, caller=None, query=""):
            q = dict(p.split("=") for p in query.split("&"))
            rows = [{"id": int(q["after_id"]) + 1}] if int(q["after_id"]) < newest else []
            return SimpleNamespace(status=200, json=lambda: {"transactions": rows, "next_after_id": None})

    live = Live(Ledger())
    assert asyncio.run(live.newest_row()) == newest
    assert live.reads <= 2 * max(1, newest).bit_length() + 2, live.reads


def test_a_hub_whose_roles_lost_the_self_scope_after_configure_is_told_at_start():
    from jupyterhub_quota.hub.callers import SELF_SCOPE, self_scope_missing

    ok = SimpleNamespace(load_roles=[{"name": "server", "scopes": ["users:activity!user", SELF_SCOPE]}], extra_user_scopes={SELF_SCOPE})
    assert self_scope_missing(ok) == []
    jh5 = SimpleNamespace(load_roles=[{"name": "user", "scopes": ["self", SELF_SCOPE]}, {"name": "server", "scopes": [SELF_SCOPE]}])
    assert self_scope_missing(jh5) == []
    # load_roles set again after configure(): both roles are the defaults again.
    replaced = SimpleNamespace(load_roles=[{"name": "teachers", "scopes": ["admin:users"]}], extra_user_scopes=set())
    assert self_scope_missing(replaced) == ["user", "server"]
    own_user = SimpleNamespace(load_roles=[{"name": "user", "scopes": ["self"]}, {"name": "server", "scopes": [SELF_SCOPE]}],
                               extra_user_scopes={SELF_SCOPE})
    assert self_scope_missing(own_user) == ["user"]


def test_an_older_extension_answered_last_never_moves_the_auto_stop_earlier():
    """Two extensions answered by two PostgreSQL workers may arrive out of order: the timer keeps
    the latest `ends_at`; a new start (arm) still replaces it, and a stop clears it."""
    from jupyterhub_quota.hub.timers import Timers

    async def run() -> tuple:
        timers = Timers(service=None)
        loop = asyncio.get_running_loop()
        base = time.time() + 3600
        timers.arm("ann", "", base)
        timers.extend("ann", "", base + 3600)  # the second extension, answered first
        timers.extend("ann", "", base + 1800)  # the first, answered last
        kept = timers.pending()[("ann", "")] - loop.time()
        timers.arm("ann", "", base)  # a new session
        restarted = timers.pending()[("ann", "")] - loop.time()
        timers.cancel("ann", "")
        return kept, restarted, timers.pending()

    kept, restarted, left = asyncio.run(run())
    assert kept > 7000, kept  # about 7,200 s: the later end stands
    assert 3500 < restarted < 3700, restarted
    assert left == {}


def test_the_hub_acts_on_the_engines_settings_and_a_values_file_loaded_again_moves_them(tmp_path):
    """The default runtime, what the gate does when its database fails and live streams per user
    are the engine's (`custom.quota` keys, checked there), read at each use; the deprecated
    `default_runtime_minutes` still overrides the first."""
    values = {"custom": {"authMode": "github", "quota": {"defaultRuntimeMinutes": 45, "onStorageError": "allow",
                                                       "liveStreamsPerUser": 3}}}
    service = QuotaService(lambda: QuotaEngine(str(tmp_path / "q.db"), values))
    q = Integration(service, scheduler=False, auto_stop=False)
    from jupyterhub_quota.hub.live import Live

    live = Live(service)
    assert (q.default_runtime, q.on_storage_error, live.max_streams) == (45, "allow", 3)
    service.engine.configure({"custom": {"authMode": "github"}})
    s = service.engine.summary.settings
    assert (q.default_runtime, q.on_storage_error, live.max_streams) == (s.default_runtime_minutes, "refuse", s.live_streams_per_user)
    assert s.runtime_minutes_min <= s.default_runtime_minutes <= s.runtime_minutes_max
    assert Integration(service, scheduler=False, auto_stop=False, default_runtime=30).default_runtime == 30
    with pytest.raises(Exception, match=r"custom\.quota\.defaultRuntimeMinutes"):
        service.engine.configure({"custom": {"authMode": "github", "quota": {"defaultRuntimeMinutes": s.runtime_minutes_max + 1}}})
    service.executor.shutdown()
