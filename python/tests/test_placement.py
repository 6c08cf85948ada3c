"""The pieces of "what is billed is what runs" without a hub: how a spawn's options and a
KubeSpawner profile resolve to the accelerator that prices it (options.py), and how that
accelerator is applied: env on every spawner, the required node affinity ANDed into a pod's terms,
the operator's hook (placement.py), and the hook installation into the spawner's config sections
(hooks.py). test_kubespawner.py runs them inside a real hub with the real KubeSpawner."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from kubernetes_asyncio.client import models as m
from traitlets.config import Config

from jupyterhub_quota.hub import hooks
from jupyterhub_quota.hub.options import OptionError, check_profiles, choose, page_profiles
from jupyterhub_quota.hub.placement import Accelerator, Placement, accelerators, require_node_labels

ACCELS = ("phx", "dgpu", "a100")  # ordered, as the values file's accelerators are
GPU = {"display_name": "GPU", "slug": "gpu", "quotaAccelerator": "dgpu",
       "profile_options": {"type": {"display_name": "GPU type", "choices": {
           "any": {"display_name": "Any"},
           "a100": {"display_name": "A100", "quotaAccelerator": "a100", "kubespawner_override": {"node_selector": {"gpu": "a100"}}},
       }}}}
PROFILES = [
    {"display_name": "Standard environment", "default": True},  # slug from the name, as KubeSpawner makes it
    GPU,
    {"display_name": "Big CPU", "slug": "bigcpu", "quotaAccelerator": "cpu", "kubespawner_override": {"node_selector": {"pool": "big"}}},
    {"display_name": "Tolerant", "slug": "tolerant", "kubespawner_override": {"extra_pod_config": {"tolerations": [{"key": "gpu"}]}}},
    {"display_name": "Image", "slug": "image", "profile_options": {"image": {"display_name": "Image", "choices": {
        "lab": {"display_name": "Lab", "kubespawner_override": {"image": "lab"}}},
        "unlisted_choice": {"enabled": True, "quotaAccelerator": "phx", "kubespawner_override": {"image": "{value}"}}}}},
]


def kube(profiles=PROFILES):
    return SimpleNamespace(profile_list=profiles)


def pick(options: dict, spawner=None):
    return asyncio.run(choose(spawner or kube(), options, 20, ACCELS))


@pytest.mark.parametrize(
    "options, accelerator, profile",
    [
        ({}, None, "standard-environment"),  # the default profile; gpu_selection decides
        ({"gpu_selection": "phx"}, "phx", "standard-environment"),
        ({"profile": "gpu"}, "dgpu", "gpu"),  # the profile's own (its default choice names none)
        ({"profile": "gpu", "type": "a100"}, "a100", "gpu"),  # a chosen option's wins
        ({"profile": "gpu", "gpu_selection": "dgpu"}, "dgpu", "gpu"),  # the same accelerator: fine
        ({"profile": "bigcpu"}, None, "bigcpu"),  # moves, but priced: `cpu`
        ({"profile": "image", "image": "lab"}, None, "image"),
        ({"profile": "image", "image--unlisted-choice": "x"}, "phx", "image"),
    ],
)
def test_a_profile_prices_the_spawn_it_starts(options, accelerator, profile):
    c = pick({"runtime_minutes": "7", **options})
    assert (c.runtime, c.accelerator, c.profile) == (7, accelerator, profile)


@pytest.mark.parametrize(
    "options, starts",
    [
        ({"profile": "gpu", "gpu_selection": "phx"}, 'gpu_selection: the profile "gpu" runs on "dgpu"'),
        ({"profile": "tolerant"}, 'profile: "tolerant" changes where the server runs (extra_pod_config.tolerations)'),
        ({"profile": "nope"}, 'profile: no profile "nope" (profiles: standard-environment, gpu, bigcpu, tolerant, image)'),
        ({"profile": 3}, "profile: must be a profile name, got 3"),
        ({"profile": "gpu", "type": "h100"}, 'type: no choice "h100" in profile "gpu" (choices: any, a100)'),
        ({"runtime_minutes": 2.5}, "runtime_minutes: must be a whole number of minutes, got 2.5"),
        ({"gpu_selection": ["phx"]}, 'gpu_selection: must be an accelerator name, got ["phx"]'),
    ],
)
def test_options_that_cannot_be_priced_are_refused_naming_the_option(options, starts):
    with pytest.raises(OptionError) as e:
        pick(options)
    assert str(e.value).startswith(starts), str(e.value)


COURSE = {"display_name": "Course 101", "slug": "course", "quotaBudget": "course-101"}


@pytest.mark.parametrize(
    "options, budget",
    [
        ({}, None),  # the user's own credit
        ({"budget": ""}, None),
        ({"budget": "lab"}, "lab"),  # the spawn option
        ({"profile": "course"}, "course-101"),  # the profile's quotaBudget charges the course
        ({"profile": "course", "budget": "course-101"}, "course-101"),  # the same: fine
    ],
)
def test_a_spawn_charges_the_budget_its_option_or_profile_names(options, budget):
    assert pick(options, kube([*PROFILES, COURSE])).budget == budget


@pytest.mark.parametrize(
    "options, starts",
    [
        ({"profile": "course", "budget": "lab"}, 'budget: the profile "course" charges budget "course-101"'),
        ({"budget": 5}, "budget: must be a budget name, got 5"),
    ],
)
def test_a_budget_the_spawn_cannot_charge_is_refused_naming_the_option(options, starts):
    with pytest.raises(OptionError) as e:
        pick(options, kube([*PROFILES, COURSE]))
    assert str(e.value).startswith(starts), str(e.value)


def test_profile_lists_as_kubespawner_takes_them():
    by_key = {"b": {"display_name": "B", "slug": "b", "quotaAccelerator": "phx"}, "a": {"display_name": "A", "slug": "a"}}
    assert pick({}, kube(by_key)).profile == "a"  # a dict is sorted by key; the first is the default

    async def dynamic(spawner):
        return [{"display_name": "Only", "slug": "only", "quotaAccelerator": "dgpu"}]

    assert pick({}, kube(dynamic)).accelerator == "dgpu"
    # A spawner without profiles: gpu_selection alone; a `profile` option means nothing to it.
    assert pick({"profile": "gpu", "gpu_selection": "phx"}, SimpleNamespace()).accelerator == "phx"


def test_a_profile_naming_two_accelerators_or_an_unknown_one_is_refused():
    two = {"display_name": "Two", "slug": "two", "quotaAccelerator": "dgpu", "profile_options": {
        "a": {"display_name": "A", "choices": {"x": {"display_name": "X", "quotaAccelerator": "phx"}}},
        "b": {"display_name": "B", "choices": {"y": {"display_name": "Y", "quotaAccelerator": "dgpu"}}}}}
    with pytest.raises(OptionError, match=r'^profile: "two" names more than one quotaAccelerator \(dgpu, phx\)'):
        pick({}, kube([two]))
    with pytest.raises(OptionError, match=r'^profile: "t" names quotaAccelerator "tpu", which is not an accelerator'):
        pick({}, kube([{"display_name": "T", "slug": "t", "quotaAccelerator": "tpu"}]))
    problems = check_profiles([two, {"display_name": "T", "slug": "t", "quotaAccelerator": "tpu"}, *PROFILES], ACCELS)
    assert problems == [
        'profile: "two" names more than one quotaAccelerator (dgpu, phx) with these choices; ask the hub\'s operator to name one',
        'profile t: quotaAccelerator "tpu" is not an accelerator of the quota configuration',
        'profile: "t" names quotaAccelerator "tpu", which is not an accelerator of the quota configuration (known: cpu, phx, dgpu, a100)',
        'profile: "tolerant" changes where the server runs (extra_pod_config.tolerations) but names no quotaAccelerator to price it; '
        "ask the hub's operator to add one",
    ]


def test_the_spawn_form_gets_what_the_gate_decides_with():
    p = page_profiles(PROFILES)
    assert list(p) == ["standard-environment", "gpu", "bigcpu", "tolerant", "image"]
    assert p["gpu"]["accelerator"] == "dgpu" and p["gpu"]["options"]["type"]["default"] == "any"
    assert p["gpu"]["options"]["type"]["choices"]["a100"] == {"accelerator": "a100", "moves": True}
    assert p["tolerant"] == {"accelerator": None, "moves": True, "options": {}, "budget": None}
    assert p["image"]["options"]["image"]["unlisted"] == {"accelerator": "phx", "moves": False}
    assert page_profiles([COURSE])["course"]["budget"] == "course-101"  # the form shows who pays


def pod(*terms) -> m.V1Pod:
    required = m.V1NodeSelector(node_selector_terms=list(terms)) if terms else None
    affinity = m.V1Affinity(node_affinity=m.V1NodeAffinity(required_during_scheduling_ignored_during_execution=required)) if terms else None
    return m.V1Pod(spec=m.V1PodSpec(containers=[], affinity=affinity))


def expressions(p: m.V1Pod) -> list:
    terms = p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    return [t["matchExpressions"] if isinstance(t, dict) else [(r.key, r.operator, r.values) for r in t.match_expressions] for t in terms]


def test_the_accelerators_labels_are_anded_into_every_required_term():
    phx = {"accelerator": "phx", "zone": "a"}
    want = [{"key": "accelerator", "operator": "In", "values": ["phx"]}, {"key": "zone", "operator": "In", "values": ["a"]}]
    assert expressions(require_node_labels(pod(), phx)) == [want]
    purpose = {"key": "hub.jupyter.org/node-purpose", "operator": "In", "values": ["user"]}
    # Two terms (ORed by Kubernetes): each one gets the labels, so neither lets the pod elsewhere.
    p = require_node_labels(pod({"matchExpressions": [purpose]}, {"matchFields": [{"key": "metadata.name"}]}), phx)
    assert expressions(p) == [[purpose, *want], want]
    modelled = m.V1NodeSelectorTerm(match_expressions=[m.V1NodeSelectorRequirement(key="k", operator="Exists")])
    assert expressions(require_node_labels(pod(modelled), {"accelerator": "phx"})) == [
        [("k", "Exists", None), ("accelerator", "In", ["phx"])]
    ]


def test_env_goes_on_and_comes_off_and_the_hook_places_other_spawners():
    placed = []

    async def hook(spawner, key, accelerator):
        placed.append((key, accelerator["nodeSelector"]))

    accels = accelerators({"custom": {"accelerators": {"phx": {"quotaRate": 2, "nodeSelector": {"a": "phx"}, "env": {"PHX": "all"}}}}})
    assert accels == {"phx": Accelerator("phx", {"a": "phx"}, {"PHX": "all"}, {"quotaRate": 2, "nodeSelector": {"a": "phx"}, "env": {"PHX": "all"}})}
    spawner = SimpleNamespace(environment={"HUB": "1"})
    placement = Placement(accels, hook)
    asyncio.run(placement.apply(spawner, "phx"))
    assert spawner.environment == {"HUB": "1", "PHX": "all"} and placed == [("phx", {"a": "phx"})]
    asyncio.run(placement.apply(spawner, None))  # CPU: what the operator configured, nothing else
    assert spawner.environment == {"HUB": "1"} and len(placed) == 1
    assert placement.modify_pod(spawner, "the pod") == "the pod"


def test_hooks_go_on_every_section_of_the_spawner_class_and_the_configured_one_runs_first():
    from kubespawner import KubeSpawner

    c = Config()
    c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
    earlier = lambda spawner: None  # noqa: E731
    c.KubeSpawner.pre_spawn_hook = earlier
    cls = hooks.spawner_class(c)
    assert cls is KubeSpawner
    names = hooks.sections(cls)
    assert names[:2] == ["KubeSpawner", "Spawner"]
    assert hooks.previous(c, names, "pre_spawn_hook") is earlier
    assert hooks.has_trait(cls, "modify_pod_hook")[0] == "KubeSpawner" and "Spawner" not in hooks.has_trait(cls, "modify_pod_hook")
    ours = lambda spawner: None  # noqa: E731
    hooks.install(c, names, "pre_spawn_hook", ours)
    assert c.KubeSpawner.pre_spawn_hook is ours and c.Spawner.pre_spawn_hook is ours
    assert hooks.check(c, cls, {"pre_spawn_hook": ours}) == []
    later = lambda spawner: None  # noqa: E731
    c.KubeSpawner.pre_spawn_hook = later  # a line after configure()
    [problem] = hooks.check(c, cls, {"pre_spawn_hook": ours})
    assert problem.startswith("c.KubeSpawner.pre_spawn_hook was set after jupyterhub_quota.configure()")


def test_kubespawners_own_form_and_parser_are_kept(tmp_path, monkeypatch):
    """With or without the quota form (`spawn_form=False`), a form post goes through KubeSpawner's
    own parser (which reads `profile` and its options and would refuse a list), and the quota keys
    through the package's."""
    import json

    from kubespawner import KubeSpawner

    from jupyterhub_quota.hub.forms import options_from_form, own_form

    # A KubeSpawner loads a kube-config when it is made (nothing here talks to it).
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "x",
                                  "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
                                  "users": [{"name": "x", "user": {}}], "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
    import kubernetes_asyncio.config.kube_config as kube_config

    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(config))

    async def run():
        spawner = KubeSpawner(_mock=True, profile_list=PROFILES)
        parse = options_from_form(None)
        form = {"profile": ["gpu"], "profile-option-gpu--type": ["a100"], "runtime_minutes": ["5"], "gpu_selection": [""]}
        options = parse(form, spawner=spawner)
        assert options == {"profile": "gpu", "type": "a100", "runtime_minutes": "5", "gpu_selection": ""}
        assert (await choose(spawner, options, 20, ACCELS)).accelerator == "a100"
        html = await own_form(spawner, None)
        assert 'id="profile-item-gpu"' in html and 'id="profile-item-standard-environment"' in html
        assert await own_form(spawner, "<p>mine</p>") == "<p>mine</p>"

    asyncio.run(run())


