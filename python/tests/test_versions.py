"""One version for every artefact, set in one place (the repository's VERSION file): the crates
(and so `quota-hub --version` and `quota_build_info`), the wheel, the npm package, the Helm chart and
its appVersion (the image tag it deploys), the image layout's tag, the z2jh example's hub image and
the wheel its Dockerfile installs, and the CHANGELOG's newest entry."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
VERSION = (REPO / "VERSION").read_text().strip()


def test_the_version_is_a_semantic_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


def test_every_artefact_carries_it(quota_hub_bin):
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    wheel = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())["project"]["version"]
    npm = json.loads((REPO / "js" / "package.json").read_text())["version"]
    lock = json.loads((REPO / "js" / "package-lock.json").read_text())["packages"][""]["version"]
    lab = {"lab wheel": tomllib.loads((REPO / "lab" / "pyproject.toml").read_text())["project"]["version"],
           "lab npm": json.loads((REPO / "lab" / "package.json").read_text())["version"],
           "lab npm lock": json.loads((REPO / "lab" / "package-lock.json").read_text())["packages"][""]["version"]}
    assert lab == dict.fromkeys(lab, VERSION)
    from jupyterlab_quota import __version__ as lab_module
    assert lab_module == VERSION
    chart = yaml.safe_load((REPO / "deploy" / "helm" / "quota-hub" / "Chart.yaml").read_text())
    binary = subprocess.run([quota_hub_bin, "--version"], capture_output=True, text=True, check=True).stdout.split()
    assert {"crates": cargo, "wheel": wheel, "npm": npm, "npm lock": lock, "chart": chart["version"],
            "chart appVersion": chart["appVersion"], "quota-hub --version": binary[-1]} == dict.fromkeys(
        ["crates", "wheel", "npm", "npm lock", "chart", "chart appVersion", "quota-hub --version"], VERSION)
    z2jh = yaml.safe_load((REPO / "examples" / "z2jh" / "config.yaml").read_text())
    assert z2jh["hub"]["image"]["tag"].endswith(f"-quota-{VERSION}")
    assert f"quota-hub:{VERSION}" in (REPO / "docs" / "deploy.md").read_text()
    hub_image = (REPO / "deploy" / "z2jh" / "hub.Dockerfile").read_text()
    assert re.search(rf"^ARG QUOTA_VERSION={re.escape(VERSION)}$", hub_image, re.M), "deploy/z2jh/hub.Dockerfile's QUOTA_VERSION"


def test_the_changelog_starts_with_this_version():
    heads = re.findall(r"^## (.+)$", (REPO / "CHANGELOG.md").read_text(), re.M)
    assert heads and heads[0].split()[0] == VERSION, heads[:2]


def test_every_host_names_the_one_wit_version():
    """wit/ holds one interface version; the guest and the Rust host bind it by path, the Python host
    names it once (jco's JavaScript keys imports without a version)."""
    from jupyterhub_quota.host.component import WIT_VERSION

    folders = [p.name for p in (REPO / "wit").iterdir() if p.is_dir()]
    assert len(folders) == 1, folders
    wit = folders[0]
    assert re.search(rf"^package quota:engine@{re.escape(wit)};", (REPO / "wit" / wit / "quota.wit").read_text(), re.M)
    for crate in ("wasm", "host-shim"):
        assert f'path: "../wit/{wit}"' in (REPO / crate / "src" / "bindings.rs").read_text(), crate
    assert WIT_VERSION == wit
