"""Groups in a real JupyterHub (6, and 5 as z2jh ships it): users in hub groups made through the hub's REST API, a refresh
rule targeting a group run by the hub's scheduler and then through REST after a user moved to
another group, a member and a non-member starting a restricted accelerator, and `quota-hub
sync-groups` copying the hub's groups through its REST API."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from support.hub_process import HERE, Hub, wait_for

REPO = HERE.parents[2]

VALUES = {
    "custom": {
        "authMode": "github",
        "quota": {
            "cpuRate": 1,
            "minimumToStart": 10,
            "defaultQuota": 0,
            "groups": {"lab": {"defaultQuota": 100, "accelerators": ["phx"]}},
            # Every minute: the scheduler runs it at the first minute after the hub starts.
            "refreshRules": {
                "lab-topup": {
                    "enabled": True,
                    "schedule": "* * * * *",
                    "action": "add",
                    "amount": 7,
                    "targets": {"includeGroups": ["lab"]},
                }
            },
        },
        "accelerators": {
            "phx": {"displayName": "PHX", "description": "PHX accelerator", "nodeSelector": {"accel": "phx"}, "quotaRate": 2},
            "tpu": {"displayName": "TPU", "description": "TPU accelerator", "nodeSelector": {"accel": "tpu"}, "quotaRate": 3},
        },
    }
}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    state = tmp_path_factory.mktemp("groups-hub")
    values = state / "values.yaml"
    values.write_text(yaml.safe_dump(VALUES))
    h = Hub(state, values).start()
    yield h
    h.stop()


def rows(hub: Hub, sql: str, *params):
    return hub.rows(sql, *params)


def balances(hub: Hub) -> dict:
    return dict(rows(hub, "SELECT username, balance FROM users"))


def hub_group(hub: Hub, group: str, add=(), remove=()) -> None:
    """Creates the hub group if needed and changes its members, through the hub's REST API."""
    status, _ = hub.admin("GET", f"/hub/api/groups/{group}")
    if status == 404:
        status, body = hub.admin("POST", f"/hub/api/groups/{group}")
        assert status == 201, (status, body)
    if add:
        status, body = hub.admin("POST", f"/hub/api/groups/{group}/users", {"users": list(add)})
        assert status == 200, (status, body)
    if remove:
        status, body = hub.admin("DELETE", f"/hub/api/groups/{group}/users", {"users": list(remove)})
        assert status == 200, (status, body)


def test_group_rules_and_restricted_accelerators_follow_the_hubs_groups(hub, quota_hub_bin):
    for user in ("alice", "bob", "carol"):
        hub.token_for(user)  # creates the hub user
    hub_group(hub, "lab", add=["alice"])
    hub_group(hub, "course", add=["bob", "carol"])
    for user in ("alice", "bob", "carol"):
        status, body = hub.admin("POST", f"/hub/admin/api/quota/users/{user}", {"action": "set", "amount": 20})
        assert status == 200, (status, body)

    # The scheduler's first run: the hub's groups are read first, so only alice (in lab) gets 7.
    def first_run():
        got = rows(hub, "SELECT username, amount, description FROM transactions WHERE transaction_type = 'auto_refresh'")
        return got or None

    runs = wait_for("the scheduled lab-topup run", first_run, deadline=150)
    assert runs == [("alice", 7, "Auto add: lab-topup")], runs
    assert balances(hub) == {"alice": 27, "bob": 20, "carol": 20}

    # alice moves from lab to course, bob joins lab: a refresh through REST targets the new lab.
    hub_group(hub, "lab", add=["bob"], remove=["alice"])
    hub_group(hub, "course", add=["alice"], remove=["bob"])
    status, body = hub.admin(
        "POST",
        "/hub/admin/api/quota/refresh",
        {"action": "add", "amount": 5, "rule_name": "lab by hand", "targets": {"includeGroups": ["lab"]}},
    )
    assert status == 200, (status, body)
    assert (body["users_updated"], body["total_change"]) == (1, 5), body
    hand = rows(hub, "SELECT username FROM transactions WHERE description = 'Auto add: lab by hand'")
    assert hand == [("bob",)], hand
    status, detail = hub.admin("GET", "/hub/admin/api/quota/users/alice")
    assert detail["groups"] == ["course"], detail

    # The spawn form lists what each user may start, by their hub groups now.
    status, page = hub.login("carol").get("/hub/spawn")
    assert status == 200 and 'value="tpu"' in page and 'value="phx"' not in page, page
    status, page = hub.login("bob").get("/hub/spawn")
    assert status == 200 and 'value="phx"' in page, page

    # phx is only for lab: bob (a member) starts it, carol (not one) is refused with its own message.
    status, body = hub.spawn("bob", {"runtime_minutes": 5, "gpu_selection": "phx"})
    assert status in (201, 202), (status, body)
    hub.wait_ready("bob")
    status, body = hub.spawn("carol", {"runtime_minutes": 5, "gpu_selection": "phx"})
    assert status == 403, (status, body)
    assert body["message"] == (
        "Cannot start container: accelerator `phx` (PHX) is only for members of the groups lab. "
        "Please contact administrator for access."
    ), body
    assert hub.server_state("carol") is None
    assert rows(hub, "SELECT count(*) FROM sessions WHERE username = 'carol'") == [(0,)]
    # Each user sees what they may start.
    status, acc = hub.api("GET", "/hub/api/accelerators", hub.token_for("carol"))
    assert status == 200 and list(acc["accelerators"]) == ["tpu"], acc
    status, acc = hub.api("GET", "/hub/api/accelerators", hub.token_for("bob"))
    assert list(acc["accelerators"]) == ["phx", "tpu"], acc
    hub.stop_server("bob")

    # quota-hub beside the hub copies its groups through the hub's REST API.
    db = hub.state / "beside.db"
    run = lambda *args: subprocess.run(  # noqa: E731
        [quota_hub_bin, *args, "--db", f"sqlite://{db}"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**hub.env, "JUPYTERHUB_API_TOKEN": hub.admin_token},
    )
    out = run("sync-groups", "--hub-url", hub.url, "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "3 users would change" in out.stdout, out.stdout
    out = run("sync-groups", "--hub-url", hub.url)
    assert out.returncode == 0, out.stderr
    assert "2 groups, 3 users in them; 3 users' groups changed" in out.stdout, out.stdout
    out = run("group", "show", "lab")
    assert out.returncode == 0, out.stderr
    assert yaml.safe_load(out.stdout)["members"] == ["bob"], out.stdout
    # A user removed from every hub group is in none after the next sync.
    hub_group(hub, "course", remove=["carol"])
    out = run("sync-groups", "--hub-url", hub.url + "/hub/api")
    assert "1 users' groups changed" in out.stdout, out.stdout + out.stderr
    out = run("group", "list")
    assert "course  1 members" in out.stdout and "lab  1 members" in out.stdout, out.stdout
    # A token the hub refuses is named as such, and nothing changes.
    bad = subprocess.run(
        [quota_hub_bin, "sync-groups", "--hub-url", hub.url, "--hub-token", "not-a-token", "--db", f"sqlite://{db}"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert bad.returncode != 0 and "HTTP 403" in bad.stderr, bad.stderr
