"""What is billed is what runs: the accelerator the gate priced is applied to the spawner.

- Its `env` (a mapping of names to strings in the values file's accelerator entry, checked by
  the engine) is added to the server's
  environment, on every spawner.
- On KubeSpawner its `nodeSelector` becomes a required node affinity: every label an `In`
  expression, ANDed into each required term the pod already has (z2jh's `matchNodePurpose: require`
  is one), or one new term. Terms are ORed by Kubernetes, so a separate term would let the pod
  schedule on a node without the accelerator. It is written into the final pod manifest
  (`modify_pod_hook`, after the profile's overrides and the operator's own hook), so no override
  can drop it.
- On KubeSpawner its `resources` (limits and requests: `nvidia.com/gpu: "1"` allocates the device,
  not only the node) go on the notebook container and its `tolerations` on the pod, in the same
  hook. A profile's own value for the same resource was refused before the gate unless equal
  (options.check_profile_resources); one set another way (the operator's `extra_resource_limits`)
  that differs fails the spawn naming both, rather than run a server other than the one billed.
- Other spawners: the operator's `apply_accelerator(spawner, key, accelerator)` hook places the
  server; without one, placement is not applied (said once per spawner class in the log).

The CPU choice applies nothing: the spawner keeps what the operator configured."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..host.service import log, maybe_await

#: Attributes this module keeps on a spawner: the operator's environment, the allowed accelerator.
BASE_ENV = "_quota_base_environment"
CHOSEN = "_quota_accelerator"


@dataclass(frozen=True)
class Accelerator:
    key: str
    node_selector: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    #: The values file's entry as written (what the operator's hook receives).
    entry: dict = field(default_factory=dict)
    #: {"limits": {name: quantity}, "requests": {...}} (quantities as text, as Kubernetes writes them).
    resources: dict = field(default_factory=dict)
    tolerations: list = field(default_factory=list)


def accelerators(values: dict) -> dict[str, Accelerator]:
    """`custom.accelerators` of a values document. The engine checks the entries (`nodeSelector`
    and `env`: mappings of strings) when it is configured; entries it would refuse are skipped."""
    custom = values.get("custom") if isinstance(values.get("custom"), dict) else {}
    entries = custom.get("accelerators") if isinstance(custom.get("accelerators"), dict) else {}
    out: dict[str, Accelerator] = {}
    for key, entry in entries.items():
        if not isinstance(entry, dict):
            continue
        strings = lambda v: {str(k): x for k, x in v.items() if isinstance(x, str)} if isinstance(v, dict) else {}  # noqa: E731
        out[str(key)] = Accelerator(str(key), strings(entry.get("nodeSelector")), strings(entry.get("env")), entry=copy.deepcopy(entry),
                                    resources=_resources(entry.get("resources")),
                                    tolerations=copy.deepcopy(entry.get("tolerations") or []))
    return out


def _resources(v: Any) -> dict:
    """An entry's `resources` with every quantity as text (YAML's `1` is Kubernetes' "1")."""
    if not isinstance(v, dict):
        return {}
    out = {}
    for kind in ("limits", "requests"):
        given = v.get(kind)
        if isinstance(given, dict) and given:
            out[kind] = {str(k): str(q) for k, q in given.items()}
    return out


def is_kubespawner(spawner: Any) -> bool:
    return any(k.__name__ == "KubeSpawner" for k in type(spawner).__mro__)


def _requirements(selector: dict) -> list[dict]:
    return [{"key": k, "operator": "In", "values": [v]} for k, v in selector.items()]


def require_node_labels(pod: Any, selector: dict) -> Any:
    """Adds `selector` to the pod's required node affinity (a `V1Pod` of kubernetes_asyncio, as
    KubeSpawner builds it): its expressions ANDed into every existing term, or one new term."""
    from kubernetes_asyncio.client import models as m

    if not selector:
        return pod
    spec = pod.spec
    spec.affinity = spec.affinity or m.V1Affinity()
    node = spec.affinity.node_affinity = spec.affinity.node_affinity or m.V1NodeAffinity()
    required = node.required_during_scheduling_ignored_during_execution
    if required is None:
        required = node.required_during_scheduling_ignored_during_execution = m.V1NodeSelector(node_selector_terms=[])
    terms = required.node_selector_terms or []
    if not terms:
        terms = [{"matchExpressions": []}]
    for term in terms:
        # KubeSpawner passes the configured terms through as dicts; a hook may have built models.
        if isinstance(term, dict):
            term.setdefault("matchExpressions", []).extend(_requirements(selector))
        else:
            term.match_expressions = list(term.match_expressions or []) + [
                m.V1NodeSelectorRequirement(key=r["key"], operator=r["operator"], values=r["values"]) for r in _requirements(selector)
            ]
    required.node_selector_terms = terms
    return pod


