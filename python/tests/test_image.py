"""quota-hub's container image, built without a container engine (scripts/build-image.sh, which
the README's test command runs first): an OCI image layout that the OCI's own tools read (umoci
unpacks it, checking every blob's digest and size; skopeo inspects it), whose one layer holds a
static binary that runs from an empty root (chroot, as the image's user) and serves, and whose
configuration says what deploy/image/Dockerfile says (user, entry point, command, port, env,
volumes), so `docker build` and the layout give the same image."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from support.hub_process import DEADLINE_S, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import check_elf  # noqa: E402  (the release's own check: scripts/check_elf.py)

REPO = Path(__file__).resolve().parents[2]
LAYOUT = REPO / "target" / "image" / "quota-hub"
VERSION = (REPO / "VERSION").read_text().strip()
DOCKERFILE = REPO / "deploy" / "image" / "Dockerfile"


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is missing: apt-get install {name} (scripts/test-all.sh does)"
    return path


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """The image unpacked by umoci into an empty directory."""
    assert (LAYOUT / "index.json").is_file(), f"{LAYOUT} is missing: run bash scripts/build-image.sh"
    out = tmp_path_factory.mktemp("image") / "bundle"
    r = subprocess.run([tool("umoci"), "unpack", "--image", f"{LAYOUT}:{VERSION}", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def image_config() -> dict:
    r = subprocess.run([tool("skopeo"), "inspect", "--config", f"oci:{LAYOUT}:{VERSION}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_layout_is_an_oci_image_the_oci_tools_read(bundle):
    index = json.loads((LAYOUT / "index.json").read_text())
    assert index["mediaType"] == "application/vnd.oci.image.index.v1+json"
    [m] = index["manifests"]
    assert m["annotations"]["org.opencontainers.image.ref.name"] == VERSION
    raw = subprocess.run([tool("skopeo"), "inspect", "--raw", f"oci:{LAYOUT}:{VERSION}"], capture_output=True, text=True)
    assert raw.returncode == 0, raw.stderr
    manifest = json.loads(raw.stdout)
    assert manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert [l["mediaType"] for l in manifest["layers"]] == ["application/vnd.oci.image.layer.v1.tar+gzip"]
    # umoci's runtime configuration for the bundle: the image's user and process.
    runtime = json.loads((bundle / "config.json").read_text())
    assert (runtime["process"]["user"]["uid"], runtime["process"]["user"]["gid"]) == (65532, 65532)
    assert runtime["process"]["args"] == ["/usr/local/bin/quota-hub", "serve", "--listen", "0.0.0.0:8765"]


def test_the_layer_is_the_binary_its_values_and_its_writable_places(bundle):
    root = bundle / "rootfs"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())
    assert files == ["etc/quota/values.yaml", "usr/local/bin/quota-hub"]
    for writable in ("data", "var/cache/quota-engine"):
        st = (root / writable).stat()
        assert (st.st_uid, st.st_gid) == (65532, 65532), writable
    assert (root / "tmp").stat().st_mode & 0o7777 == 0o1777
    assert (root / "usr/local/bin/quota-hub").stat().st_uid == 0, "the binary is not the server user's to change"


def test_the_binary_is_static(bundle):
    """No program interpreter (PT_INTERP): it needs no dynamic loader or library from any image."""
    data = (bundle / "rootfs/usr/local/bin/quota-hub").read_bytes()
    assert check_elf.problems(data, "amd64") == []


def test_the_image_says_what_the_dockerfile_says():
    parser = DockerfileParser(path=str(DOCKERFILE))
    stages: list[list[dict]] = []
    for instr in parser.structure:
        if instr["instruction"] == "FROM":
            stages.append([])
        if stages and instr["instruction"] != "COMMENT":
            stages[-1].append(instr)
    final = {i["instruction"]: i["value"] for i in stages[-1]}
    assert stages[-1][0]["value"] == "scratch"
    cfg = image_config()["config"]
    assert cfg["User"] == final["USER"]
    assert cfg["Entrypoint"] == json.loads(final["ENTRYPOINT"])
    assert cfg["Cmd"] == json.loads(final["CMD"])
    assert sorted(cfg["ExposedPorts"]) == final["EXPOSE"].split()
    assert sorted(cfg["Volumes"]) == sorted(json.loads(final["VOLUME"]))
    assert cfg["WorkingDir"] == final["WORKDIR"]
    assert cfg["StopSignal"] == final["STOPSIGNAL"]
    assert cfg["Env"] == [f"{k}={v}" for k, v in parser.envs.items()]
    # Every label of the Dockerfile is in the layout; the build's own (version, revision, time) come
    # from build arguments there, so only the fixed ones can be compared.
    for key, value in parser.labels.items():
        assert key in cfg["Labels"], key
        if "$" not in value and value:
            assert cfg["Labels"][key] == value, key
    for key in ("title", "description", "version", "revision", "created", "licenses", "source", "url", "documentation", "vendor"):
        assert f"org.opencontainers.image.{key}" in parser.labels, key
    assert cfg["Labels"]["org.opencontainers.image.version"] == VERSION
    assert cfg["Labels"]["org.opencontainers.image.source"] == "https://github.com/quota-engine/quota"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_binary_serves_from_the_empty_root_as_the_images_user(bundle, tmp_path):
    """Nothing else from any image: chroot into the unpacked layer, as uid 65532 (root can chroot;
    without root the binary runs from the layer directly, with the image's environment only)."""
    root = bundle / "rootfs"
    cfg = image_config()["config"]
    env = dict(e.split("=", 1) for e in cfg["Env"])
    if os.geteuid() == 0:
        chroot = tool("chroot")

        def run(*args: str) -> list[str]:
            return [chroot, "--userspec=65532:65532", str(root), *args]
    else:
        env.update(QUOTA_HUB_DB=f"sqlite://{tmp_path / 'quota.db'}", QUOTA_HUB_VALUES=str(root / "etc/quota/values.yaml"),
                   QUOTA_CACHE_DIR=str(tmp_path / "cache"))

        def run(*args: str) -> list[str]:
            return [str(root / args[0].lstrip("/")), *args[1:]]

    help_ = subprocess.run(run("/usr/local/bin/quota-hub", "--help"), env=env, capture_output=True, text=True, timeout=DEADLINE_S)
    assert help_.returncode == 0 and "serve" in help_.stdout, help_.stderr
    port = free_port()
    proc = subprocess.Popen(run(*cfg["Entrypoint"], "serve", "--listen", f"127.0.0.1:{port}"), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        def ready():
            if proc.poll() is not None:
                raise AssertionError(f"the server exited: {proc.stdout.read()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/hub/readyz", timeout=5) as r:
                    return json.loads(r.read())
            except OSError:
                return None

        assert wait_for("the image's server", ready) == {"status": "ready", "schema_version": 12}
        token = subprocess.run(run("/usr/local/bin/quota-hub", "token", "issue", "--user", "root", "--admin"),
                               env=env, capture_output=True, text=True, timeout=DEADLINE_S)
        assert token.returncode == 0, token.stderr
        req = urllib.request.Request(f"http://127.0.0.1:{port}/hub/admin/api/quota/users/alice", method="POST",
                                     data=b'{"action": "set", "amount": 5}',
                                     headers={"Authorization": f"token {token.stdout.strip()}"})
        with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
            assert json.loads(r.read())["balance"] == 5
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/hub/api/quota/me", timeout=DEADLINE_S)
        assert e.value.code == 401
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=DEADLINE_S) == 0, "a clean stop on SIGTERM"
    if os.geteuid() == 0:
        # The database and the compiled engine went to the image's volumes, nowhere else.
        assert (root / "data/quota.db").is_file()
        assert any((root / "var/cache/quota-engine").iterdir())
