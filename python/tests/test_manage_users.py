"""scripts/manage_users.py: arguments reach kubectl (a fake one on PATH that records its argv and
standard input) as a list, never through a shell; and with --local it drives the real quota-hub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "manage_users.py"
QUOTA_HUB = REPO / "target" / "debug" / "quota-hub"

FAKE_KUBECTL = """#!{python}
import json, sys
with open({log!r}, "a") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "stdin": sys.stdin.read()}}) + "\\n")
"""


@pytest.fixture
def kubectl(tmp_path):
    log = tmp_path / "kubectl.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubectl"
    fake.write_text(FAKE_KUBECTL.format(python=sys.executable, log=str(log)))
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def run(*args: str, check: bool = True):
        done = subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, cwd=tmp_path)
        if check:
            assert done.returncode == 0, done.stderr
        calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        log.unlink(missing_ok=True)
        return done, calls

    return run


def test_a_hostile_username_arrives_as_one_argument(kubectl, tmp_path):
    evil = "a'; rm -rf / #"
    _, calls = kubectl("-n", "hub", "set-quota", evil, "bob", "--amount", "100")
    assert calls == [{"argv": ["exec", "-i", "-n", "hub", "deploy/quota-hub", "--", "quota-hub", "set-quota",
                               "--amount", "100", evil, "bob"], "stdin": ""}]
    assert (Path("/") / "bin").exists()


def test_a_name_that_looks_like_an_option_stays_a_name(kubectl):
    _, calls = kubectl("add-quota", "--amount", "5", "--", "--admin")
    assert calls[0]["argv"][-4:] == ["--amount", "5", "--", "--admin"]


def test_a_file_goes_on_standard_input(kubectl, tmp_path):
    f = tmp_path / "users.csv"
    f.write_text("username,quota\nann,10\nbob,20\n")
    _, calls = kubectl("--container", "hub", "set-quota", "-f", str(f), "--amount", "5")
    assert calls == [{"argv": ["exec", "-i", "deploy/quota-hub", "-c", "hub", "--", "quota-hub", "set-quota",
                               "--amount", "5", "-f", "-"], "stdin": "username,quota\nann,10\nbob,20\n"}]


def test_list_quota_and_bad_usage(kubectl):
    _, calls = kubectl("list-quota")
    assert calls[0]["argv"][-2:] == ["quota-hub", "list-quota"]
    done, calls = kubectl("add-quota", "ann", check=False)
    assert done.returncode == 2 and "--amount is required" in done.stderr and calls == []
    done, calls = kubectl("set-quota", check=False)
    assert done.returncode == 2 and "usernames or -f FILE" in done.stderr and calls == []


def test_local_mode_runs_quota_hub_on_a_database(tmp_path):
    assert QUOTA_HUB.exists(), "needs target/debug/quota-hub: cargo build -p quota-hub (the README's test command does)"
    env = dict(os.environ, QUOTA_HUB_DB=f"sqlite://{tmp_path / 'q.db'}", QUOTA_HUB_VALUES=str(REPO / "examples" / "values.yaml"))
    run = lambda *a: subprocess.run([sys.executable, str(SCRIPT), "--local", "--quota-hub", str(QUOTA_HUB), *a],  # noqa: E731
                                    env=env, capture_output=True, text=True)
    f = tmp_path / "users.csv"
    f.write_text("username,quota\nann,10\nbob,20\n")
    assert run("set-quota", "-f", str(f)).returncode == 0
    assert run("add-quota", "ann", "--amount", "5").returncode == 0
    out = run("list-quota")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Users (2)"
    assert lines[2].split()[:2] == ["ann", "15"] and lines[3].split()[:2] == ["bob", "20"]
