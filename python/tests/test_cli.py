"""`jupyterhub-quota`, the command line the wheel installs for the hub's container: every line of
docs/z2jh.md's section 8 runs as written (a `kubectl` stand-in runs the command after `--` with the
hub container's environment: `QUOTA_DB_URL` as the example's `hub.extraEnv` sets it, the chart
values where z2jh mounts them, the hub's working directory), and what each did is read back."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.hub_process import DEADLINE_S, HERE
from jupyterhub_quota.hub import cli

REPO = HERE.parents[2]
EXAMPLE = REPO / "examples" / "z2jh" / "config.yaml"
TOOL = str(Path(sys.executable).parent / "jupyterhub-quota")


def documented_lines() -> list[str]:
    text = (REPO / "docs" / "z2jh.md").read_text()
    section = text[text.index("## 8. The operator's command line"):text.index("## Tested how")]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def container(tmp_path: Path) -> dict:
    """A `kubectl` on PATH whose `exec ... -- CMD` runs CMD here, as in the hub container: its
    working directory, `QUOTA_DB_URL` from the example's hub.extraEnv (the PVC's path moved under
    tmp_path) and the chart values z2jh mounts (here named by QUOTA_VALUES)."""
    workdir = tmp_path / "srv" / "jupyterhub"
    workdir.mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(f'#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift\ncd "{workdir}" && exec "$@"\n')
    kubectl.chmod(0o755)
    hub_env = yaml.safe_load(EXAMPLE.read_text())["hub"]["extraEnv"]
    db_url = hub_env["QUOTA_DB_URL"].replace("/srv/jupyterhub", str(workdir))
    return {**os.environ, "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
            "QUOTA_DB_URL": db_url, "QUOTA_VALUES": str(EXAMPLE)}


def run(line: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", line], env=env, cwd=cwd, capture_output=True, text=True, timeout=DEADLINE_S)


def test_every_documented_line_runs_as_written(tmp_path):
    lines = documented_lines()
    assert len(lines) == 8 and all(l.startswith("kubectl exec -n jhub deploy/hub -- jupyterhub-quota ") for l in lines), lines
    env = container(tmp_path)
    out = {}
    for line in lines:
        r = run(line, env, tmp_path)
        assert r.returncode == 0, (line, r.stdout, r.stderr)
        out[line.split("jupyterhub-quota ")[1].split()[0]] = r
    listed = out["list"].stdout
    assert listed.startswith("Users (2)\n") and re.search(r"^alice\s+150\s", listed, re.M) and re.search(r"^bob\s+90\s", listed, re.M), listed
    assert out["show"].stdout.startswith("alice: balance 150\n"), out["show"].stdout
    ledger = (tmp_path / "ledger.csv").read_text().splitlines()
    assert ledger[0].startswith("id,created_at,username,transaction_type,amount") and len(ledger) == 1 + 4, ledger
    assert all(row.endswith(",jupyterhub-quota,,") for row in ledger[1:]), "made by the command line (no budget, undated)"
    folder = tmp_path / "srv" / "jupyterhub" / "quota-backups"
    [backup] = [p for p in folder.iterdir() if p.name != "backup-state.json"]
    state = json.loads((folder / "backup-state.json").read_text())
    assert state["last_bytes"] == backup.stat().st_size and state["failures"] == 0, "what the backup metrics read"
    assert re.fullmatch(r"quota-\d{8}T\d{6}Z\.db", backup.name)
    assert backup.stat().st_mode & 0o777 == 0o600, "a backup is its owner's alone"
    with sqlite3.connect(backup) as c:
        assert dict(c.execute("SELECT username, balance FROM users")) == {"alice": 150, "bob": 90}
    assert out["check"].stdout.startswith("OK: values accepted (quota enabled, 1 refresh rule(s) enabled)"), out["check"].stdout
    assert "2 users, 4 ledger rows" in out["check"].stdout and "every balance equals its ledger" in out["check"].stdout


def test_a_refused_change_names_the_user_and_exits_1(tmp_path):
    env = container(tmp_path)
    assert run(f"{TOOL} set bob --amount 5", env, tmp_path).returncode == 0
    r = run(f"{TOOL} deduct bob --amount 6", env, tmp_path)
    assert r.returncode == 1 and r.stderr.strip() == "jupyterhub-quota: bob: Insufficient balance", r.stderr
    r = run(f"{TOOL} add bob --amount ten", env, tmp_path)
    assert r.returncode == 1 and "--amount: `ten` is not a whole number" in r.stderr, r.stderr


def test_budgets_and_dated_credit_from_the_hubs_command_line(tmp_path):
    env = container(tmp_path)
    too_far = "2099-01-01T00:00:00Z"  # more than 3,660 days ahead of any clock a test runs on
    ahead = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1000)).strftime("%Y-%m-%dT%H:%M:%SZ")
    r = run(f"{TOOL} budget create course-101 --user alice --group students --member-limit 300", env, tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "budget course-101: created", (r.stdout, r.stderr)
    r = run(f"{TOOL} budget add course-101 500", env, tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "budget course-101: balance 500", (r.stdout, r.stderr)
    r = run(f"{TOOL} budget deduct course-101 600", env, tmp_path)
    assert r.returncode == 1 and "Insufficient balance" in r.stderr, r.stderr
    r = run(f"{TOOL} budget add course-101 5 --expires {too_far}", env, tmp_path)
    assert r.returncode == 1 and "expires_at: " in r.stderr, r.stderr
    r = run(f"{TOOL} budget list", env, tmp_path)
    assert r.returncode == 0 and re.search(r"^course-101\s+500\s+0\s+1\s+300\s+api$", r.stdout, re.M), r.stdout
    r = run(f"{TOOL} add carol --amount 20 --expires friday", env, tmp_path)
    assert r.returncode == 1 and "expires_at: " in r.stderr, r.stderr
    r = run(f"{TOOL} add carol --amount 20 --expires {ahead}", env, tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "carol: 20", (r.stdout, r.stderr)
    with sqlite3.connect(env["QUOTA_DB_URL"].removeprefix("sqlite://")) as c:
        assert c.execute("SELECT amount, remaining FROM grants WHERE username = 'carol'").fetchall() == [(20, 20)]
    r = run(f"{TOOL} check", env, tmp_path)
    assert r.returncode == 0 and "every balance equals its ledger" in r.stdout, (r.stdout, r.stderr)
    r = run(f"{TOOL} budget delete course-101", env, tmp_path)
    assert r.returncode == 1 and "still holds a balance of 500" in r.stderr, r.stderr


def test_check_names_a_balance_that_differs_from_its_ledger(tmp_path):
    env = container(tmp_path)
    assert run(f"{TOOL} set alice --amount 5", env, tmp_path).returncode == 0
    with sqlite3.connect(env["QUOTA_DB_URL"].removeprefix("sqlite://")) as c:
        c.execute("UPDATE users SET balance = 6 WHERE username = 'alice'")
    r = run(f"{TOOL} check", env, tmp_path)
    assert r.returncode == 1 and "1 balance(s) differ from the sum of their ledger: alice" in r.stderr, r.stderr


def test_backup_of_postgres_points_at_pg_dump_without_the_password(tmp_path):
    env = {**container(tmp_path), "QUOTA_DB_URL": "postgresql://quota:secret@db/quota"}
    r = run(f"{TOOL} backup -o x.db", env, tmp_path)
    assert r.returncode == 1 and "pg_dump" in r.stderr and "secret" not in r.stderr, r.stderr


def test_the_values_are_read_where_z2jh_mounts_them(tmp_path):
    secret, existing = tmp_path / "secret.yaml", tmp_path / "existing.yaml"
    secret.write_text(yaml.safe_dump({"custom": {"authMode": "github", "quota": {"cpuRate": 1, "defaultQuota": 5}}, "hub": {}}))
    existing.write_text(yaml.safe_dump({"custom": {"quota": {"defaultQuota": 7}}}))
    doc = cli.load_values(None, (str(secret), str(existing)))
    assert doc["custom"]["quota"] == {"cpuRate": 1, "defaultQuota": 7} and doc["custom"]["authMode"] == "github"
    with pytest.raises(cli.Failed, match="--values: give the values file"):
        cli.load_values(None, (str(tmp_path / "none.yaml"),))
