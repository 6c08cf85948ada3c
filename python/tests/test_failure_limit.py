"""A quota refusal (403) or a bad spawn option (400) is the user's answer, not a failed spawn: with
`c.Spawner.consecutive_failure_limit` set (z2jh sets 5), any number of them in a row leave the hub
running and its failure count where it was, on JupyterHub 5 (which counts every exception of a
spawn; `failures.py` undoes the count) and 6 (which counts only errors). A real spawner failure
after the gate (the server's command does not exist) still counts, as without the package.

The README's test command runs this file in a JupyterHub 6 and a JupyterHub 5 virtualenv. The
hub's own log lines are the count: "<n> consecutive spawns failed" when 1 < n < limit, and
"Aborting due to <n> consecutive spawn failures" before it exits."""

from __future__ import annotations

import jupyterhub
import pytest

from support.hub_process import HERE, Hub, wait_for
from jupyterhub_quota.hub.failures import COUNTS_REFUSALS

VALUES = HERE / "hub_values.yaml"


def hub_with_limit(tmp_path, limit: int) -> Hub:
    return Hub(tmp_path / "hub", VALUES, extra_env={"QT_EXTRA_PRE_SPAWN": "1", "QT_FAILURE_LIMIT": str(limit)}).start()


def set_quota(hub: Hub, user: str, amount: int) -> None:
    status, body = hub.admin("POST", f"/hub/admin/api/quota/users/{user}", {"action": "set", "amount": amount})
    assert status == 200, (status, body)


def fail_for_real(hub: Hub, user: str) -> None:
    """A spawn the gate allows and the spawner then fails (its command does not exist)."""
    status, body = hub.spawn(user, {"runtime_minutes": 5})
    assert status >= 500, (status, body)
    hub.wait_stopped(user)


def refuse_in_a_row(hub: Hub, refusals: int, bad_options: int) -> None:
    for _ in range(refusals):
        status, body = hub.spawn("poor", {"runtime_minutes": 5})
        assert status == 403 and body["message"].startswith("Cannot start container: Insufficient quota."), (status, body)
    for i in range(bad_options):
        options = [{"runtime_minutes": "abc"}, {"runtime_minutes": 481}, {"gpu_selection": "tpu"}][i % 3]
        status, body = hub.spawn("rich", options)
        assert status == 400, (status, body)
    assert hub.exited() is None, hub.log()[-3000:]
    assert hub.api("GET", "/hub/api/")[0] == 200


def test_the_package_knows_which_hubs_count_refusals():
    assert COUNTS_REFUSALS == (jupyterhub.version_info[0] < 6)


def test_refusals_in_a_row_leave_the_hub_up_and_the_count_as_it_was(tmp_path):
    hub = hub_with_limit(tmp_path, 5)
    try:
        for user, amount in (("broken", 100), ("rich", 1000), ("poor", 0)):
            set_quota(hub, user, amount)
        fail_for_real(hub, "broken")  # count 1
        refuse_in_a_row(hub, refusals=10, bad_options=5)
        assert "consecutive spawns failed" not in hub.log()
        fail_for_real(hub, "broken")  # count 2: the refusals between did not count
        wait_for("the hub's count of 2", lambda: "2 consecutive spawns failed" in hub.log())
        assert "Aborting" not in hub.log()
        # A user with credit still spawns (and a success resets the count).
        status, body = hub.spawn("rich", {"runtime_minutes": 5})
        assert status in (201, 202), (status, body)
        hub.wait_ready("rich")
        hub.stop_server("rich")
        assert hub.exited() is None
    finally:
        hub.stop()


def test_real_failures_still_stop_the_hub_at_the_limit(tmp_path):
    hub = hub_with_limit(tmp_path, 2)
    try:
        for user, amount in (("broken", 100), ("rich", 1000), ("poor", 0)):
            set_quota(hub, user, amount)
        fail_for_real(hub, "broken")
        refuse_in_a_row(hub, refusals=10, bad_options=3)
        assert "Aborting" not in hub.log()
        status, body = hub.spawn("broken", {"runtime_minutes": 5})
        assert status >= 500, (status, body)
        code = wait_for("the hub to exit after its second real failure", hub.exited)
        assert code == 1, code
        assert "Aborting due to 2 consecutive spawn failures" in hub.log()
    finally:
        hub.stop()


@pytest.mark.skipif(not COUNTS_REFUSALS, reason="JupyterHub 6 does not count refusals: nothing is undone")
def test_on_jupyterhub_5_the_hub_itself_would_count_a_refusal(tmp_path):
    """Pins the internal the package relies on: without its undo, JupyterHub 5 counts a 403 from
    a pre_spawn_hook (so the undo is what keeps the hub up above)."""
    hub = Hub(tmp_path / "hub", VALUES, quota_kwargs={}, extra_env={"QT_FAILURE_LIMIT": "5", "QT_NO_UNDO": "1"}).start()
    try:
        set_quota(hub, "poor", 0)
        for _ in range(2):
            status, body = hub.spawn("poor", {"runtime_minutes": 5})
            assert status == 403, (status, body)
        wait_for("JupyterHub 5's own count", lambda: "2 consecutive spawns failed" in hub.log())
    finally:
        hub.stop()
