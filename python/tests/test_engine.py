"""The Python bridge itself: transactions, storage errors, traps and runaway guests, values and
authMode, spawn options. Real SQLite files throughout."""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from pathlib import Path

import pytest

from jupyterhub_quota import Caller, Component, ConfigError, EngineError, QuotaEngine, StorageError
from jupyterhub_quota.host import values as values_mod
from jupyterhub_quota.hub.scheduler import run_id
from jupyterhub_quota.hub.options import OptionError, accelerator_option, runtime_option

REPO = Path(__file__).resolve().parents[2]
FAULT = REPO / "target" / "wasm" / "quota-engine-fault.wasm"
VALUES = {"custom": {"authMode": "github", "quota": {"defaultQuota": 50, "refreshRules": {
    "nightly": {"enabled": True, "schedule": "0 3 * * *", "action": "add", "amount": 5}}}}}
ADMIN = Caller("admin", admin=True)
HUB = Caller("hub", scopes=("quota:sessions",))
T0 = 1_795_000_000


def start(e: QuotaEngine, user: str, minutes: int = 5, now: int = T0):
    return e.handle_request("POST", "/api/quota/sessions", body=f'{{"username":"{user}","runtime_minutes":{minutes}}}', caller=HUB, now=now)


def balance(path: Path, user: str):
    with sqlite3.connect(path) as c:
        r = c.execute("SELECT balance FROM users WHERE username = ?", (user,)).fetchone()
    return r[0] if r else None


def test_a_file_is_migrated_once_and_reopened_by_a_second_engine(tmp_path):
    db = tmp_path / "q.db"
    a = QuotaEngine(str(db), VALUES)
    assert a.migration == (0, 12)
    assert start(a, "alice").status == 201
    b = QuotaEngine(str(db), VALUES)
    assert b.migration == (12, 12)
    assert b.handle_request("GET", "/api/quota/me", caller=Caller("alice"), now=T0).json()["balance"] == 50
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_configuration_errors_name_their_keys_and_keep_the_old_config(tmp_path):
    e = QuotaEngine(str(tmp_path / "q.db"), VALUES)
    with pytest.raises(ConfigError) as err:
        e.configure({"custom": {"authMode": "github", "quota": {"cpuRate": "fast"}}})
    assert [f for f, _ in err.value.problems] == ["custom.quota.cpuRate"]
    assert e.summary.rules[0].name == "nightly"
    assert e.next_fire("nightly", T0) == 1_795_057_200  # 2026-11-19T03:00:00Z
    assert run_id("nightly", 1_795_057_200) == "nightly@2026-11-19T03:00:00Z"


def test_connections_opening_one_new_file_at_once_all_come_up_in_wal(tmp_path):
    # The switch to WAL on a new file answers busy at once to all but one; the bridge retries it.
    from jupyterhub_quota.host.sqlite_bridge import SqliteBridge

    contract = Component.load().contract("sqlite")

    for round_ in range(30):
        path = str(tmp_path / f"new{round_}.db")
        go, results = threading.Barrier(6), []

        def opener():
            go.wait()
            try:
                bridge = SqliteBridge(path, contract)
                results.append(bridge.conn.execute("PRAGMA journal_mode").fetchone()[0])
                bridge.close()
            except Exception as e:  # noqa: BLE001 - reported by the assertion below
                results.append(repr(e))

        threads = [threading.Thread(target=opener) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == ["wal"] * 6, results


def test_a_connection_is_set_up_with_the_wait_and_durability_it_was_opened_with(tmp_path):
    plain = QuotaEngine(str(tmp_path / "a.db"), VALUES)
    pragma = lambda e, name: e.conn.execute(f"PRAGMA {name}").fetchone()[0]  # noqa: E731
    assert pragma(plain, "busy_timeout") == plain.contract.busy_wait_ms
    assert pragma(plain, "synchronous") == 2  # FULL unless the operator chose otherwise
    chosen = QuotaEngine(str(tmp_path / "b.db"), VALUES, busy_wait_ms=1234, durability="normal")
    assert pragma(chosen, "busy_timeout") == 1234
    assert pragma(chosen, "synchronous") == 1  # NORMAL
    assert pragma(chosen, "journal_mode") == "wal"


def test_a_busy_database_fails_the_call_as_busy_and_changes_nothing(tmp_path):
    db = tmp_path / "q.db"
    e = QuotaEngine(str(db), VALUES)
    e.conn.execute("PRAGMA busy_timeout = 50")
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StorageError) as err:
            start(e, "alice")
        assert (err.value.kind, err.value.busy, err.value.http_status) == ("busy", True, 503)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert balance(db, "alice") is None
    assert start(e, "alice").status == 201


