"""What docs/z2jh.md ships besides the hub's behaviour (test_kubespawner.py): the values given as
the dict z2jh hands over configure what the file does, and the hub image's recipe
(deploy/z2jh/hub.Dockerfile: z2jh's hub image plus the wheel) works: the wheel installs into a fresh
virtualenv beside the image's own pinned JupyterHub, KubeSpawner, PyYAML and prometheus-client
without moving them, imports and gates a start."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from support.hub_process import DEADLINE_S, HERE
from jupyterhub_quota import Caller, QuotaEngine
from jupyterhub_quota.host import values as values_mod
from jupyterhub_quota.hub.placement import accelerators

REPO = HERE.parents[2]
EXAMPLE = REPO / "examples" / "z2jh" / "config.yaml"
DOCKERFILE = REPO / "deploy" / "z2jh" / "hub.Dockerfile"
#: The pins of z2jh's hub image that the wheel must not move (images/hub/requirements.txt of the
#: z2jh release the Dockerfile extends).
Z2JH_HUB_PINS = {
    "4.4.0": {"jupyterhub": "5.5.0", "jupyterhub-kubespawner": "7.0.0", "pyyaml": "6.0.3", "prometheus-client": "0.25.0",
              "sqlalchemy": "2.0.50"},
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


def test_the_jupyterhub_5_run_is_the_pair_z2jhs_hub_image_ships():
    """scripts/test-python.sh's JupyterHub 5 run installs exactly the image's pins (and the suite
    running there says which JupyterHub it is)."""
    version = re.search(r"^ARG Z2JH_VERSION=(\S+)$", DOCKERFILE.read_text(), re.M).group(1)
    lines = (REPO / "python" / "requirements-test-jh5.txt").read_text().splitlines()
    reqs = dict(l.split("==") for l in lines if "==" in l and not l.startswith("#"))
    assert {k: reqs.get(k) for k in Z2JH_HUB_PINS[version]} == Z2JH_HUB_PINS[version]
    tested = re.search(r"Tested\s+with\s+z2jh's\s+hub\s+versions\s+\(JupyterHub\s+([\d.]+),\s+KubeSpawner\s+([\d.]+)\)",
                       (REPO / "docs" / "z2jh.md").read_text())
    assert tested and tested.groups() == (reqs["jupyterhub"], reqs["jupyterhub-kubespawner"]), "docs/z2jh.md names the pair"


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


def dockerfile_args() -> dict[str, str]:
    """The Dockerfile's build arguments and their defaults."""
    return dict(re.findall(r"^ARG (\w+)=\"?([^\"\n]*)\"?$", DOCKERFILE.read_text(), re.M))


def test_the_image_copies_the_wheel_of_its_own_version_from_a_folder_holding_several():
    """The wheel the image installs is VERSION's by default (a build argument names another), so a
    context that also holds an older or newer wheel (target/wheels after two builds) builds the
    version it says, and no glob can match two files."""
    from dockerfile_parse import DockerfileParser

    version = (REPO / "VERSION").read_text().strip()
    args = dockerfile_args()
    assert args["QUOTA_VERSION"] == version, "deploy/z2jh/hub.Dockerfile's QUOTA_VERSION is VERSION"
    [copy] = [i["value"].split() for i in DockerfileParser(path=str(DOCKERFILE)).structure if i["instruction"] == "COPY"]
    src = copy[0].replace("${QUOTA_VERSION}", args["QUOTA_VERSION"])
    assert not any(c in src for c in "*?[$"), src
    names = [f"jupyterhub_quota-{v}-py3-none-any.whl" for v in ("0.1.0", version, "9.9.9")]
    assert [n for n in names if n == src] == [f"jupyterhub_quota-{version}-py3-none-any.whl"]
    assert "${QUOTA_VERSION}" in dockerfile_install(), "the RUN line installs the copied file, not a glob"


def dockerfile_install() -> str:
    """The Dockerfile's `RUN` that installs the wheel (a build argument reaches it in the
    environment, as `docker build` passes one)."""
    from dockerfile_parse import DockerfileParser

    parser = DockerfileParser(path=str(DOCKERFILE))
    [run] = [i["value"] for i in parser.structure if i["instruction"] == "RUN" and "pip install" in i["value"]]
    return run


