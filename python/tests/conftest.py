import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    """One folder for the compiled engine (`QUOTA_CACHE_DIR`, host/compiled_cache.py: what a hub or
    command does by default in ~/.cache/quota-engine), fresh for the session: each hub and command
    the tests start after the first loads it in milliseconds instead of compiling it (about a second
    of CPU each, most of the CPU the command-line tests used). test_compiled_cache.py tests the cache
    itself; a test that gives its processes QUOTA_CACHE_DIR=off compiles, as before."""
    if "QUOTA_CACHE_DIR" not in os.environ:
        config._quota_cache_dir = os.environ["QUOTA_CACHE_DIR"] = tempfile.mkdtemp(prefix="quota-engine-cache-")


def pytest_unconfigure(config):
    folder = getattr(config, "_quota_cache_dir", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def rust_bin(name: str, package: str) -> str:
    """A workspace binary: the one `cargo test --workspace` left in target/debug (the test command
    runs it first), else built now. (`cargo run -p` would rebuild wasmtime with another feature set.)"""
    path = REPO / "target" / "debug" / name
    if not path.exists():
        subprocess.run(["cargo", "build", "-q", "--locked", "-p", package, "--bin", name], cwd=REPO, check=True)
    return str(path)


@pytest.fixture(scope="session")
def native_transcripts():
    """The native core's transcripts of every scenario (Rust, `scenario-transcripts`)."""
    out = subprocess.run([rust_bin("scenario-transcripts", "quota-scenarios")], cwd=REPO, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.fixture(scope="session")
def quota_hub_bin():
    return rust_bin("quota-hub", "quota-hub")


@pytest.fixture(scope="session")
def shared_hub(tmp_path_factory):
    """One JupyterHub (support/hub_values.yaml, the simple spawner) for the suites whose tests each
    use users of their own and assert nothing hub-wide: test_hub.py's and test_hub_pages.py's. It
    has the operator's own spawn hook and form kept beside quota's (`QT_EXTRA_PRE_SPAWN`,
    `QT_OWN_FORM`), and spawns that may stay pending ten minutes (`QT_HTTP_TIMEOUT`: "slow..."
    users' servers never answer). Suites that count hub-wide (the metrics), change its
    configuration (refresh rules, groups, JupyterLab, KubeSpawner) or stop it start their own."""
    from support.hub_process import HERE, Hub

    h = Hub(tmp_path_factory.mktemp("shared-hub"), HERE / "hub_values.yaml",
            extra_env={"QT_EXTRA_PRE_SPAWN": "1", "QT_OWN_FORM": "1", "QT_HTTP_TIMEOUT": "600"}).start()
    yield h
    h.stop()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (tests/chromium.py), one per test module."""
    import playwright.sync_api as playwright_sync

    from support.chromium import launch

    with playwright_sync.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()