def test_a_constraint_failure_rolls_the_whole_call_back(tmp_path):
    db = tmp_path / "q.db"
    e = QuotaEngine(str(db), VALUES)
    # A trigger refuses the audit row: the balance change before it must not survive.
    with sqlite3.connect(db) as c:
        c.execute("CREATE TRIGGER no_audit BEFORE INSERT ON transactions BEGIN SELECT RAISE(ABORT, 'audit refused'); END")
    with pytest.raises(StorageError) as err:
        e.handle_request("POST", "/admin/api/quota/users/bob", body='{"action":"set","amount":7}', caller=ADMIN, now=T0)
    assert (err.value.kind, err.value.busy, err.value.http_status) == ("constraint", False, 500)
    assert "audit refused" in str(err.value)
    assert balance(db, "bob") is None
    assert not e.conn.in_transaction


def test_a_trap_after_a_write_rolls_back_and_the_engine_goes_on(tmp_path):
    db = tmp_path / "q.db"
    e = QuotaEngine(str(db), VALUES, component=Component.load(FAULT))
    with pytest.raises(EngineError):
        e.handle_request("POST", "/__fault/trap-after-write", caller=ADMIN, now=T0)
    assert balance(db, "fault-written") is None
    # A fresh instance, still configured (defaultQuota 50 granted at first start).
    assert start(e, "alice").json()["balance"] == 50


def test_a_runaway_guest_is_stopped_at_the_deadline(tmp_path):
    e = QuotaEngine(str(tmp_path / "q.db"), VALUES, component=Component.load(FAULT), call_deadline=0.3)
    with pytest.raises(EngineError):
        e.handle_request("POST", "/__fault/spin", caller=ADMIN, now=T0)
    assert start(e, "alice").status == 201


def test_values_outside_the_exact_range_are_refused_before_reaching_the_engine(tmp_path):
    e = QuotaEngine(str(tmp_path / "q.db"), VALUES)
    with pytest.raises(ValueError):
        e.handle_request("GET", "/api/quota/rates", caller=ADMIN, now=2**60)
    with pytest.raises(ValueError):
        e.configure({"custom": {"authMode": "github", "quota": {"cpuRate": math.nan}}})


@pytest.mark.parametrize("bad", ["1.5", "x'00'", str(2**53), str(-(2**53)), "9223372036854775807"])
def test_a_row_value_the_engine_never_stores_fails_the_statement_as_a_value(tmp_path, bad):
    # Checked for every row of every statement, all rows at once (types and integer bounds): the
    # next rows too.
    e = QuotaEngine(str(tmp_path / "q.db"), VALUES)
    b = e.bridge
    b.begin(False)
    out = b.query(None, f"SELECT 'u', 1 UNION ALL SELECT 'v', {bad}", "[]")
    b.rollback()
    assert out.tag == "other" and "only integers within" in out.payload, out
    assert b.failed is not None and b.failed.kind == "other"
    b.failed = None
    good = b.query(None, f"SELECT 'u', {2**53 - 1} UNION ALL SELECT NULL, {-(2**53 - 1)}", "[]")
    assert json.loads(good) == [["u", 2**53 - 1], [None, -(2**53 - 1)]]


@pytest.mark.parametrize("bad", ["1.5", "true", "[1]", "{}", "1e3"])
def test_a_parameter_the_engine_never_sends_fails_the_statement_as_a_value(tmp_path, bad):
    # Parameters are checked by their types (their bound is the component's: it never sends an
    # integer past +-(2^53-1)).
    e = QuotaEngine(str(tmp_path / "q.db"), VALUES)
    b = e.bridge
    b.begin(True)
    for out in (b.query(None, "SELECT ?1, ?2", f'["u", {bad}]'),
                b.execute_many(None, "UPDATE users SET balance = ?2 WHERE username = ?1", f'[["u", 1], ["v", {bad}]]')):
        assert out.tag == "other" and ("only integers within" in out.payload or "JSON" in out.payload), out
        b.failed = None
    b.rollback()
    b.begin(True)
    digits = "1234567890123456789"
    good = b.query(None, "SELECT ?1, ?2, ?3", f'["{digits}", {2**53 - 1}, null]')
    assert json.loads(good) == [[digits, 2**53 - 1, None]]
    assert b.execute_many(None, "UPDATE users SET balance = ?2 WHERE username = ?1", f'[["{digits}", {2**53 - 1}]]') == 0
    b.rollback()


