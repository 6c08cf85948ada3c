"""What docs/z2jh.md ships besides the hub's behaviour (test_kubespawner.py): the values given as
the dict z2jh hands over configure what the file does, and the hub image's recipe
(deploy/z2jh/Dockerfile: z2jh's hub image plus the wheel) resolves: the wheel installs beside the
image's own pinned JupyterHub, KubeSpawner, PyYAML and prometheus-client without moving them."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from hub import DEADLINE_S, HERE
from jupyterhub_quota import Caller, QuotaEngine
from jupyterhub_quota import values as values_mod
from jupyterhub_quota.placement import accelerators

REPO = HERE.parents[1]
EXAMPLE = REPO / "examples" / "z2jh" / "config.yaml"
DOCKERFILE = REPO / "deploy" / "z2jh" / "Dockerfile"
#: The pins of z2jh's hub image that the wheel must not move (images/hub/requirements.txt of the
#: z2jh release the Dockerfile extends).
Z2JH_HUB_PINS = {
    "4.4.0": {"jupyterhub": "5.5.0", "jupyterhub-kubespawner": "7.0.0", "pyyaml": "6.0.3", "prometheus-client": "0.25.0"},
}


def engine_answers(db: str, doc: dict) -> tuple:
    e = QuotaEngine(db, doc)
    try:
        reads = [e.handle_request("GET", p, caller=Caller("ann")).body for p in ("/api/quota/rates", "/api/accelerators", "/api/quota/me")]
        return e.summary, reads, accelerators(doc)
    finally:
        e.close()


@pytest.mark.parametrize("values_file", [HERE / "hub_values.yaml", EXAMPLE], ids=["hub-suite", "z2jh-example"])
def test_values_as_a_dict_configure_what_the_file_does(tmp_path, values_file):
    """`configure(c, values=get_config("custom"))` (the custom block), `values=<the document>` and
    `values_file=` give the engine the same document, and so the same answers."""
    doc = yaml.safe_load(values_file.read_text())
    forms = [values_mod.load(values_file), values_mod.document(doc), values_mod.document(doc["custom"])]
    answers = [engine_answers(str(tmp_path / f"{i}.db"), d) for i, d in enumerate(forms)]
    assert answers[0] == answers[1] == answers[2]
    assert json.loads(answers[0][1][0])["enabled"] is True


def test_values_that_are_not_a_mapping_are_refused_naming_the_keyword():
    with pytest.raises(values_mod.ValuesError, match=r"^values: must be a mapping"):
        values_mod.document(["custom"])


def test_the_image_recipe_and_the_example_name_one_z2jh_release():
    version = re.search(r"^ARG Z2JH_VERSION=(\S+)$", DOCKERFILE.read_text(), re.M).group(1)
    assert version in Z2JH_HUB_PINS, version
    assert re.search(r"^FROM quay\.io/jupyterhub/k8s-hub:\$\{Z2JH_VERSION\}$", DOCKERFILE.read_text(), re.M)
    example = yaml.safe_load(EXAMPLE.read_text())
    package = re.search(r'^version = "([^"]+)"', (REPO / "python" / "pyproject.toml").read_text(), re.M).group(1)
    assert example["hub"]["image"]["tag"] == f"{version}-quota-{package}"
    assert f"--version {version} " in EXAMPLE.read_text()
    assert f"hub-quota:{version}-quota-{package}" in (REPO / "docs" / "z2jh.md").read_text()


def test_the_wheel_installs_beside_the_z2jh_hub_images_pins(tmp_path):
    """pip's resolver with the image's pins and the wheel (as the Dockerfile's `pip install` runs
    it): it must succeed and keep every pin."""
    version = re.search(r"^ARG Z2JH_VERSION=(\S+)$", DOCKERFILE.read_text(), re.M).group(1)
    pins = Z2JH_HUB_PINS[version]
    [wheel] = sorted((REPO / "target" / "python-dist").glob("jupyterhub_quota-*-py3-none-any.whl"))
    report = tmp_path / "report.json"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--disable-pip-version-check", "-q",
         "--report", str(report), *[f"{k}=={v}" for k, v in pins.items()], str(wheel)],
        capture_output=True, text=True, timeout=DEADLINE_S * 3,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    chosen = {re.sub(r"[-_.]+", "-", i["metadata"]["name"]).lower(): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    assert {k: chosen.get(k) for k in pins} == pins
    assert "wasmtime" in chosen and "jupyterhub-quota" in chosen
