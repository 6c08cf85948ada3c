"""The compiled engine kept on disk by the Python host (host/compiled_cache.py), on quota-hub's rules
(host-shim/tests/integration/compile_cache.rs): a kept file is used by the next load, anything that
does not check out is compiled afresh and written again, `QUOTA_CACHE_DIR=off` keeps nothing, and a
folder that cannot be written only costs the compile."""

from __future__ import annotations

import hashlib

import pytest
import wasmtime

from jupyterhub_quota.host import compiled_cache
from jupyterhub_quota.host.component import COMPONENT_PATH, _CHECKOUT_PATH

PATH = COMPONENT_PATH if COMPONENT_PATH.is_file() else _CHECKOUT_PATH
API = "quota:engine/api@0.3.0"


@pytest.fixture
def compiles(monkeypatch):
    """How many times the component was compiled (not loaded from a kept file)."""
    real = compiled_cache.WasmComponent
    count = {"n": 0}

    class Counting:
        deserialize = real.deserialize

        def __new__(cls, engine, wasm):
            count["n"] += 1
            return real(engine, wasm)

    monkeypatch.setattr(compiled_cache, "WasmComponent", Counting)
    return count


def load():
    config = wasmtime.Config()
    config.epoch_interruption = True
    c = compiled_cache.compiled(wasmtime.Engine(config), PATH, settings="epoch_interruption")
    assert c.get_export_index(API) is not None, "a usable component"
    return c


def the_file(folder):
    [f] = [p for p in folder.iterdir() if p.suffix == ".cwasm"]
    return f


def test_a_kept_file_is_used_and_one_that_does_not_check_out_is_compiled_again(tmp_path, monkeypatch, compiles):
    monkeypatch.setenv("QUOTA_CACHE_DIR", str(tmp_path / "cache"))
    load()
    assert compiles["n"] == 1
    f = the_file(tmp_path / "cache")
    data = f.read_bytes()
    wasm = PATH.read_bytes()
    assert data[:8] == b"QUOTACW1"
    assert data[8:40] == compiled_cache.key(wasm, "epoch_interruption")
    assert f.name == f"quota-engine-{data[8:24].hex()}.cwasm"
    assert data[40:72] == hashlib.sha256(data[72:]).digest()
    load()
    assert compiles["n"] == 1, "the second load used the kept file"
    # One changed byte of the compiled code, a truncated file, garbage: compiled and written again.
    for broken in (data[:-1] + bytes([data[-1] ^ 1]), data[: len(data) // 2], b"not a compiled engine"):
        f.write_bytes(broken)
        before = compiles["n"]
        load()
        assert compiles["n"] == before + 1
        assert compiled_cache.checked(f.read_bytes(), data[8:40]) is not None, "written again, whole"
    # Another engine's settings have another key: another file.
    assert compiled_cache.key(wasm, "other settings") != data[8:40]
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.endswith(".tmp")], "no temporary file left"


def test_off_keeps_nothing_and_an_unwritable_folder_only_costs_the_compile(tmp_path, monkeypatch, compiles):
    monkeypatch.setenv("QUOTA_CACHE_DIR", "off")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert compiled_cache.cache_dir() is None
    load()
    load()
    assert compiles["n"] == 2 and not (tmp_path / "home").exists()
    # A file where the folder should be: nothing can be written, the engine loads all the same.
    (tmp_path / "blocked").write_text("a file")
    monkeypatch.setenv("QUOTA_CACHE_DIR", str(tmp_path / "blocked" / "cache"))
    load()
    assert compiles["n"] == 3


def test_the_folder_follows_quota_hubs_rule(monkeypatch, tmp_path):
    monkeypatch.delenv("QUOTA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compiled_cache.cache_dir() == tmp_path / "xdg" / "quota-engine"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert compiled_cache.cache_dir() == tmp_path / ".cache" / "quota-engine"
    monkeypatch.setenv("QUOTA_CACHE_DIR", str(tmp_path / "mine"))
    assert compiled_cache.cache_dir() == tmp_path / "mine"