def test_one_engine_per_thread_is_not_required_when_calls_come_from_one_worker(tmp_path):
    # The hub runs every call on one worker thread; the engine was opened on another.
    e = QuotaEngine(str(tmp_path / "q.db"), VALUES)
    out = []
    t = threading.Thread(target=lambda: out.append(start(e, "alice").status))
    t.start()
    t.join()
    assert out == [201]


@pytest.mark.parametrize("value, want", [(None, 20), (5, 5), ("15", 15), (" 7 ", 7), (-5, -5), ("481", 481)])
def test_runtime_option_accepts_integers_and_digit_strings(value, want):
    assert runtime_option(value, 20) == want


@pytest.mark.parametrize("value", ["abc", math.nan, 2.5, True, "1.5", "", [5], {"m": 1}, "٣"])
def test_runtime_option_refuses_anything_else_naming_it(value):
    with pytest.raises(OptionError) as err:
        runtime_option(value, 20)
    assert str(err.value).startswith("runtime_minutes:")


def test_gpu_selection_blank_means_cpu():
    assert accelerator_option(None) is None
    assert accelerator_option("") is None
    assert accelerator_option("phx") == "phx"
    with pytest.raises(OptionError):
        accelerator_option(3)


def test_auth_mode_comes_from_the_authenticator_only_when_the_values_say_nothing():
    bare = {"custom": {"quota": {}}}
    assert values_mod.with_auth_mode(bare, "dummy")["custom"]["authMode"] == "dummy"
    assert values_mod.with_auth_mode(bare, "oauthenticator.github.GitHubOAuthenticator")["custom"]["authMode"] == "github"
    assert values_mod.with_auth_mode(bare, "jupyterhub.auth.DummyAuthenticator")["custom"]["authMode"] == "dummy"
    with pytest.raises(values_mod.ValuesError) as err:
        values_mod.with_auth_mode(bare, "pam")
    assert "custom.quota.enabled" in str(err.value) and "custom.authMode" in str(err.value)
    # Given explicitly, nothing is guessed.
    assert values_mod.with_auth_mode({"custom": {"quota": {"enabled": True}}}, "pam") == {"custom": {"quota": {"enabled": True}}}
    assert values_mod.with_auth_mode({"custom": {"authMode": "multi"}}, "pam")["custom"]["authMode"] == "multi"


def test_sqlite_urls_read_as_quota_hub_reads_them():
    assert values_mod.sqlite_path("sqlite://quota.db") == "quota.db"
    assert values_mod.sqlite_path("sqlite:///var/lib/quota/q.db") == "/var/lib/quota/q.db"
    assert values_mod.sqlite_path("sqlite://:memory:") == ":memory:"
    assert values_mod.sqlite_path("/abs/q.db") == "/abs/q.db"
    # A PostgreSQL URL goes to the engine as it is (psycopg connects to it).
    assert values_mod.sqlite_path("postgresql://u@h/db") == "postgresql://u@h/db"
    for bad in ("mysql://u@h/db", "sqlite://"):
        with pytest.raises(values_mod.ValuesError):
            values_mod.sqlite_path(bad)


def test_a_values_file_is_read_in_its_order(tmp_path):
    p = tmp_path / "values.yaml"
    p.write_text("custom:\n  authMode: github\n  accelerators:\n    zeta: {quotaRate: 1}\n    alpha: {quotaRate: 2}\n")
    e = QuotaEngine(str(tmp_path / "q.db"), values_mod.load(p))
    assert list(e.handle_request("GET", "/api/quota/rates", caller=ADMIN, now=T0).json()["rates"]) == ["cpu", "zeta", "alpha"]
    (tmp_path / "bad.yaml").write_text("custom: [1,\n")
    with pytest.raises(values_mod.ValuesError) as err:
        values_mod.load(tmp_path / "bad.yaml")
    assert "bad.yaml" in str(err.value) and "line" in str(err.value)
