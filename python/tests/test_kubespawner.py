"""What is billed is what runs, on the real KubeSpawner (7.1) in a real JupyterHub configured as
z2jh configures it (support/kube_config.py runs examples/z2jh/config.yaml's hub.extraConfig, custom
block and profile list), against a fake Kubernetes API on loopback (support/fake_k8s.py) that
records every Pod it is sent and runs its container (the real jupyterhub-singleuser).

A phx spawn makes a Pod that can only schedule on phx nodes (its labels ANDed into z2jh's own
required term) with phx's env; a CPU spawn has neither; a refused spawn makes no Pod; a profile
that names its accelerator is priced, billed and placed by it, over REST and from the hub's own
spawn page (KubeSpawner's profile form with the quota fields below it); a profile that would move
the server without naming one is refused."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from support.hub_process import DEADLINE_S, HERE, Hub, free_port, wait_for

REPO = HERE.parents[2]
EXAMPLE = REPO / "examples" / "z2jh" / "config.yaml"
NODE_PURPOSE = {"key": "hub.jupyter.org/node-purpose", "operator": "In", "values": ["user"]}
# A profile that moves the server without naming an accelerator (added to the example's list).
HIGHMEM = {"display_name": "High memory", "slug": "highmem", "kubespawner_override": {"node_selector": {"pool": "highmem"}}}
# A profile whose own GPU limit disagrees with the accelerator it names (refused naming `profile`).
TWO_GPUS = {"display_name": "Two GPUs", "slug": "two-gpus", "quotaAccelerator": "dgpu",
            "kubespawner_override": {"extra_resource_limits": {"nvidia.com/gpu": "2"}}}
# A course's profile: its spawns charge the course's shared budget (made over REST in the test).
COURSE = {"display_name": "Course 101", "slug": "course", "quotaBudget": "course-101"}


class FakeKubernetes:
    def __init__(self, workdir: Path):
        workdir.mkdir(parents=True, exist_ok=True)
        port_file = workdir / "port"
        self.log = open(workdir / "fake-k8s.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "fake_k8s.py"), str(port_file), str(workdir / "pods")],
            stdout=self.log, stderr=subprocess.STDOUT,
            env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"},
        )
        self.port = int(wait_for("the fake Kubernetes API", lambda: port_file.exists() and port_file.read_text()))
        self.url = f"http://127.0.0.1:{self.port}"
        self.kubeconfig = workdir / "kubeconfig"
        self.kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "hub", "user": {"token": "not-checked"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "hub", "namespace": "quota-test"}}],
        }))

    def created(self) -> list[dict]:
        with urllib.request.urlopen(f"{self.url}/_test/created", timeout=DEADLINE_S) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=DEADLINE_S)
        self.log.close()


@pytest.fixture(scope="module")
def k8s(tmp_path_factory):
    k = FakeKubernetes(tmp_path_factory.mktemp("k8s"))
    yield k
    k.stop()


@pytest.fixture(scope="module")
def hub(tmp_path_factory, k8s):
    state = tmp_path_factory.mktemp("kube-hub")
    h = Hub(state, EXAMPLE, config=HERE / "kube_config.py", extra_env={
        "KUBECONFIG": str(k8s.kubeconfig),
        "QT_Z2JH_VALUES": str(EXAMPLE),
        "QT_EXTRA_PROFILES": json.dumps([HIGHMEM, COURSE, TWO_GPUS]),
        "QT_SINGLEUSER_PORT": str(free_port()),
        "QUOTA_DB_URL": f"sqlite://{state / 'quota.sqlite'}",
    }).start()
    yield h
    h.stop()


def set_quota(hub: Hub, user: str, amount: int) -> None:
    status, body = hub.admin("POST", f"/hub/admin/api/quota/users/{user}", {"action": "set", "amount": amount})
    assert status == 200, (status, body)


def session(hub: Hub, user: str) -> tuple:
    conn = sqlite3.connect(hub.quota_db())
    try:
        return conn.execute(
            "SELECT resource_type, rate_milli, runtime_minutes, status, cost FROM sessions WHERE username = ? ORDER BY id DESC", (user,)
        ).fetchone()
    finally:
        conn.close()


def usage(hub: Hub, user: str) -> list:
    conn = sqlite3.connect(hub.quota_db())
    try:
        return [r[0] for r in conn.execute("SELECT amount FROM transactions WHERE username = ? AND transaction_type = 'usage'", (user,))]
    finally:
        conn.close()


def the_new_pod(k8s: FakeKubernetes, before: int) -> dict:
    pods = k8s.created()[before:]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return pods[0]


def required_terms(pod: dict) -> list:
    return pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def env_of(pod: dict) -> dict:
    return {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}


def start_and_stop(hub: Hub, k8s: FakeKubernetes, user: str, options: dict) -> dict:
    before = len(k8s.created())
    status, body = hub.spawn(user, options)
    assert status in (201, 202), (status, body)
    hub.wait_ready(user)
    pod = the_new_pod(k8s, before)
    hub.stop_server(user)
    return pod


def test_a_phx_spawn_makes_a_pod_that_only_schedules_on_phx_nodes_with_phx_env(hub, k8s):
    set_quota(hub, "alice", 100)
    pod = start_and_stop(hub, k8s, "alice", {"runtime_minutes": 5, "gpu_selection": "phx"})
    # One term: z2jh's node purpose AND the accelerator's label (a second term would be ORed).
    assert required_terms(pod) == [{"matchExpressions": [NODE_PURPOSE, {"key": "accelerator", "operator": "In", "values": ["phx"]}]}]
    env = env_of(pod)
    assert env["PHX_VISIBLE_DEVICES"] == "all" and env["HUB_WIDE"] == "from the operator", env
    assert "NVIDIA_DRIVER_CAPABILITIES" not in env
    resource, rate, runtime, status, cost = session(hub, "alice")
    assert (resource, rate, runtime, status) == ("phx", 2000, 5, "completed")
    assert usage(hub, "alice") == [-cost] and cost >= 2


def test_a_gpu_chosen_on_the_standard_profile_is_allocated_and_its_taint_tolerated(hub, k8s):
    """The issue's case: "Standard environment" with dgpu (or amdgpu) chosen gets the device
    (the container's limit) and tolerates the GPU pool's taint, not only the node label."""
    for user, accel, device in (("ivy", "dgpu", "nvidia.com/gpu"), ("jay", "amdgpu", "amd.com/gpu")):
        set_quota(hub, user, 100)
        pod = start_and_stop(hub, k8s, user, {"profile": "standard", "runtime_minutes": 5, "gpu_selection": accel})
        assert required_terms(pod) == [{"matchExpressions": [NODE_PURPOSE, {"key": "accelerator", "operator": "In", "values": [accel]}]}]
        assert pod["spec"]["containers"][0]["resources"]["limits"][device] == "1", pod["spec"]["containers"][0]["resources"]
        assert {"key": device, "operator": "Exists", "effect": "NoSchedule"} in pod["spec"]["tolerations"], pod["spec"]["tolerations"]
        assert session(hub, user)[:4] == (accel, 4000, 5, "completed")
    # What a user reads of them: /api/accelerators shows the device and the toleration.
    status, body = hub.api("GET", "/hub/api/accelerators", hub.token_for("ivy"))
    assert status == 200, body
    dgpu = body["accelerators"]["dgpu"]
    assert dgpu["resources"] == {"limits": {"nvidia.com/gpu": "1"}}, dgpu
    assert dgpu["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], dgpu
    assert "resources" not in body["accelerators"]["phx"] and "tolerations" not in body["accelerators"]["phx"]


def test_a_cpu_spawn_keeps_what_the_operator_configured(hub, k8s):
    set_quota(hub, "bob", 100)
    pod = start_and_stop(hub, k8s, "bob", {"runtime_minutes": 5})
    assert required_terms(pod) == [{"matchExpressions": [NODE_PURPOSE]}]
    limits = (pod["spec"]["containers"][0].get("resources") or {}).get("limits") or {}
    assert not any(k.endswith("/gpu") for k in limits), limits
    assert not any(t.get("key", "").endswith("/gpu") for t in pod["spec"].get("tolerations") or []), pod["spec"].get("tolerations")
    env = env_of(pod)
    assert env["HUB_WIDE"] == "from the operator"
    assert "PHX_VISIBLE_DEVICES" not in env and "NVIDIA_DRIVER_CAPABILITIES" not in env
    assert session(hub, "bob")[:4] == ("cpu", 1000, 5, "completed")


def test_a_refused_spawn_makes_no_pod(hub, k8s):
    set_quota(hub, "carl", 5)
    before = len(k8s.created())
    status, body = hub.spawn("carl", {"runtime_minutes": 5, "gpu_selection": "phx"})
    assert status == 403 and body["message"].startswith("Cannot start container: Insufficient quota."), (status, body)
    assert len(k8s.created()) == before
    assert session(hub, "carl") is None


def test_a_profile_that_names_its_accelerator_is_priced_billed_and_placed_by_it(hub, k8s):
    # 25 credits do not buy 10 minutes of the GPU profile (4/min): the example.
    set_quota(hub, "dora", 25)
    before = len(k8s.created())
    status, body = hub.spawn("dora", {"profile": "gpu", "runtime_minutes": 10})
    assert status == 403, (status, body)
    assert "estimated cost: 40 (4 quota/min x 10 min)" in body["message"], body
    assert len(k8s.created()) == before
    set_quota(hub, "dora", 100)
    pod = start_and_stop(hub, k8s, "dora", {"profile": "gpu", "runtime_minutes": 10})
    assert required_terms(pod) == [{"matchExpressions": [NODE_PURPOSE, {"key": "accelerator", "operator": "In", "values": ["dgpu"]}]}]
    assert env_of(pod)["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    resource, rate, runtime, status, cost = session(hub, "dora")
    assert (resource, rate, runtime, status) == ("dgpu", 4000, 10, "completed")
    assert usage(hub, "dora") == [-cost] and cost >= 4


def test_a_profile_with_quota_budget_charges_the_course_not_the_student(hub, k8s):
    status, body = hub.admin("PUT", "/hub/admin/api/quota/budgets/course-101", {"users": ["fred"]})
    assert status == 200, (status, body)
    status, body = hub.admin("POST", "/hub/admin/api/quota/budgets/course-101", {"action": "add", "amount": 100})
    assert status == 200, (status, body)
    set_quota(hub, "fred", 0)  # nothing of his own: the course pays
    start_and_stop(hub, k8s, "fred", {"profile": "course", "runtime_minutes": 10})
    conn = sqlite3.connect(hub.quota_db())
    try:
        budget, status_, cost = conn.execute(
            "SELECT budget, status, cost FROM sessions WHERE username = 'fred' ORDER BY id DESC").fetchone()
        charged = conn.execute(
            "SELECT amount FROM transactions WHERE budget = 'course-101' AND transaction_type = 'usage'").fetchall()
    finally:
        conn.close()
    assert (budget, status_) == ("course-101", "completed")
    assert charged == [(-cost,)] and cost >= 1
    status, detail = hub.admin("GET", "/hub/admin/api/quota/budgets/course-101")
    assert status == 200 and detail["balance"] == 100 - cost, detail
    status, fred = hub.admin("GET", "/hub/admin/api/quota/users/fred")
    assert fred["balance"] == 0, fred
    # Not a member: refused with the budget's text, and no pod.
    set_quota(hub, "gina", 1000)
    before = len(k8s.created())
    status, body = hub.spawn("gina", {"profile": "course", "runtime_minutes": 10})
    assert status == 403, (status, body)
    assert "gina is not a member of budget course-101" in body["message"], body
    assert len(k8s.created()) == before


@pytest.mark.parametrize(
    "options, field",
    [
        ({"profile": "gpu", "gpu_selection": "phx", "runtime_minutes": 5}, "gpu_selection"),
        ({"profile": "highmem", "runtime_minutes": 5}, "profile"),
        ({"profile": "no-such-profile", "runtime_minutes": 5}, "profile"),
        ({"profile": ["gpu"], "runtime_minutes": 5}, "profile"),
        ({"profile": "two-gpus", "runtime_minutes": 5}, "profile"),
    ],
    ids=["accelerator-not-the-profiles", "moves-without-a-price", "unknown", "a-list", "limit-not-the-accelerators"],
)
def test_options_that_would_place_without_pricing_are_refused_naming_the_option(hub, k8s, options, field):
    set_quota(hub, "erin", 1000)
    before = len(k8s.created())
    status, body = hub.spawn("erin", options)
    assert status == 400, (status, body)
    assert body["message"].startswith(f"{field}:"), body
    assert len(k8s.created()) == before
    assert session(hub, "erin") is None


def test_a_form_post_reaches_kubespawners_own_parser(hub, k8s):
    """The spawn page posts lists of strings: `profile` goes through KubeSpawner's parser (a list
    would be refused), the quota keys through the package's."""
    set_quota(hub, "fay", 100)
    before = len(k8s.created())
    browser = hub.login("fay")
    status, _ = browser.post("/hub/spawn/fay", {"profile": "gpu", "runtime_minutes": "3"})
    assert status < 400, status
    hub.wait_ready("fay")
    pod = the_new_pod(k8s, before)
    hub.stop_server("fay")
    assert required_terms(pod)[0]["matchExpressions"][-1]["values"] == ["dgpu"]
    assert session(hub, "fay")[:3] == ("dgpu", 4000, 3)