def test_an_accelerators_resources_and_tolerations_go_on_the_pod_once_and_a_different_limit_is_refused():
    from jupyterhub_quota.hub.placement import allocate

    gpu = accelerators({"custom": {"accelerators": {"dgpu": {
        "quotaRate": 4, "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"memory": "8Gi"}},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}}})["dgpu"]
    assert gpu.resources == {"limits": {"nvidia.com/gpu": "1"}, "requests": {"memory": "8Gi"}}
    pod = m.V1Pod(spec=m.V1PodSpec(containers=[m.V1Container(name="notebook", resources=m.V1ResourceRequirements(
        limits={"memory": "2Gi"}))], tolerations=[{"key": "hub.jupyter.org/dedicated", "operator": "Equal", "value": "user"}]))
    for _ in range(2):  # applied twice: nothing doubled
        allocate(pod, gpu)
    c = pod.spec.containers[0]
    assert c.resources.limits == {"memory": "2Gi", "nvidia.com/gpu": "1"} and c.resources.requests == {"memory": "8Gi"}
    keys = [t["key"] if isinstance(t, dict) else t.key for t in pod.spec.tolerations]
    assert keys == ["hub.jupyter.org/dedicated", "nvidia.com/gpu"]
    two = m.V1Pod(spec=m.V1PodSpec(containers=[m.V1Container(name="notebook", resources=m.V1ResourceRequirements(
        limits={"nvidia.com/gpu": "2"}))]))
    with pytest.raises(ValueError, match=r"allocates limits nvidia.com/gpu: 1, but the pod already sets 2"):
        allocate(two, gpu)


def test_a_profiles_own_limit_for_the_accelerators_resource_wins_only_if_equal():
    accels = accelerators({"custom": {"accelerators": {"dgpu": {"quotaRate": 4, "resources": {"limits": {"nvidia.com/gpu": 1}}}}}})
    same = {"display_name": "One", "slug": "one", "quotaAccelerator": "dgpu",
            "kubespawner_override": {"extra_resource_limits": {"nvidia.com/gpu": "1"}}}
    two = {"display_name": "Two", "slug": "two", "quotaAccelerator": "dgpu", "profile_options": {"n": {"display_name": "GPUs", "choices": {
        "two": {"display_name": "2", "kubespawner_override": {"extra_resource_limits": {"nvidia.com/gpu": 2}}}}}}}
    spawner = kube([same, two])
    assert asyncio.run(choose(spawner, {"profile": "one"}, 20, accels)).accelerator == "dgpu"
    with pytest.raises(OptionError, match=r'^profile: "two" sets limits nvidia.com/gpu: 2, but the accelerator "dgpu" it runs on allocates 1'):
        asyncio.run(choose(spawner, {"profile": "two"}, 20, accels))
