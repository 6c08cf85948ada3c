"""Component calls with each function's converters (``wasm_convert``) built once (issue 36): an
export's kept by the :class:`Component` for all its instances, an import's with the import. This
leans on wasmtime-py's ctypes layer (``wasmtime._ffi``, the linker's function slab); its range is
50.x in ``pyproject.toml``, and ``tests/test_wasm_calls.py`` runs every converter against
wasmtime-py's own."""

from __future__ import annotations

from ctypes import byref, create_string_buffer
from typing import Any, Callable, Optional

from wasmtime import _ffi as ffi
from wasmtime.component import _linker, _types as T
from wasmtime.component._enter import catch_exceptions, enter_wasm

from .wasm_convert import Lower, lifter, lifter_unobserved, lowerer

_val_t = ffi.wasmtime_component_val_t


class ExportCall:
    """A component function's converters, read from its type once: ``call(func, store, *args)``
    does what wasmtime-py's ``Func.__call__`` does, without reading the type again."""

    def __init__(self, fty: Any):
        self.params = [lowerer(t) for _name, t in fty.params]
        result = fty.result
        self.result = None if result is None else lifter(result)
        #: The same result with its observations left unread, for an engine nobody observes (an
        #: export that observes nothing: the full converter).
        self.result_unobserved = (None if result is None else lifter_unobserved(result)) or self.result

    def __call__(self, func: Any, store: Any, *args: Any, observed: bool = True) -> Any:
        params = self.params
        if len(args) != len(params):
            raise TypeError(f"wrong number of parameters provided: given {len(args)}, expected {len(params)}")
        capi = (_val_t * len(params))()
        n = 0
        try:
            for low, v in zip(params, args):
                low(v, capi[n])
                n += 1
            result = self.result if observed else self.result_unobserved
            space = _val_t() if result is not None else None
            enter_wasm(lambda: ffi.wasmtime_component_func_call(
                byref(func._func), store._context(), capi, n,
                None if space is None else byref(space), 0 if space is None else 1))
            return None if result is None else result(space)
        finally:
            for i in range(n):
                ffi.wasmtime_component_val_delete(byref(capi[i]))


class _Import:
    """A host function with its converters, built at its first call from the type wasmtime gives."""

    __slots__ = ("func", "params", "result")

    def __init__(self, func: Callable[..., Any]):
        self.func = func
        self.params: Optional[list] = None
        self.result: Optional[Lower] = None

    def read_type(self, ty: Any) -> None:
        # owner: the type is wasmtime's, borrowed for this call (never freed here)
        with T.FuncType._from_ptr(ty, owner=self) as fty:
            result = fty.result
            self.result = None if result is None else lowerer(result)
            self.params = [lifter(t) for _name, t in fty.params]

    def run(self, args: Any, result: Any) -> None:
        params = self.params
        assert params is not None and len(params) == len(args)
        out = self.func(None, *[lift(a) for a, lift in zip(args, params)])
        if self.result is not None:
            self.result(out, result)


@ffi.wasmtime_component_func_callback_t
def _import_impl(idx, context, ty_raw, args, nargs, results, nresults):  # type: ignore[no-untyped-def]
    # The functions this module adds take no store, so none is made for a call that succeeds; a
    # failure goes back to wasmtime as wasmtime-py reports it.
    try:
        imp = _linker.FUNCTIONS.get(idx or 0)
        if imp.params is None:
            imp.read_type(ty_raw)
        imp.run([args[i] for i in range(nargs)], results[0] if nresults else None)
        return 0
    except BaseException as e:  # noqa: BLE001 - raised again to wasmtime-py's own handler
        def again(_store: Any) -> None:
            raise e
        return catch_exceptions(context, again)


def add_import(instance: Any, name: str, func: Callable[..., Any]) -> None:
    """``instance.add_func(name, func)`` (a wasmtime-py ``LinkerInstance``), with the converters
    built once. ``func`` is called with ``None`` for the store: the engine's imports use none."""
    instance._assert_not_locked()
    encoded = name.encode("utf-8")
    idx = _linker.FUNCTIONS.allocate(_Import(func))
    err = ffi.wasmtime_component_linker_instance_add_func(
        instance.ptr(), create_string_buffer(encoded), len(encoded), _import_impl, idx, _linker.func_finalize)
    if err:
        raise _linker.WasmtimeError._from_ptr(err)
