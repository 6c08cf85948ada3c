# The JupyterHub configuration of the KubeSpawner tests: z2jh's jupyterhub_config.py in miniature.
# It reads a z2jh values file (QT_Z2JH_VALUES: examples/z2jh/config.yaml) through a `get_config`
# like z2jh's, applies the parts of it that z2jh applies and the tests use (the spawner class, the
# failure limit, singleuser.profileList, scheduling.userPods.nodeAffinity), then runs
# hub.extraConfig in order, as z2jh does. What z2jh takes from the cluster (the namespace, the
# API server) the test gives: a fake Kubernetes API on loopback (support/fake_k8s.py, through
# KUBECONFIG) whose kubelet runs each pod's container as a local process.
import json
import os
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hub_base_config import base  # noqa: E402

env = os.environ
c = get_config()  # noqa: F821 - JupyterHub's own; z2jh's is defined below, as in z2jh
state = base(c)

with open(env["QT_Z2JH_VALUES"]) as f:
    _values = yaml.safe_load(f)
_values = {**_values, "singleuser": {**_values.get("singleuser", {}), "profileList": [
    *_values.get("singleuser", {}).get("profileList", []), *json.loads(env.get("QT_EXTRA_PROFILES", "[]"))]}}


def get_config(key, default=None):
    """z2jh's `z2jh.get_config`: a dotted key of the chart's values, or `default`."""
    value = _values
    for level in key.split("."):
        if not isinstance(value, dict) or level not in value:
            return default
        value = value[level]
    return value


# What z2jh's jupyterhub_config.py does with these values.
c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 10}  # z2jh: 0 (the test reads the answer)
if get_config("hub.consecutiveFailureLimit") is not None:
    c.Spawner.consecutive_failure_limit = get_config("hub.consecutiveFailureLimit")
if get_config("singleuser.profileList"):
    c.KubeSpawner.profile_list = get_config("singleuser.profileList")
if get_config("scheduling.userPods.nodeAffinity.matchNodePurpose") == "require":
    c.KubeSpawner.node_affinity_required.append(
        {"matchExpressions": [{"key": "hub.jupyter.org/node-purpose", "operator": "In", "values": ["user"]}]}
    )

# What the cluster would give.
c.KubeSpawner.namespace = "quota-test"
c.KubeSpawner.image = "quay.io/jupyterhub/k8s-singleuser-sample:4.4.0"
c.KubeSpawner.cmd = ["jupyterhub-singleuser"]
c.KubeSpawner.args = ["--allow-root"] if os.geteuid() == 0 else []
c.KubeSpawner.port = int(env["QT_SINGLEUSER_PORT"])
c.KubeSpawner.start_timeout = 60
c.KubeSpawner.http_timeout = 60
c.KubeSpawner.environment = {"HUB_WIDE": "from the operator"}

for key, config_py in sorted(get_config("hub.extraConfig", {}).items()):
    print(f"Loading extra config: {key}")
    exec(config_py)