def test_the_hub_logs_the_packages_decisions(hub):
    log = hub.log()
    assert "Loading extra config: quota.py" in log
    assert "quota: enabled" in log
    assert 'profile: "highmem" changes where the server runs (node_selector) but names no quotaAccelerator' in log


def test_the_spawn_page_keeps_the_profiles_and_prices_the_chosen_one(hub, k8s, browser):
    """KubeSpawner's own profile form, with the quota fields below it: the accelerator choice
    prices the standard profile; the GPU profile hides it and is priced, started and billed as
    dgpu."""
    from support.chromium import login

    set_quota(hub, "gus", 100)
    ctx, page = login(browser, hub, "gus", "/hub/spawn")
    try:
        page.wait_for_function("window.quotaSpawn && window.quotaSpawn.state !== undefined")
        assert page.evaluate("window.quotaSpawn.state") == "ready", page.evaluate("window.quotaSpawn.error")
        # KubeSpawner's form: every profile, by name.
        profiles = page.locator("#kubespawner-profiles-list")
        for name in ("Standard environment", "GPU workstation", "High memory"):
            assert profiles.get_by_text(name, exact=True).is_visible(), name
        # The quota fields below it.
        assert page.locator("#quota-balance").text_content() == "100 credits"
        runtime = page.get_by_label("Runtime (minutes, 1-480)")
        runtime.fill("10")
        page.get_by_label("PHX").check()
        page.wait_for_function("document.getElementById('quota-cost').textContent.startsWith('20 ')")
        # The GPU profile names its accelerator: the choice goes away, the price is the GPU's.
        page.locator("#profile-item-gpu").check()
        page.wait_for_function("document.getElementById('quota-cost').textContent.startsWith('40 ')")
        assert page.locator("#quota-cost").text_content() == "40 credits (4 credits/min x 10 minutes)"
        assert not page.locator("#quota-accelerators").is_visible()
        assert page.locator("#quota-profile-accelerator").text_content() == "This profile runs on Data-center GPU."
        # A profile that moves the server without a price is refused before the click.
        page.locator("#profile-item-highmem").check()
        page.wait_for_function("document.getElementById('quota-cost-note').textContent.includes('refuse')")
        assert page.get_by_role("button", name="Start").is_disabled()
        page.locator("#profile-item-gpu").check()
        page.wait_for_function("!document.querySelector('#spawn_form [type=submit], form [type=submit]').disabled")
        before = len(k8s.created())
        page.get_by_role("button", name="Start").click()
        wait_for("gus's server", lambda: hub.server_state("gus") is not None)
    finally:
        ctx.close()
    hub.wait_ready("gus")
    pod = the_new_pod(k8s, before)
    hub.stop_server("gus")
    assert required_terms(pod)[0]["matchExpressions"][-1]["values"] == ["dgpu"]
    resource, rate, runtime_minutes, status, cost = session(hub, "gus")
    assert (resource, rate, runtime_minutes, status) == ("dgpu", 4000, 10, "completed")
    assert usage(hub, "gus") == [-cost]


