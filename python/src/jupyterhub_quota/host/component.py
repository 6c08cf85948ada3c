"""The engine component, compiled once per process (`Component.load`), with its epoch ticker (a
runaway call is interrupted) and the hosting contract it states, per dialect."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import wasmtime
from wasmtime.component import Linker, Variant

from .compiled_cache import compiled
from .contract import HostingContract, Setup, from_wit, setup_from_wit
from .engine_types import EngineError
from .wasm_calls import ExportCall

#: The component shipped inside this package.
COMPONENT_PATH = Path(__file__).with_name("quota-engine.wasm")
#: Where `scripts/build-wasm.sh` puts it, for a source checkout (`PYTHONPATH=python/src`, editable).
_CHECKOUT_PATH = Path(__file__).resolve().parents[4] / "target" / "wasm" / "quota-engine.wasm"

#: The WIT interface version this host speaks (wit/<version>/quota.wit), named here once.
WIT_VERSION = "0.3.0"
API = f"quota:engine/api@{WIT_VERSION}"
SQL = f"quota:engine/sql@{WIT_VERSION}"
HOSTING = f"quota:engine/hosting@{WIT_VERSION}"

# The call deadline, the retry policy, the refresh chunk size, the memory limit and every statement
# a bridge runs of its own are the component's hosting contract (`Component.contract`).
_EPOCH_TICK_S = 0.05


class Component:
    """The compiled component (one per process and path; compiling takes about a second of CPU,
    kept on disk between processes as quota-hub keeps it: compiled_cache.py)."""

    _cache: dict[Path, "Component"] = {}
    _lock = threading.Lock()

    def __init__(self, path: Path):
        config = wasmtime.Config()
        config.epoch_interruption = True
        self.engine = wasmtime.Engine(config)
        try:
            self.component = compiled(self.engine, path, settings="epoch_interruption")
        except (wasmtime.WasmtimeError, OSError) as e:
            raise EngineError(f"loading {path}: {e}") from e
        self.path = path
        self._contracts: dict[str, HostingContract] = {}
        self._export_calls: dict[str, ExportCall] = {}
        ticker = threading.Thread(target=self._tick, name="quota-epoch", daemon=True)
        ticker.start()

    def contract(self, dialect: str) -> HostingContract:
        """The hosting contract for a database of ``dialect`` (``sqlite``, ``postgres``), asked of a
        throwaway instance over no database once per component."""
        c = self._contracts.get(dialect)
        if c is None:
            def refuse(_store: Any, *_args: Any) -> Variant:
                return Variant("other", "this instance has no database")

            linker = Linker(self.engine)
            with linker.root() as root:
                with root.add_instance(SQL) as sql:
                    sql.add_func("get-dialect", lambda _store: dialect)
                    sql.add_func("query", refuse)
                    sql.add_func("execute-many", refuse)
            store = wasmtime.Store(self.engine)
            store.set_epoch_deadline(1 << 40)
            inst = linker.instantiate(store, self.component)
            hosting = inst.get_export_index(store, HOSTING)

            def export(name: str) -> Any:
                idx = None if hosting is None else inst.get_export_index(store, name, hosting)
                if idx is None:
                    raise EngineError(f"the component does not export {HOSTING}#{name}")
                return inst.get_func(store, idx)

            contract, connection_setup = export("contract"), export("connection-setup")
            lock = threading.Lock()

            def setup_statements(busy_wait_ms: int, durability: str) -> tuple[Setup, ...]:
                # The throwaway instance stays, for this pure call; a store is one thread's at a time.
                with lock:
                    return setup_from_wit(connection_setup(store, dialect, busy_wait_ms, durability))

            with lock:
                c = self._contracts[dialect] = from_wit(contract(store, dialect), setup_statements)
        return c

    def export_call(self, name: str, func: Any, store: wasmtime.Store, observed: Callable[[], bool]) -> Callable[..., Any]:
        """``func`` (the export ``name`` of an instance of this component) as a callable
        ``(store, *args)``, its converters built at the first instance and kept for the others.
        What the call observed is read only while ``observed()`` says someone wants it."""
        call = self._export_calls.get(name)
        if call is None:
            call = self._export_calls[name] = ExportCall(func.type(store))
        return lambda store, *args: call(func, store, *args, observed=observed())

    def _tick(self) -> None:
        while True:
            time.sleep(_EPOCH_TICK_S)
            self.engine.increment_epoch()

    @classmethod
    def load(cls, path: Optional[Path] = None) -> "Component":
        if path is None and not COMPONENT_PATH.is_file() and _CHECKOUT_PATH.is_file():
            path = _CHECKOUT_PATH
        p = Path(path or COMPONENT_PATH).resolve()
        with cls._lock:
            c = cls._cache.get(p)
            if c is None:
                if not p.is_file():
                    raise EngineError(
                        f"{p} not found: build it with `bash scripts/build-wasm.sh` in the repository "
                        "(a wheel carries it inside)"
                    )
                c = cls._cache[p] = Component(p)
            return c
