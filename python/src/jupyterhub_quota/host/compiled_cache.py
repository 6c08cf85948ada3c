"""The compiled engine kept on disk as quota-hub keeps it (host-shim/src/compile_cache.rs): the same
setting, folder and file layout (docs/operations.md, "A fast command line"). Compiling the
component takes about a second of CPU in every process that loads it (each hub start, each
``jupyterhub-quota`` command); a kept file loads in milliseconds.

The folder is ``QUOTA_CACHE_DIR``, else ``$XDG_CACHE_HOME/quota-engine``, else
``~/.cache/quota-engine``; ``QUOTA_CACHE_DIR=off`` compiles every time. A file is
``QUOTACW1``, its key (SHA-256 over the component's SHA-256 and what the compiled form depends on
here: wasmtime-py's version, the engine's settings, the machine), the SHA-256 of the compiled bytes,
then those bytes. It is used only if its key and checksum match (so a truncated or corrupted file
is never handed to wasmtime, which checks its own header again); anything else is compiled afresh
and written again atomically. A folder that cannot be written only costs the compile."""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Optional

import wasmtime
from wasmtime.component import Component as WasmComponent

log = logging.getLogger("JupyterHub.quota")

MAGIC = b"QUOTACW1"


def cache_dir() -> Optional[Path]:
    """quota-hub's rule (`quota_host::default_cache_dir`); None: compile every time."""
    env = {k: os.environ.get(k) or None for k in ("QUOTA_CACHE_DIR", "XDG_CACHE_HOME", "HOME")}
    if env["QUOTA_CACHE_DIR"]:
        return None if env["QUOTA_CACHE_DIR"] == "off" else Path(env["QUOTA_CACHE_DIR"])
    if env["XDG_CACHE_HOME"]:
        return Path(env["XDG_CACHE_HOME"]) / "quota-engine"
    return Path(env["HOME"]) / ".cache" / "quota-engine" if env["HOME"] else None


def key(wasm: bytes, settings: str) -> bytes:
    """The key of ``wasm`` compiled by this wasmtime-py with the engine ``settings``."""
    h = hashlib.sha256(hashlib.sha256(wasm).digest())
    h.update(f"wasmtime-py {version('wasmtime')} {settings} {platform.machine()}".encode())
    return h.digest()


def checked(data: bytes, k: bytes) -> Optional[bytes]:
    """The compiled bytes of a kept file whose magic, key and checksum all match."""
    if len(data) < 72 or data[:8] != MAGIC or data[8:40] != k:
        return None
    payload = data[72:]
    return payload if hashlib.sha256(payload).digest() == data[40:72] else None


def compiled(engine: wasmtime.Engine, path: Path, settings: str) -> WasmComponent:
    """The component at ``path`` for ``engine`` (made with ``settings``): from the kept file when it
    checks out, else compiled and kept for the next process."""
    wasm = path.read_bytes()
    folder = cache_dir()
    if folder is None:
        return WasmComponent(engine, wasm)
    k = key(wasm, settings)
    file = folder / f"quota-engine-{k[:16].hex()}.cwasm"
    try:
        payload = checked(file.read_bytes(), k)
    except OSError:
        payload = None
    if payload is not None:
        try:
            return WasmComponent.deserialize(engine, payload)
        except wasmtime.WasmtimeError as e:
            log.debug("%s: wasmtime refused it (%s): compiling again", file, e)
    component = WasmComponent(engine, wasm)
    compiled_bytes = bytes(component.serialize())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{file.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + k + hashlib.sha256(compiled_bytes).digest() + compiled_bytes)
            os.replace(tmp, file)
        except OSError:
            os.unlink(tmp)
            raise
    except OSError as e:
        log.debug("%s: the compiled engine could not be kept (%s)", file, e)
    return component
