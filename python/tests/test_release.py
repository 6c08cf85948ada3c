"""The release scripts/release.sh builds into dist/: every artifact is there under its version and
in SHA256SUMS; the wheel and the npm package say the version; the image archive is one tag over an
index of an amd64 and an arm64 image, each unpacked by umoci with a static binary for its own
architecture; the chart packages the version; the three SBOMs are valid CycloneDX 1.5 (the
cyclonedx library's own schema validator) and list what the artifacts carry, at the versions the
lock files pin.

The README's test command checks the release path on what it built (`release.sh --check`, amd64
only, no SBOMs) and runs these with `QUOTA_RELEASE_CHECK=1 -m "not release_only"`; the release
workflow runs `release.sh` whole and every test here."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from test_image import check_elf, tool

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "dist"
VERSION = (REPO / "VERSION").read_text().strip()
RELEASE_PY = REPO / "target" / "release-venv" / "bin" / "python"
#: `release.sh --check` (the test command's): one platform, no SBOMs.
CHECK = os.environ.get("QUOTA_RELEASE_CHECK") == "1"
ARCHS = ("amd64",) if CHECK else ("amd64", "arm64")
FILES = {
    f"jupyterhub_quota-{VERSION}-py3-none-any.whl",
    f"jupyterlab_quota-{VERSION}-py3-none-any.whl",
    f"quota-engine-js-{VERSION}.tgz",
    *(f"quota-hub-{VERSION}-linux-{arch}" for arch in ARCHS),
    f"quota-hub-image-{VERSION}.oci.tar",
    f"quota-hub-{VERSION}.tgz",
} | (set() if CHECK else {
    f"quota-hub-{VERSION}.cdx.json",
    f"quota-engine-{VERSION}.cdx.json",
    f"jupyterhub_quota-{VERSION}.cdx.json",
})
#: What only a whole release checks (the release workflow): the arm64 binary, the SBOMs.
release_only = pytest.mark.release_only


@pytest.fixture(scope="module", autouse=True)
def built():
    assert (DIST / "SHA256SUMS").is_file(), "dist/ is missing: run bash scripts/release.sh"


def test_every_artifact_is_there_and_its_checksum_holds():
    assert {p.name for p in DIST.iterdir()} == FILES | {"SHA256SUMS"}
    sums = {}
    for line in (DIST / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        sums[name] = digest
    assert set(sums) == FILES
    for name, digest in sums.items():
        assert hashlib.sha256((DIST / name).read_bytes()).hexdigest() == digest, name
    r = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=DIST, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_wheel_and_the_npm_package_carry_the_version_and_the_engine():
    with zipfile.ZipFile(DIST / f"jupyterhub_quota-{VERSION}-py3-none-any.whl") as w:
        names = w.namelist()
        meta = w.read(f"jupyterhub_quota-{VERSION}.dist-info/METADATA").decode()
    assert f"\nVersion: {VERSION}\n" in meta
    assert "jupyterhub_quota/host/quota-engine.wasm" in names
    # JupyterLab's: the prebuilt labextension where JupyterLab finds it, and the server extension on.
    with zipfile.ZipFile(DIST / f"jupyterlab_quota-{VERSION}-py3-none-any.whl") as w:
        names = w.namelist()
        meta = w.read(f"jupyterlab_quota-{VERSION}.dist-info/METADATA").decode()
    assert f"\nVersion: {VERSION}\n" in meta
    data = f"jupyterlab_quota-{VERSION}.data/data/"
    assert f"{data}share/jupyter/labextensions/jupyterlab-quota/package.json" in names
    assert any(n.startswith(f"{data}share/jupyter/labextensions/jupyterlab-quota/static/remoteEntry.") for n in names)
    assert f"{data}etc/jupyter/jupyter_server_config.d/jupyterlab_quota.json" in names
    with tarfile.open(DIST / f"quota-engine-js-{VERSION}.tgz") as t:
        pkg = json.load(t.extractfile("package/package.json"))
        assert any(n.startswith("package/gen/") and n.endswith(".wasm") for n in t.getnames())
    assert (pkg["name"], pkg["version"]) == ("@quota-engine/js", VERSION)


def test_the_image_is_one_tag_over_an_image_per_platform(tmp_path):
    """A release: an index of an amd64 and an arm64 image; a release check: the amd64 image."""
    archive = f"oci-archive:{DIST / f'quota-hub-image-{VERSION}.oci.tar'}:{VERSION}"
    raw = subprocess.run([tool("skopeo"), "inspect", "--raw", archive], capture_output=True, text=True)
    assert raw.returncode == 0, raw.stderr
    index = json.loads(raw.stdout)
    if len(ARCHS) == 1:
        assert index["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    else:
        assert index["mediaType"] == "application/vnd.oci.image.index.v1+json"
        platforms = sorted((m["platform"]["os"], m["platform"]["architecture"]) for m in index["manifests"])
        assert platforms == [("linux", arch) for arch in ARCHS]
    for arch in ARCHS:
        # skopeo picks the platform's image out of the index, as a pull on that machine would.
        layout = tmp_path / arch
        r = subprocess.run([tool("skopeo"), "copy", "--override-os", "linux", "--override-arch", arch, archive,
                            f"oci:{layout}:{VERSION}"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        config = json.loads(subprocess.run([tool("skopeo"), "inspect", "--config", f"oci:{layout}:{VERSION}"],
                                           capture_output=True, text=True, check=True).stdout)
        assert config["architecture"] == arch and config["config"]["User"] == "65532:65532"
        assert config["config"]["Labels"]["org.opencontainers.image.version"] == VERSION
        bundle = tmp_path / f"{arch}-bundle"
        r = subprocess.run([tool("umoci"), "unpack", "--image", f"{layout}:{VERSION}", str(bundle)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        binary = (bundle / "rootfs/usr/local/bin/quota-hub").read_bytes()
        assert check_elf.problems(binary, arch) == [], arch
        assert binary == (DIST / f"quota-hub-{VERSION}-linux-{arch}").read_bytes()
    for arch in ARCHS:
        check = subprocess.run(["python3", str(REPO / "scripts/check_elf.py"), str(DIST / f"quota-hub-{VERSION}-linux-{arch}"), arch],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stderr


@release_only
def test_the_arm64_binary_runs_under_qemu_user():
    qemu = tool("qemu-aarch64")
    r = subprocess.run([qemu, str(DIST / f"quota-hub-{VERSION}-linux-arm64"), "--version"], capture_output=True, text=True)
    assert (r.returncode, r.stdout.strip()) == (0, f"quota-hub {VERSION}"), r.stderr


def test_the_chart_packages_this_version():
    with tarfile.open(DIST / f"quota-hub-{VERSION}.tgz") as t:
        chart = yaml.safe_load(t.extractfile("quota-hub/Chart.yaml"))
        names = t.getnames()
    assert (chart["version"], chart["appVersion"]) == (VERSION, VERSION)
    assert "quota-hub/values.schema.json" in names and "quota-hub/templates/deployment.yaml" in names


def test_the_workflow_publishes_both_wheels_that_the_docs_install():
    workflow = (REPO / ".github" / "workflows" / "release.yml").read_text()
    assert ('cp "dist/jupyterhub_quota-${VERSION}-py3-none-any.whl" "dist/jupyterlab_quota-${VERSION}-py3-none-any.whl" pypi/'
            in workflow), "PyPI gets the hub's package and JupyterLab's extension"
    for doc, line in (("docs/jupyterlab.md", "pip install jupyterlab-quota"), ("docs/release.md", f"jupyterlab_quota-V-py3-none-any.whl")):
        assert line in (REPO / doc).read_text(), (doc, line)


def test_the_chart_installs_as_documented_from_an_oci_registry(tmp_path):
    """What the release workflow does with the chart (`helm push` beside the image's repository,
    under charts/) and what docs/deploy.md tells an operator (`helm install oci://...`), against a
    real registry (Debian's docker-registry on loopback): the pulled chart is the packaged one, and
    it deploys the image the workflow pushed (the chart's image.repository, set once)."""
    import shutil
    import socket
    import time

    import helm_python as helm

    registry = shutil.which("docker-registry")
    assert registry, "docker-registry is missing (the README's test command installs it: apt-get install docker-registry)"
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    config = tmp_path / "registry.yml"
    config.write_text(yaml.safe_dump({"version": 0.1, "storage": {"filesystem": {"rootdirectory": str(tmp_path / "blobs")}},
                                      "http": {"addr": f"127.0.0.1:{port}"}, "log": {"level": "error"}}))
    proc = subprocess.Popen([registry, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the registry did not listen"
                time.sleep(0.1)
        workflow = (REPO / ".github" / "workflows" / "release.yml").read_text()
        assert 'helm push "dist/quota-hub-${VERSION}.tgz" "oci://${repo%/*}/charts"' in workflow
        repo = yaml.safe_load((REPO / "deploy/helm/quota-hub/values.yaml").read_text())["image"]["repository"]
        docs = (REPO / "docs" / "deploy.md").read_text()
        assert f"helm install quota-hub oci://{repo.rsplit('/', 1)[0]}/charts/quota-hub --version {VERSION}" in docs
        helm.push(DIST / f"quota-hub-{VERSION}.tgz", f"oci://127.0.0.1:{port}/charts", plain_http=True)
        out = tmp_path / "pulled"
        out.mkdir()
        helm.pull(f"oci://127.0.0.1:{port}/charts/quota-hub", version=VERSION, destination=out, plain_http=True)
        pulled = out / f"quota-hub-{VERSION}.tgz"
        assert pulled.read_bytes() == (DIST / f"quota-hub-{VERSION}.tgz").read_bytes(), "the chart a user pulls is the packaged one"
        chart = helm.Chart.load(str(pulled))
        try:
            rendered = chart.render({}, name="quota-hub", namespace="jhub", is_install=True)
        finally:
            chart.close()
        [dep] = [d for path, text in rendered.items() if not path.endswith("NOTES.txt")
                 for d in yaml.safe_load_all(text) if d and d.get("kind") == "Deployment"]
        assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == f"{repo}:{VERSION}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def sbom(name: str) -> dict:
    path = DIST / name
    # The cyclonedx library's strict JSON validator, with the schema it ships (no download).
    code = ("import sys; from cyclonedx.validation.json import JsonStrictValidator; from cyclonedx.schema import SchemaVersion; "
            "e = JsonStrictValidator(SchemaVersion.V1_5).validate_str(open(sys.argv[1]).read()); print(e or ''); sys.exit(1 if e else 0)")
    r = subprocess.run([str(RELEASE_PY), "-c", code, str(path)], capture_output=True, text=True)
    assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}"
    text = path.read_text()
    assert str(REPO) not in text, f"{name} names the build's checkout"
    doc = json.loads(text)
    assert (doc["bomFormat"], doc["specVersion"]) == ("CycloneDX", "1.5")
    return doc


def locked(lock: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in tomllib.loads(lock.read_text())["package"]:
        out.setdefault(p["name"], set()).add(p["version"])
    return out


@release_only
def test_the_rust_sboms_list_the_locked_crates():
    lock = locked(REPO / "Cargo.lock")
    hub = sbom(f"quota-hub-{VERSION}.cdx.json")
    assert hub["metadata"]["component"]["name"] == "quota-hub"
    found = {c["name"]: c["version"] for c in hub["components"]}
    for crate in ("wasmtime", "rusqlite", "quota-core"):
        assert crate in found, crate
        assert found[crate] in lock[crate], (crate, found[crate])
    assert all(c.get("purl", "").startswith("pkg:cargo/") for c in hub["components"])
    engine = sbom(f"quota-engine-{VERSION}.cdx.json")
    assert engine["metadata"]["component"]["name"] == "quota-wasm"
    names = {c["name"] for c in engine["components"]}
    assert "quota-core" in names and "wasmtime" not in names, "the component's own crates, not the host's"


@release_only
def test_the_wheel_sbom_lists_the_package_and_what_it_installs():
    doc = sbom(f"jupyterhub_quota-{VERSION}.cdx.json")
    root = doc["metadata"]["component"]
    assert (root["name"], root["version"]) == ("jupyterhub-quota", VERSION)
    found = {c["name"].lower(): c["version"] for c in doc["components"]}
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", (REPO / "python/constraints-test.txt").read_text(), re.M))
    assert found["wasmtime"] == pins["wasmtime"] and found["pyyaml"] == pins["PyYAML"]
    assert "pip" not in found, "only the package's environment"
