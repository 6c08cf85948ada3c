"""deploy/helm/quota-hub rendered offline by Helm's own Go SDK (helm-python-sdk: no helm binary can
be installed here) and read back field by field:

- with the default values (one replica on SQLite, a PersistentVolumeClaim) and with every option on
  (PostgreSQL replicas, a PodDisruptionBudget, an Ingress, a ServiceMonitor, alerts, a dashboard,
  scheduling and pull settings, extra env and args);
- every object validated against the Kubernetes OpenAPI schemas of the oldest and the newest
  Kubernetes the chart declares (`kubeVersion`), from the `kubernetes-validate` package;
- the schema refusing a misspelled key or a bad type; two releases in one namespace sharing no
  name; the refresh CronJobs equal to `quota-hub render-cronjobs`'s;
- the rendered files working: quota-hub starts on the rendered values and tokens files, and the
  rendered refresh token refreshes (the dashboard and the alerts: test_chart_monitoring.py)."""

from __future__ import annotations

import base64
import json
import os
import subprocess

import kubernetes_validate
import pytest
import yaml

import helm_python as helm  # noqa: E402  (pinned in requirements-test.txt)

from support.chart import BUILT_IN, CHART, FULL, QUOTA_HUB, REPO, RULES, VERSION, kinds, notes, pod_spec, render


def test_the_chart_lints_for_every_declared_kubernetes():
    for kube in ("1.30.0", "1.37.0"):
        for values in ({}, FULL):
            r = helm.lint(str(CHART), values, strict=True, kube_version=kube)
            assert r["errors"] == [], r