def test_a_cronjobs_refresh_runs_through_the_hub_once(hub, quota_hub_bin):
    """docs/z2jh.md's CronJob alternative: what each Job runs (`quota-hub refresh --url` with the
    rule and its scheduled run id) against the hub's own refresh route, with a hub service token
    that may only refresh. A retried Job applies nothing again."""
    import yaml

    rule = yaml.safe_load(EXAMPLE.read_text())["custom"]["quota"]["refreshRules"]["weekly-topup"]
    set_quota(hub, "hana", 10)
    set_quota(hub, "ivan", 900)
    argv = [quota_hub_bin, "refresh", "weekly-topup", "--url", f"{hub.url}/hub", "--rule-json", json.dumps(rule),
            "--run-id", "weekly-topup@2026-11-23T06:00:00Z"]
    env = {**os.environ, "QUOTA_HUB_TOKEN": hub.cron_token}
    for attempt in (1, 2):
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=DEADLINE_S)
        assert out.returncode == 0, (attempt, out.stdout, out.stderr)
        for user, want in (("hana", 210), ("ivan", 1000)):  # add 200, capped at maxBalance 1000
            status, body = hub.admin("GET", f"/hub/admin/api/quota/users/{user}")
            assert body["balance"] == want, (attempt, user, body)
    status, body = hub.api("GET", "/hub/admin/api/quota/", hub.cron_token)
    assert status == 403, (status, body)


def test_the_spawn_page_shows_users_prices_not_the_accelerators_environment(hub):
    set_quota(hub, "hal", 10)
    status, page = hub.login("hal").get("/hub/spawn")
    assert status == 200, status
    assert 'id="kubespawner-profiles-list"' in page and 'id="quota-runtime"' in page
    assert "PHX_VISIBLE_DEVICES" not in page and "NVIDIA_DRIVER_CAPABILITIES" not in page
    assert "refreshRules" not in page and "weekly-topup" not in page