@pytest.mark.parametrize("extras", ["", "postgres"])
def test_the_wheel_installs_beside_the_z2jh_hub_images_pins_and_works(tmp_path, extras):
    """The Dockerfile's own `pip install` line, run by the shell with the build argument `EXTRAS`, in
    a fresh virtualenv that holds the hub image's pinned JupyterHub, KubeSpawner, PyYAML and
    prometheus-client. Every pin stays, and the installed package imports, says its version and
    gates a start; with `EXTRAS=postgres` psycopg is there too."""
    version = re.search(r"^ARG Z2JH_VERSION=(\S+)$", DOCKERFILE.read_text(), re.M).group(1)
    pins = Z2JH_HUB_PINS[version]
    [wheel] = sorted((REPO / "target" / "python-dist").glob("jupyterhub_quota-*-py3-none-any.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=DEADLINE_S)
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    out = subprocess.run([*pip, *[f"{k}=={v}" for k, v in pins.items()]], capture_output=True, text=True, timeout=DEADLINE_S * 5)
    assert out.returncode == 0, out.stdout + out.stderr
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    shutil.copy(wheel, wheels)
    run = dockerfile_install().replace("/tmp/wheels", str(wheels))
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "EXTRAS": extras, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "QUOTA_VERSION": dockerfile_args()["QUOTA_VERSION"]}
    out = subprocess.run(["sh", "-c", run], capture_output=True, text=True, timeout=DEADLINE_S * 5, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"jupyterhub-quota {env['QUOTA_VERSION']} in JupyterHub {pins['jupyterhub']}" in out.stdout
    assert not wheels.exists(), "the RUN line cleans up"
    # The operator's command line comes with it (docs/z2jh.md, 8).
    cli_help = subprocess.run([str(venv / "bin" / "jupyterhub-quota"), "--help"], capture_output=True, text=True)
    assert cli_help.returncode == 0 and "export-ledger" in cli_help.stdout, cli_help.stderr
    has_psycopg = subprocess.run([py, "-c", "import psycopg"], capture_output=True).returncode == 0
    assert has_psycopg == (extras == "postgres")
    frozen = subprocess.run([py, "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    installed = {re.sub(r"[-_.]+", "-", n).lower(): v for n, _, v in (l.partition("==") for l in frozen.splitlines()) if v}
    assert {k: installed.get(k) for k in pins} == pins
    check = subprocess.run([py, "-c", """
import json, jupyterhub_quota
from jupyterhub_quota import Caller, QuotaEngine
e = QuotaEngine(":memory:", {"custom": {"authMode": "github", "quota": {"defaultQuota": 50}}})
r = e.handle_request("POST", "/api/quota/sessions", body='{"username": "ann", "runtime_minutes": 30}',
                     caller=Caller("hub", scopes=("quota:sessions",)))
print(json.dumps({"version": jupyterhub_quota.__version__, "status": r.status}))
"""], capture_output=True, text=True, timeout=DEADLINE_S)
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout) == {"version": (REPO / "VERSION").read_text().strip(), "status": 201}


def test_every_key_the_example_sets_is_one_z2jh_4_4_0_knows():
    """examples/z2jh/config.yaml against z2jh 4.4.0's default values (fixtures/z2jh-4.4.0): every
    key it sets where z2jh's defaults hold a fixed set of keys is one of them (z2jh's schema refuses
    any other), down to the free-form maps (hub.services, hub.loadRoles, custom, ...). The whole
    schema (scripts/check_z2jh_values.py) runs in the release workflow, which can download it."""
    defaults = yaml.safe_load((REPO / "python" / "tests" / "fixtures" / "z2jh-4.4.0" / "values.yaml").read_text())

    def unknown(given: dict, known: dict, path: tuple = ()) -> list[str]:
        out = []
        for k, v in given.items():
            if k not in known:
                out.append(".".join((*path, k)))
            elif isinstance(v, dict) and isinstance(known[k], dict) and known[k]:
                out += unknown(v, known[k], (*path, k))
        return out

    example = yaml.safe_load(EXAMPLE.read_text())
    assert unknown(example, defaults) == []
    # The check finds a misspelt key, at any depth.
    for misspelt in ("extraContainer", "netwrkPolicy"):
        bad = copy.deepcopy(example)
        bad["hub"][misspelt] = bad["hub"].get("extraContainers", {})
        assert unknown(bad, defaults) == [f"hub.{misspelt}"]
    # Everything the pages after section 2 use is in the example.
    hub = example["hub"]
    assert set(hub["services"]) == {"quota-cron", "prometheus"}
    assert {"quota-cron", "prometheus", "course-101-staff"} <= set(hub["loadRoles"])
    assert hub["networkPolicy"]["ingress"] and [c["name"] for c in hub["extraContainers"]] == ["litestream"]


def test_the_schema_check_merges_as_helm_does_and_names_each_problem(tmp_path):
    """scripts/check_z2jh_values.py, on a small schema of z2jh's shape: maps merge over the
    defaults, a list replaces, null removes; an unknown key or a wrong type is named with its path."""
    sys.path.insert(0, str(REPO / "scripts"))
    from check_z2jh_values import helm_merge, problems

    assert helm_merge({"a": {"b": 1, "c": [1]}, "d": 1}, {"a": {"c": [2]}, "d": None}) == {"a": {"b": 1, "c": [2]}}
    schema = {"type": "object", "additionalProperties": False, "required": ["hub"],
              "properties": {"hub": {"type": "object", "additionalProperties": False,
                                     "properties": {"services": {"type": "object"}, "extraContainers": {"type": "array"}}}}}
    defaults = {"hub": {"services": {}, "extraContainers": []}}
    assert problems(defaults, schema, {"hub": {"services": {"quota-cron": {}}}}) == []
    assert problems(defaults, schema, {"hub": {"extraContainer": []}}) == [
        "hub: Additional properties are not allowed ('extraContainer' was unexpected)"]
    assert problems(defaults, schema, {"hub": {"extraContainers": {}}}) == ["hub.extraContainers: {} is not of type 'array'"]
