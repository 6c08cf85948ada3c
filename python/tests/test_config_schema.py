"""The chart's schema and the engine agree on what a values document may say.

- Every values document in docs/, examples/, the chart and the scenario files validates against
  the chart's `values.schema.json` (its `custom` part) and is accepted by the engine.
- A property test over those documents and their mutations (every value replaced by each of 37
  odd values, every key dropped, unknown keys added; then 3,000 seeded double mutations): whatever the engine
  accepts, the schema validates; so whatever the schema refuses, the engine refuses too. The
  schema may be looser (cron syntax, three decimals, a regular expression), never stricter.
The engine is the real component (`QuotaEngine.configure`, the reader every host uses)."""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from support.hub_process import HERE
from jupyterhub_quota import ConfigError, QuotaEngine

REPO = HERE.parents[2]
CHART_SCHEMA = json.loads((REPO / "deploy" / "helm" / "quota-hub" / "values.schema.json").read_text())
CUSTOM = jsonschema.Draft7Validator(CHART_SCHEMA["properties"]["custom"])
FIXTURE = {"authMode": "github", "quota": {"cpuRate": 1, "minimumToStart": 10, "defaultQuota": 0},
           "accelerators": {"phx": {"displayName": "PHX", "description": "PHX accelerator", "nodeSelector": {"accel": "phx"}, "quotaRate": 2},
                            "dgpu": {"displayName": "DGPU", "description": "Discrete GPU", "nodeSelector": {"accel": "dgpu"}, "quotaRate": 4}}}


def documents() -> list[tuple[str, dict]]:
    """(where, the `custom` block) of every values document the repository ships or documents."""
    found = []
    for path in [*REPO.glob("examples/**/*.yaml"), REPO / "deploy" / "helm" / "quota-hub" / "values.yaml",
                 REPO / "deploy" / "image" / "values.yaml", HERE / "hub_values.yaml"]:
        doc = yaml.safe_load(path.read_text())
        if isinstance(doc, dict) and "custom" in doc:
            found.append((str(path.relative_to(REPO)), doc["custom"]))
    for md in sorted(REPO.glob("docs/*.md")) + [REPO / "README.md"]:
        for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", md.read_text(), re.S)):
            doc = yaml.safe_load(block)
            if isinstance(doc, dict) and isinstance(doc.get("custom"), dict):
                found.append((f"{md.relative_to(REPO)} yaml block {i + 1}", doc["custom"]))
    for f in sorted((REPO / "tests" / "scenarios").glob("*.json")):
        s = json.loads(f.read_text())
        custom = copy.deepcopy((s.get("values") or {"custom": FIXTURE}).get("custom") or {})
        if "quota" in s:
            custom.setdefault("quota", {}).update(s["quota"])
        found.append((f"tests/scenarios/{f.name}", custom))
        for step in s["steps"]:
            if "configure" in step and "refused" not in step:
                found.append((f"tests/scenarios/{f.name} configure", step["configure"].get("custom") or {}))
    return found


@pytest.fixture(scope="module")
def engine():
    e = QuotaEngine(":memory:", {"custom": FIXTURE})
    yield e
    e.close()


def accepted(engine: QuotaEngine, custom) -> bool:
    try:
        engine.configure({"custom": custom})
        return True
    except ConfigError:
        return False


def schema_problems(custom) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in CUSTOM.iter_errors(custom)]


def test_every_shipped_and_documented_values_document_validates_and_is_accepted(engine):
    docs = documents()
    assert len(docs) > 40, [w for w, _ in docs]
    assert any("groups.md" in w for w, _ in docs), "docs/groups.md's own example is checked"
    for where, custom in docs:
        assert schema_problems(custom) == [], where
        # A fragment without authMode is completed as the hub does from its authenticator.
        assert accepted(engine, {"authMode": "github", **custom}), where


ODD_VALUES = [None, True, False, 0, -1, 1, 7, 100, 101, 1000, 123456, 999999, 10**6, 1000000.5, 9999999, 2.5, 0.0001, 10**7,
              10**7 + 1, -(10**7) - 1, 2**53, 2**63, "", "x", "add", "set",
              "refuse", "allow", "* * * * *", "0 25 * * *", "github", "cpu", [], ["a"], [1], [None], {}, {"k": "v"}, {"k": 1}]


def paths(node, at=()):
    yield at
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, (*at, i))


def mutate(doc, rng: random.Random):
    doc = copy.deepcopy(doc)
    at = rng.choice(list(paths(doc)))
    if not at:
        return rng.choice(ODD_VALUES) if rng.random() < 0.2 else doc
    parent = doc
    for step in at[:-1]:
        parent = parent[step]
    key, op = at[-1], rng.random()
    if op < 0.6:
        parent[key] = rng.choice(ODD_VALUES)
    elif op < 0.75 and isinstance(parent, dict):
        del parent[key]
    elif op < 0.9 and isinstance(parent, dict):
        parent[rng.choice(["zz", "quotaRate", "schedule", "amount", "targets", "groups", "cpu", "enabled", "env"])] = rng.choice(ODD_VALUES)
    elif isinstance(parent[key], dict):
        parent[key][rng.choice(["includeGroups", "excludeGroups", "accelerators", "defaultQuota", "maxBalance", "x-y"])] = rng.choice(ODD_VALUES)
    return doc


def single_mutations(doc):
    """Every document one change away from `doc`: each value replaced by each odd value, each key
    dropped, an unknown key added to each mapping."""
    for at in paths(doc):
        if not at:
            continue
        for v in [*ODD_VALUES, "drop"]:
            d = copy.deepcopy(doc)
            parent = d
            for step in at[:-1]:
                parent = parent[step]
            if v == "drop":
                if not isinstance(parent, dict):
                    continue
                del parent[at[-1]]
            else:
                parent[at[-1]] = v
            yield d
        node = doc
        for step in at:
            node = node[step]
        if isinstance(node, dict):
            for k in ("zz", "includeGroups", "defaultQuota", "quotaRate", "env"):
                d = copy.deepcopy(doc)
                target = d
                for step in at:
                    target = target[step]
                target[k] = 1
                yield d


def test_whatever_the_engine_accepts_the_schema_validates(engine):
    seen, seeds = set(), []
    for _, c in documents():
        key = json.dumps(c, sort_keys=True)
        if key not in seen:
            seen.add(key)
            seeds.append(c)
    rng = random.Random(31)
    candidates = [m for s in seeds for m in single_mutations(s)]
    candidates += [mutate(mutate(rng.choice(seeds), rng), rng) for _ in range(3000)]
    accepted_count = 0
    for custom in candidates:
        if accepted(engine, custom):
            accepted_count += 1
            assert schema_problems(custom) == [], f"the engine accepts what the schema refuses: {json.dumps(custom)[:2000]}"
    # Both outcomes occur: the mutations reach both sides of the line.
    print(f"{len(candidates)} documents, {accepted_count} accepted by the engine")
    assert 1000 < accepted_count < len(candidates) - 1000, (accepted_count, len(candidates))