def test_the_default_install_is_one_hardened_replica_on_sqlite():
    docs = render({})
    assert sorted(d["kind"] for d in docs) == ["ConfigMap", "Deployment", "PersistentVolumeClaim", "Pod", "Secret", "Service"]
    (test_pod,) = kinds(docs, "Pod")
    assert test_pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    for d in docs:
        labels = d["metadata"]["labels"]
        assert d["metadata"]["name"].startswith("rel-quota-hub"), d["metadata"]["name"]
        assert labels["helm.sh/chart"] == f"quota-hub-{VERSION}" and labels["app.kubernetes.io/version"] == VERSION
        assert labels["app.kubernetes.io/instance"] == "rel"
    (dep,) = kinds(docs, "Deployment")
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"] == {"type": "Recreate"}
    pod = pod_spec(dep)
    assert pod["automountServiceAccountToken"] is False and "serviceAccountName" not in pod
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (c,) = pod["containers"]
    assert c["image"] == f"ghcr.io/quota-engine/quota-hub:{VERSION}", "where the release pushes it"
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
    assert c["startupProbe"]["httpGet"]["path"] == "/hub/healthz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/hub/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/hub/readyz"
    env = {e["name"]: e for e in c["env"]}
    assert env["QUOTA_HUB_DB"]["value"] == "sqlite:///data/quota.db"
    # The migration is its own step before the server (docs/upgrade.md): the file backed up first.
    (m,) = pod["initContainers"]
    assert m["name"] == "migrate" and m["image"] == c["image"] and m["securityContext"] == c["securityContext"]
    assert m["args"] == ["migrate", "--backup-dir", "/data/pre-migration"], "pre-migration backups: never pruned"
    assert {e["name"]: e["value"] for e in m["env"]} == {"QUOTA_HUB_VALUES": "/etc/quota/config/values.yaml", "QUOTA_HUB_DB": env["QUOTA_HUB_DB"]["value"]}
    assert {v["name"] for v in m["volumeMounts"]} == {"config", "cache", "tmp", "data"}
    assert "migrate" not in c["args"]
    assert env["QUOTA_HUB_TOKENS"]["value"] == "/etc/quota/config/tokens.yaml"
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert {"/data", "/var/cache/quota-engine", "/tmp", "/etc/quota/config", "/etc/quota/tokens"} <= set(mounts)
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "rel-quota-hub-data"
    (pvc,) = kinds(docs, "PersistentVolumeClaim")
    assert pvc["spec"]["resources"]["requests"]["storage"] == "1Gi"
    assert pvc["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    (secret,) = kinds(docs, "Secret")
    for key in ("refresh", "metrics"):
        assert len(base64.b64decode(secret["data"][key])) == 48
    assert "port-forward svc/rel-quota-hub 8765" in notes({})


def test_every_option_on():
    docs = render(FULL)
    assert {"Ingress", "PodDisruptionBudget", "ServiceMonitor", "PrometheusRule"} <= {d["kind"] for d in docs}
    assert "PersistentVolumeClaim" not in {d["kind"] for d in docs}
    assert kinds(docs, "Secret") == [], "an existing Secret is used"
    (dep,) = kinds(docs, "Deployment")
    assert dep["spec"]["replicas"] == 3 and "strategy" not in dep["spec"]
    pod = pod_spec(dep)
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    assert (pod["nodeSelector"], pod["tolerations"]) == (FULL["nodeSelector"], FULL["tolerations"])
    assert pod["affinity"] == FULL["affinity"]
    assert pod["serviceAccountName"] == "rel-quota-hub" and pod["priorityClassName"] == "services-high"
    assert pod["topologySpreadConstraints"] == FULL["topologySpreadConstraints"] and pod["initContainers"] == FULL["initContainers"]
    # PostgreSQL: the migration is a hook Job before the servers change, pg_dump first.
    (job,) = kinds(docs, "Job")
    hook = job["metadata"]["annotations"]
    assert hook["helm.sh/hook"] == "pre-install,pre-upgrade" and hook["helm.sh/hook-delete-policy"] == "before-hook-creation"
    (hook_values,) = [d for d in kinds(docs, "ConfigMap") if d["metadata"]["name"] == "rel-quota-hub-migrate"]
    assert int(hook_values["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(hook["helm.sh/hook-weight"])
    jpod = pod_spec(job)
    (dump,) = jpod["initContainers"]
    assert dump["name"] == "pg-dump" and "pg_dump --format=custom" in dump["args"][0] and "tail -n +5" in dump["args"][0]
    assert {"name": "backups", "persistentVolumeClaim": {"claimName": "pg-dumps"}} in jpod["volumes"]
    (mc,) = jpod["containers"]
    assert mc["args"] == ["migrate"] and mc["image"] == "ghcr.io/quota-engine/quota-hub@sha256:" + "ab" * 32
    assert {e["name"]: e.get("valueFrom") for e in mc["env"]}["QUOTA_HUB_DB"] == {"secretKeyRef": {"name": "pg", "key": "url"}}
    assert jpod["restartPolicy"] == "Never" and jpod["securityContext"]["runAsNonRoot"] is True
    # The Job pods' labels and annotations (a mesh sidecar kept out), as the CronJobs' pods get them.
    with_mesh = render({**FULL, "cronjobs": {"podAnnotations": {"sidecar.istio.io/inject": "false"}, "podLabels": {"tier": "jobs"}}})
    (jmeta,) = [d["spec"]["template"]["metadata"] for d in kinds(with_mesh, "Job")]
    assert jmeta["annotations"] == {"sidecar.istio.io/inject": "false", **FULL["podAnnotations"]}, jmeta
    assert jmeta["labels"]["tier"] == "jobs" and jmeta["labels"]["app.kubernetes.io/component"] == "migrate"
    (sa,) = kinds(docs, "ServiceAccount")
    assert sa["metadata"]["name"] == "rel-quota-hub" and sa["metadata"]["annotations"] == {"iam.example.org/role": "quota"}
    (c,) = pod["containers"]
    assert c["image"] == "ghcr.io/quota-engine/quota-hub@sha256:" + "ab" * 32, "a digest pins the image"
    assert c["envFrom"] == FULL["extraEnvFrom"] and FULL["extraVolumeMounts"][0] in c["volumeMounts"]
    assert FULL["extraVolumes"][0] in pod["volumes"]
    (policy,) = kinds(docs, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "server"
    own, added = policy["spec"]["ingress"]
    sources = own["from"]
    assert {"podSelector": {"matchLabels": {"rel-quota-hub-client": "true"}}} in sources
    assert added == FULL["networkPolicy"]["ingress"][0], "networkPolicy.ingress entries are rules"
    for job in kinds(docs, "CronJob"):
        # The release's own Jobs are let through.
        labels = job["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in sources[0]["podSelector"]["matchLabels"].items())
    assert c["args"][-2:] == ["--log-format", "json"]
    env = {e["name"]: e for e in c["env"]}
    assert env["QUOTA_HUB_DB"]["valueFrom"]["secretKeyRef"] == {"name": "pg", "key": "url"}
    assert env["RUST_LOG"]["value"] == "info" and env["QUOTA_HUB_NO_SCHEDULER"]["value"] == "true"
    assert dep["spec"]["template"]["metadata"]["annotations"]["team"] == "research"
    (pdb,) = kinds(docs, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    (sm,) = kinds(docs, "ServiceMonitor")
    (ep,) = sm["spec"]["endpoints"]
    assert ep["path"] == "/hub/metrics" and ep["authorization"]["credentials"] == {"name": "my-tokens", "key": "metrics"}
    assert sm["metadata"]["labels"]["release"] == "prometheus"
    (svc,) = kinds(docs, "Service")
    assert all(svc["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items())
    tokens = yaml.safe_load(next(d for d in kinds(docs, "ConfigMap") if d["metadata"]["name"] == "rel-quota-hub-config")["data"]["tokens.yaml"])
    assert [(t["name"], t["scopes"]) for t in tokens] == [("rel-quota-hub-refresh", ["quota:refresh"]), ("rel-quota-hub-prometheus", ["quota:metrics"])]
    (ing,) = kinds(docs, "Ingress")
    path = ing["spec"]["rules"][0]["http"]["paths"][0]
    assert (path["path"], path["backend"]["service"]["name"]) == ("/hub", "rel-quota-hub")
    for job in kinds(docs, "CronJob"):
        jpod = pod_spec(job)
        assert jpod["automountServiceAccountToken"] is False and jpod["nodeSelector"] == FULL["nodeSelector"]
        (jc,) = jpod["containers"]
        assert jc["securityContext"]["readOnlyRootFilesystem"] is True and jc["resources"]["limits"]["memory"]
        assert jc["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "my-tokens", "key": "refresh"}


@pytest.mark.parametrize("kube", ["1.30.0", "1.37.0"])
@pytest.mark.parametrize("values", [{}, FULL], ids=["default", "full"])
def test_every_object_is_valid_kubernetes(values, kube):
    checked = 0
    for d in render(values):
        if d["kind"] in BUILT_IN:
            kubernetes_validate.validate(d, kube, strict=True)
            checked += 1
        else:
            # Prometheus Operator objects: their CRDs are not Kubernetes' schemas.
            assert d["apiVersion"] == "monitoring.coreos.com/v1" and d["kind"] in ("ServiceMonitor", "PrometheusRule"), d["kind"]
    assert checked >= 5


@pytest.mark.parametrize(
    "values, says",
    [
        ({"replica": 2}, "replica"),
        ({"replicas": "two"}, "/replicas"),
        ({"database": {"type": "mysql"}}, "/database/type"),
        ({"image": {"repositry": "x"}}, "repositry"),
        ({"service": {"port": 70000}}, "/service/port"),
        ({"custom": {"quota": {"cpurate": 2}}}, "cpurate"),
        ({"custom": {"quota": {"refreshRules": {"r": {"schedule": "0 * * * *", "amount": "ten"}}}}}, "amount"),
        ({"custom": {"accelerators": {"phx": {"quotaRate": "two"}}}}, "quotaRate"),
        ({"metrics": {"serviceMonitor": {"enabeld": True}}}, "enabeld"),
    ],
)
def test_the_schema_refuses_a_misspelled_key_or_a_bad_type(values, says):
    with pytest.raises(helm.HelmError) as e:
        render(values)
    assert says in str(e.value), str(e.value)


BACKUP = {"backup": {"enabled": True, "keep": 3, "schedule": "15 1 * * *"}, "podLabels": {"team": "ml"}}


@pytest.mark.parametrize("kube", ["1.30.0", "1.37.0"])
def test_the_backup_cronjob_is_valid_kubernetes_and_runs_beside_the_server(kube):
    docs = render(BACKUP)
    [job] = [d for d in kinds(docs, "CronJob") if d["metadata"]["name"] == "rel-quota-hub-backup"]
    [claim] = [d for d in kinds(docs, "PersistentVolumeClaim") if d["metadata"]["name"] == "rel-quota-hub-backup"]
    for d in (job, claim):
        kubernetes_validate.validate(d, kube, strict=True)
    assert helm.lint(str(CHART), BACKUP, strict=True, kube_version=kube)["errors"] == []
    pod = pod_spec(job)
    server = kinds(docs, "Deployment")[0]["spec"]["template"]
    [term] = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert all(server["metadata"]["labels"].get(k) == v for k, v in term["labelSelector"]["matchLabels"].items())
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v}
    assert claims == {"data": "rel-quota-hub-data", "backups": "rel-quota-hub-backup"}
    assert job["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]["team"] == "ml"
    assert job["spec"]["schedule"] == "15 1 * * *"


def test_the_backup_cronjobs_command_backs_up_and_keeps_the_newest(tmp_path, quota_hub_bin):
    """The rendered container's arguments, its mount paths moved under a temporary folder, run by
    the real binary against a database with a user: a checked backup in the backups folder."""
    docs = render(BACKUP)
    [job] = [d for d in kinds(docs, "CronJob") if d["metadata"]["name"] == "rel-quota-hub-backup"]
    cm = next(d for d in kinds(docs, "ConfigMap") if d["metadata"]["name"] == "rel-quota-hub-config")
    (c,) = pod_spec(job)["containers"]
    for mount in ("data", "backups", "config"):
        (tmp_path / mount).mkdir()
    (tmp_path / "config" / "values.yaml").write_text(cm["data"]["values.yaml"])
    moved = {"/data/": f"{tmp_path}/data/", "/backups/": f"{tmp_path}/backups/", "/etc/quota/config/": f"{tmp_path}/config/"}
    args = [next((a.replace(k, v) for k, v in moved.items() if k in a), a) for a in c["args"]]
    db = f"sqlite://{tmp_path}/data/quota.db"
    subprocess.run([quota_hub_bin, "set-quota", "--db", db, "--values", str(tmp_path / "config" / "values.yaml"), "ann", "--amount", "7"],
                   check=True, capture_output=True)
    for old in ("quota-20200101T000000Z.db", "quota-20210101T000000Z.db", "quota-20220101T000000Z.db"):
        (tmp_path / "backups" / old).write_text("old")
    env = {e["name"]: e["value"] for e in c["env"]}
    out = subprocess.run([quota_hub_bin, *args], capture_output=True, text=True, env={**os.environ, **env})
    assert out.returncode == 0, out.stdout + out.stderr
    backups = sorted(p.name for p in (tmp_path / "backups").iterdir() if p.suffix == ".db")
    assert len(backups) == 3 and backups[0] == "quota-20210101T000000Z.db", backups
    state = json.loads((tmp_path / "backups" / "backup-state.json").read_text())
    newest = (tmp_path / "backups" / backups[-1]).stat()
    assert state["last_bytes"] == newest.st_size and state["failures"] == 0 and state["last_success"] > 0, state
    assert "1 users" in out.stdout and "every balance equals its ledger" in out.stdout, out.stdout


@pytest.mark.parametrize("kube", ["1.30.0", "1.37.0"])
def test_the_backup_may_be_copied_by_a_command_of_the_operators_after_it_is_taken(kube):
    """backup.copy: the backup runs first (an init container, the same as without a copy), then the
    operator's image and command see the folder read-only; never required (without it, no copy)."""
    copy = {"image": "rclone/rclone:1.68.2", "command": ["rclone", "copy", "/backups", "remote:quota-backups"],
            "envFrom": [{"secretRef": {"name": "rclone-remote"}}]}
    plain = pod_spec([d for d in kinds(render(BACKUP), "CronJob") if d["metadata"]["name"] == "rel-quota-hub-backup"][0])
    assert "initContainers" not in plain and [c["name"] for c in plain["containers"]] == ["backup"]
    values = {**BACKUP, "backup": {**BACKUP["backup"], "copy": copy}}
    [job] = [d for d in kinds(render(values), "CronJob") if d["metadata"]["name"] == "rel-quota-hub-backup"]
    kubernetes_validate.validate(job, kube, strict=True)
    pod = pod_spec(job)
    [backup] = pod["initContainers"]
    assert backup == plain["containers"][0], "the same backup, first"
    [c] = pod["containers"]
    assert (c["image"], c["command"], c["envFrom"]) == (copy["image"], copy["command"], copy["envFrom"])
    assert {"name": "backups", "mountPath": "/backups", "readOnly": True} in c["volumeMounts"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    with pytest.raises(helm.HelmRenderError, match="backup.copy.command"):
        render({**BACKUP, "backup": {**BACKUP["backup"], "copy": {"image": "rclone/rclone:1.68.2"}}})


def test_a_backup_of_postgres_is_refused_pointing_at_pg_dump():
    with pytest.raises(helm.HelmRenderError) as e:
        render({**BACKUP, "database": {"type": "postgres"}, "replicas": 2})
    assert "pg_dump" in str(e.value)


def test_sqlite_with_several_replicas_is_refused_with_the_reason():
    with pytest.raises(helm.HelmRenderError) as e:
        render({"replicas": 2})
    assert "replicas: 2 replicas need database.type postgres" in str(e.value)


def test_two_releases_share_a_namespace_without_a_clash():
    names = [{(d["kind"], d["metadata"]["name"]) for d in render(FULL, name=n)} for n in ("one", "two")]
    assert names[0] and not names[0] & names[1]
    assert all(n.startswith("one-") for _, n in names[0])
    # Full names stay within the limits of every object kind, overrides included.
    short = {(d["kind"], d["metadata"]["name"]) for d in render({**FULL, "fullnameOverride": "quota"})}
    assert ("Deployment", "quota") in short and ("CronJob", "quota-refresh-weekly-topup") in short


def test_scripts_manage_users_finds_the_chart_s_deployment_by_default():
    """The release docs/deploy.md installs (`helm install quota-hub ...`) is the Deployment the
    spec's command line exec's into without options."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("manage_users", REPO / "scripts" / "manage_users.py")
    manage_users = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(manage_users)
    default = manage_users.parse(["list-quota"]).deployment
    assert [d["metadata"]["name"] for d in kinds(render({}, name="quota-hub"), "Deployment")] == [default]


def test_the_chart_makes_the_jobs_render_cronjobs_makes(tmp_path):
    assert QUOTA_HUB.exists(), "needs target/debug/quota-hub: cargo build -p quota-hub (the README's test command does)"
    values = {"custom": {"authMode": "github", "quota": {"refreshRules": RULES}}}
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    out = subprocess.run([str(QUOTA_HUB), "render-cronjobs", "--values", str(path), "--namespace", "hub",
                          "--name-prefix", "rel-quota-hub", "--hub-url", "http://rel-quota-hub.hub.svc:8765/hub",
                          "--token-secret", "rel-quota-hub-tokens", "--token-key", "refresh"],
                         capture_output=True, text=True, check=True).stdout
    cli = {d["metadata"]["name"]: d for d in yaml.safe_load_all(out) if d}
    chart = {d["metadata"]["name"]: d for d in kinds(render(values), "CronJob")}
    assert sorted(cli) == sorted(chart) == ["rel-quota-hub-refresh-weekly-topup", "rel-quota-hub-refresh-zero"]
    for name in cli:
        a, b = cli[name]["spec"], chart[name]["spec"]
        for key in ("schedule", "timeZone", "concurrencyPolicy", "startingDeadlineSeconds"):
            assert a[key] == b[key], (name, key)
        ca, cb = pod_spec(cli[name])["containers"][0], pod_spec(chart[name])["containers"][0]
        ia, ib = ca["args"].index("--rule-json"), cb["args"].index("--rule-json")
        assert ca["args"][:ia] == cb["args"][:ib] and ca["args"][ia + 2:] == cb["args"][ib + 2:], name
        assert json.loads(ca["args"][ia + 1]) == json.loads(cb["args"][ib + 1]), name
        assert ca["env"][0] == cb["env"][0] and ca["image"] == cb["image"]
        assert ca["securityContext"] == cb["securityContext"]
    weekly = pod_spec(chart["rel-quota-hub-refresh-weekly-topup"])["containers"][0]["args"]
    rule = json.loads(weekly[weekly.index("--rule-json") + 1])
    # Integers stay integers (Helm reads numbers as floats; 1000000 must not become 1e+06).
    assert (rule["amount"], rule["maxBalance"], rule["targets"]["balanceBelow"]) == (1000000, 2000000, 1500000)


def test_an_existing_values_file_drops_in():
    values = yaml.safe_load((REPO / "examples" / "values.yaml").read_text())
    docs = render(values)
    assert [j["metadata"]["name"] for j in kinds(docs, "CronJob")] == ["rel-quota-hub-refresh-weekly-topup"]
    cm = next(d for d in kinds(docs, "ConfigMap") if d["metadata"]["name"] == "rel-quota-hub-config")
    assert yaml.safe_load(cm["data"]["values.yaml"])["custom"]["accelerators"]["phx"]["quotaRate"] == 2


def test_rules_run_in_the_servers_instead_gives_no_cronjobs():
    docs = render({"refreshRulesRunIn": "server", "custom": {"quota": {"refreshRules": RULES}}})
    assert kinds(docs, "CronJob") == []
    env = {e["name"] for e in pod_spec(kinds(docs, "Deployment")[0])["containers"][0]["env"]}
    assert "QUOTA_HUB_NO_SCHEDULER" not in env


@pytest.mark.parametrize("name", ["Weekly_TopUp", "x" * 39, "-lead"])
def test_a_rule_name_kubernetes_refuses_fails_the_render_naming_it(name):
    with pytest.raises(helm.HelmError) as e:
        render({"custom": {"quota": {"refreshRules": {name: {"enabled": False, "schedule": "0 3 * * *", "action": "add", "amount": 1}}}}})
    assert f"custom.quota.refreshRules.{name}" in str(e.value)


def test_the_helm_test_pods_command_says_whether_the_servers_are_ready(tmp_path, quota_hub_bin):
    """`helm test`'s pod runs `quota-hub healthcheck --url <the Service's URL>`: run with that URL
    moved to a real server, it passes; against a port nobody serves, it fails."""
    from support.hub_process import DEADLINE_S, free_port, wait_for
    import urllib.request

    (pod,) = kinds(render({}), "Pod")
    (c,) = pod["spec"]["containers"]
    assert c["args"] == ["healthcheck", "--url", "http://rel-quota-hub.hub.svc:8765/hub"]
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"custom": {"authMode": "github"}}))
    port = free_port()
    proc = subprocess.Popen([quota_hub_bin, "serve", "--listen", f"127.0.0.1:{port}", "--db", f"sqlite://{tmp_path / 'q.db'}",
                             "--values", str(values)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def up():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/hub/healthz", timeout=5):
                    return True
            except OSError:
                return False

        wait_for("quota-hub", up)
        args = [a.replace("http://rel-quota-hub.hub.svc:8765", f"http://127.0.0.1:{port}") for a in c["args"]]
        ok = subprocess.run([quota_hub_bin, *args], capture_output=True, text=True, timeout=DEADLINE_S)
        assert ok.returncode == 0 and '200 {"status":"ready"' in ok.stdout, ok.stdout + ok.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE_S)
    down = subprocess.run([quota_hub_bin, "healthcheck", "--url", f"http://127.0.0.1:{free_port()}/hub"], capture_output=True, text=True,
                          timeout=DEADLINE_S)
    assert down.returncode != 0, down.stdout


def test_new_tokens_roll_the_pods_and_an_existing_secret_renders_the_same_every_time():
    """Without a cluster to look the Secret up in (`helm template`, a GitOps render), the chart can
    only make new tokens: the pods' checksum says so, and they roll (the server would follow the
    mounted Secret anyway). With `tokens.existingSecret` two renders are identical: nothing churns."""
    def pod_template(docs):
        return kinds(docs, "Deployment")[0]["spec"]["template"]

    a, b = render({}), render({})
    assert kinds(a, "Secret")[0]["data"] != kinds(b, "Secret")[0]["data"], "no lookup without a cluster: new tokens"
    sums = [pod_template(d)["metadata"]["annotations"]["checksum/tokens"] for d in (a, b)]
    assert sums[0] != sums[1], "new tokens roll the pods"
    mine = {"tokens": {"existingSecret": "quota-tokens"}}
    a, b = render(mine), render(mine)
    assert kinds(a, "Secret") == [] and a == b
    assert "checksum/tokens" not in pod_template(a)["metadata"]["annotations"]
    assert {"name": "tokens", "secret": {"secretName": "quota-tokens"}} in pod_template(a)["spec"]["volumes"]


def test_quota_hub_starts_on_the_rendered_files_and_the_rendered_refresh_token_works(tmp_path, quota_hub_bin):
    """The ConfigMap's values and tokens files and the Secret's tokens, laid out as the pod mounts
    them (the mount paths moved under a temporary folder), run the real server."""
    from support.hub_process import DEADLINE_S, free_port, wait_for
    import urllib.request

    docs = render({**FULL, "tokens": {"existingSecret": ""}, "database": {"type": "sqlite"}, "replicas": 1})
    cm = next(d for d in kinds(docs, "ConfigMap") if d["metadata"]["name"] == "rel-quota-hub-config")
    (secret,) = kinds(docs, "Secret")
    config, tokens = tmp_path / "config", tmp_path / "tokens"
    config.mkdir()
    tokens.mkdir()
    (config / "values.yaml").write_text(cm["data"]["values.yaml"])
    (config / "tokens.yaml").write_text(cm["data"]["tokens.yaml"].replace("/etc/quota/tokens/", f"{tokens}/"))
    for key, value in secret["data"].items():
        (tokens / key).write_bytes(base64.b64decode(value))
    check = subprocess.run([quota_hub_bin, "check-config", "--values", str(config / "values.yaml")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    port = free_port()
    proc = subprocess.Popen([quota_hub_bin, "serve", "--listen", f"127.0.0.1:{port}", "--db", f"sqlite://{tmp_path / 'q.db'}",
                             "--values", str(config / "values.yaml"), "--tokens", str(config / "tokens.yaml"), "--no-scheduler"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def up():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/hub/readyz", timeout=5) as r:
                    return r.status == 200
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                return False

        wait_for("the server on the rendered files", up)
        refresh = (tokens / "refresh").read_text()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/hub/admin/api/quota/refresh", method="POST",
                                     data=b'{"action": "add", "amount": 1, "dry_run": true}',
                                     headers={"Authorization": f"token {refresh}"})
        with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
            assert r.status == 200
        metrics = urllib.request.Request(f"http://127.0.0.1:{port}/hub/metrics",
                                         headers={"Authorization": f"Bearer {(tokens / 'metrics').read_text()}"})
        with urllib.request.urlopen(metrics, timeout=DEADLINE_S) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=DEADLINE_S)


def test_a_peer_given_as_an_ingress_rule_fails_the_render_naming_it():
    with pytest.raises(Exception, match=r"networkPolicy.ingress\[0\]: a rule has `from` and/or `ports`"):
        render({"networkPolicy": {"enabled": True, "ingress": [{"namespaceSelector": {"matchLabels": {"a": "b"}}}]}})


def test_docs_deploy_md_table_is_one_table_naming_every_kind_and_every_alert():
    """docs/deploy.md's table of what the chart installs: one table (no blank line splits it), a
    row for every kind the chart renders (default and every option on), and the PrometheusRule
    row's count and names are the rendered alerts."""
    import re as re_

    text = (REPO / "docs" / "deploy.md").read_text()
    start = text.index("| object | when | what |")
    block = text[start:text.index("\n\n", start)]
    rows = [line for line in block.splitlines()[2:]]
    assert all(r.startswith("| ") for r in rows), rows
    described = " ".join(r.split(" | ")[0] for r in rows)
    for kind in {d["kind"] for values in ({}, FULL) for d in render(values)}:
        assert kind in described, f"no row for {kind}"
    [row] = [r for r in rows if r.startswith("| PrometheusRule ")]
    (rule,) = kinds(render(FULL), "PrometheusRule")
    alerts = [r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert re_.search(rf"\| {len(alerts)} alerts: ", row), row
    assert all(f"`{a}`" in row for a in alerts), row