class Placement:
    """Applies the gate's accelerator to spawners. One per installed integration."""

    def __init__(self, accels: dict[str, Accelerator], hook: Optional[Callable] = None):
        self.accels = accels
        self.hook = hook
        self._warned: set[str] = set()

    async def apply(self, spawner: Any, key: Optional[str]) -> None:
        """Called after the gate allowed the spawn, before the spawner starts."""
        # The environment the operator configured, before any accelerator's was added (kept on
        # the spawner, which JupyterHub usually makes anew for each spawn).
        base = getattr(spawner, BASE_ENV, None)
        if base is None:
            base = dict(getattr(spawner, "environment", None) or {})
            setattr(spawner, BASE_ENV, base)
        accel = self.accels.get(key) if key else None
        setattr(spawner, CHOSEN, accel)
        if accel is None:
            spawner.environment = dict(base)
            return
        spawner.environment = {**base, **accel.env}
        if self.hook is not None:
            await maybe_await(self.hook(spawner, accel.key, copy.deepcopy(accel.entry)))
        elif accel.node_selector and not is_kubespawner(spawner):
            name = type(spawner).__name__
            if name not in self._warned:
                self._warned.add(name)
                log.warning(
                    "quota: accelerator placement (nodeSelector) is not applied for spawner class %s: "
                    "only its env is; pass apply_accelerator= to jupyterhub_quota.configure() to place servers",
                    name,
                )

    def modify_pod(self, spawner: Any, pod: Any) -> Any:
        """KubeSpawner's `modify_pod_hook`: the allowed accelerator's node labels become required,
        its resources go on the notebook container and its tolerations on the pod."""
        accel = getattr(spawner, CHOSEN, None)
        if accel is not None:
            require_node_labels(pod, accel.node_selector)
            allocate(pod, accel)
        return pod


def _get(obj: Any, snake: str, camel: str) -> Any:
    return obj.get(camel, obj.get(snake)) if isinstance(obj, dict) else getattr(obj, snake, None)


def allocate(pod: Any, accel: Accelerator) -> Any:
    """Adds the accelerator's resources to the notebook container (the first: KubeSpawner's) and
    its tolerations to the pod (each once). A different value already there for one of its
    resources is an error naming both: the server would run with other than what is billed."""
    from kubernetes_asyncio.client import models as m

    if accel.resources:
        container = pod.spec.containers[0]
        container.resources = container.resources or m.V1ResourceRequirements()
        for kind in ("limits", "requests"):
            wanted = accel.resources.get(kind) or {}
            if not wanted:
                continue
            have = dict(getattr(container.resources, kind) or {})
            for name, value in wanted.items():
                if name in have and str(have[name]) != value:
                    raise ValueError(
                        f"quota: the accelerator {accel.key!r} allocates {kind} {name}: {value}, but the pod already "
                        f"sets {have[name]} (the spawner's configuration): make them agree"
                    )
                have[name] = value
            setattr(container.resources, kind, have)
    if accel.tolerations:
        present = list(pod.spec.tolerations or [])
        seen = [(_get(t, "key", "key"), _get(t, "operator", "operator"), _get(t, "value", "value"), _get(t, "effect", "effect"))
                for t in present]
        for t in accel.tolerations:
            sig = (t.get("key"), t.get("operator", "Equal"), t.get("value"), t.get("effect"))
            if sig not in seen:
                present.append(m.V1Toleration(key=t.get("key"), operator=t.get("operator", "Equal"), value=t.get("value"),
                                              effect=t.get("effect"), toleration_seconds=t.get("tolerationSeconds")))
                seen.append(sig)
        pod.spec.tolerations = present
    return pod
