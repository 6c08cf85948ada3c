"""The converters of `wasm_calls` (issue 36) against wasmtime-py's own, on every type the component's
exports and imports use: a value lowered by one and lifted by the other comes back equal, both ways,
and a value of the wrong shape is refused by both."""

from __future__ import annotations

import ctypes
from typing import Any, Iterator

import pytest
import wasmtime
from wasmtime import _ffi as ffi
from wasmtime.component import Linker, Record, Variant
from wasmtime.component import _types as T

from jupyterhub_quota import Component, QuotaEngine
from jupyterhub_quota.host.component import API, HOSTING, SQL
from jupyterhub_quota.host.wasm_calls import add_import, lifter, lowerer
from jupyterhub_quota.host.wasm_convert import lifter_unobserved

VALUES = {"custom": {"authMode": "github"}}


def samples(ty: Any, depth: int = 0) -> Iterator[Any]:
    """A few values of type ``ty``, every case of a variant, option and result among them."""
    if isinstance(ty, T.Bool):
        yield from (True, False)
    elif isinstance(ty, (T.S8, T.S16, T.S32, T.S64)):
        yield from (0, -7, 123)
    elif isinstance(ty, (T.U8, T.U16, T.U32, T.U64)):
        yield from (0, 65535 if not isinstance(ty, T.U8) else 255)
    elif isinstance(ty, T.String):
        yield from ("", "é ∑ x", "SELECT 1")
    elif isinstance(ty, T.EnumType):
        yield from ty.names
    elif isinstance(ty, T.ListType):
        items = list(samples(ty.element, depth + 1))[:2]
        yield from ([], items)
    elif isinstance(ty, T.TupleType):
        yield tuple(next(samples(t, depth + 1)) for t in ty.elements)
    elif isinstance(ty, T.RecordType):
        fields = [(name, list(samples(t, depth + 1))) for name, t in ty.fields]
        for k in range(max(len(v) for _, v in fields) if fields else 1):
            r = Record()
            for name, values in fields:
                setattr(r, name, values[k % len(values)])
            yield r
    elif isinstance(ty, (T.VariantType, T.OptionType, T.ResultType)):
        tagged = ty._tagged()
        for name, t in ty._cases():
            payloads = [None] if t is None else list(samples(t, depth + 1))[:2]
            for p in payloads:
                yield Variant(name, p) if tagged else p
    else:
        raise AssertionError(f"no samples for {ty!r}")


def types() -> Iterator[tuple[str, Any]]:
    """Every parameter and result type of the component's api and hosting exports and sql imports."""
    component = Component.load()
    engine = QuotaEngine(":memory:", VALUES, component=component)
    store = engine._store
    inst = engine._linker.instantiate(store, component.component)
    for iface, names in ((API, ("migrate", "configure", "check-start", "end-session", "cleanup-stale",
                                "run-rule", "run-rule-step", "handle-request", "handle-request-step", "refresh", "active-sessions",
                                "replace-memberships", "next-fire")),
                         (HOSTING, ("contract", "connection-setup"))):
        parent = inst.get_export_index(store, iface)
        for name in names:
            fty = inst.get_func(store, inst.get_export_index(store, name, parent)).type(store)
            for pname, t in fty.params:
                yield f"{name}({pname})", t
            if fty.result is not None:
                yield f"{name} ->", fty.result


CASES = [(f"{where} #{i}", t, v) for where, t in types() for i, v in enumerate(samples(t))]


def lower_with(fn: Any, v: Any) -> Any:
    c = ffi.wasmtime_component_val_t()
    fn(v, c)
    return c


@pytest.mark.parametrize("where,ty,value", CASES, ids=[c[0] for c in CASES])
def test_each_value_comes_back_through_either_converter(where, ty, value):
    ours_low, ours_lift = lowerer(ty), lifter(ty)
    try:
        c = ffi.wasmtime_component_val_t()
        ty.convert_to_c(None, value, ctypes.pointer(c))
    except (TypeError, ValueError) as e:
        # A value wasmtime-py cannot place (an error whose case also matches `ok` by class: the host
        # never lowers such a result) is refused by ours too.
        with pytest.raises(type(e)):
            lower_with(ours_low, value)
        return
    # wasmtime-py -> ours
    assert ours_lift(c) == value
    # ours -> ours
    assert ours_lift(lower_with(ours_low, value)) == value
    # ours -> wasmtime-py
    assert ty.convert_from_c(lower_with(ours_low, value)) == value


def map_observations(ty: Any, value: Any, f: Any) -> Any:
    """``value`` of ``ty`` with each of its observation lists replaced by ``f(list type)``."""
    if isinstance(ty, T.TupleType):
        return (value[0], f(ty.elements[1]))
    if isinstance(ty, T.RecordType):
        r = Record()
        for name, t in ty.fields:
            setattr(r, name, f(t) if name == "observations" else getattr(value, name))
        return r
    for name, t in ty._cases():
        if t is None or lifter_unobserved(t) is None:
            continue
        if ty._tagged() and value.tag == name:
            return Variant(name, map_observations(t, value.payload, f))
        if not ty._tagged() and fits(t, value):  # wasmtime-py tells untagged cases by shape
            return map_observations(t, value, f)
    return value


def fits(ty: Any, value: Any) -> bool:
    """Whether ``value`` has the shape of an observing type ``ty``."""
    if isinstance(ty, T.RecordType):
        return isinstance(value, Record)
    if isinstance(ty, T.TupleType):
        return isinstance(value, tuple)
    if ty._tagged():
        return isinstance(value, Variant)
    return any(t is not None and lifter_unobserved(t) is not None and fits(t, value) for _n, t in ty._cases())


def placeable(ty: Any, value: Any) -> bool:
    """Whether wasmtime-py lowers ``value`` (an `err` string of a result whose `ok` is a variant
    is not: the host never lowers such a result)."""
    try:
        ty.convert_to_c(None, value, ctypes.pointer(ffi.wasmtime_component_val_t()))
        return True
    except (TypeError, ValueError):
        return False


OBSERVING = [(where, ty, value) for where, ty, value in CASES
             if where.split(" #")[0].endswith("->") and lifter_unobserved(ty) is not None and placeable(ty, value)]


@pytest.mark.parametrize("where,ty,value", OBSERVING, ids=[c[0] for c in OBSERVING])
def test_an_unobserved_engine_reads_the_answer_and_leaves_the_observations(where, ty, value):
    observed = map_observations(ty, value, lambda list_type: list(samples(list_type))[1])  # not empty
    c = lower_with(lowerer(ty), observed)
    assert lifter_unobserved(ty)(c) == map_observations(ty, observed, lambda _t: [])
    assert lifter(ty)(lower_with(lowerer(ty), observed)) == observed


def test_every_observing_export_has_an_unobserved_reading():
    observing = {where.split(" ->")[0] for where, _ty, _v in OBSERVING}
    assert observing == {"check-start", "end-session", "cleanup-stale", "run-rule", "run-rule-step", "handle-request",
                         "handle-request-step", "refresh"}, observing


def kinds(ty: Any) -> Iterator[str]:
    yield type(ty).__name__
    if isinstance(ty, T.ListType):
        yield from kinds(ty.element)
    elif isinstance(ty, T.TupleType):
        for t in ty.elements:
            yield from kinds(t)
    elif isinstance(ty, T.RecordType):
        for _, t in ty.fields:
            yield from kinds(t)
    elif isinstance(ty, (T.VariantType, T.OptionType, T.ResultType)):
        for _, t in ty._cases():
            if t is not None:
                yield from kinds(t)


def test_the_cases_cover_every_kind_of_type_the_engine_uses():
    seen = {k for _, t, _ in CASES for k in kinds(t)}
    assert {"String", "S64", "U32", "U64", "Bool", "RecordType", "ListType", "OptionType",
            "ResultType", "VariantType", "EnumType", "TupleType"} <= seen, seen


@pytest.mark.parametrize("value", [3, None, ["x"], b"x"])
def test_a_value_of_the_wrong_shape_is_refused_as_wasmtime_py_refuses_it(value):
    string = next(t for _, t, _ in CASES if isinstance(t, T.String))
    with pytest.raises(TypeError):
        lower_with(lowerer(string), value)
    with pytest.raises(TypeError):
        string.convert_to_c(None, value, ctypes.pointer(ffi.wasmtime_component_val_t()))


def test_a_host_function_that_raises_fails_the_call_with_its_exception():
    component = Component.load()
    linker = Linker(component.engine)
    seen: list[str] = []

    def boom(_store: Any, statement: str, _params: str) -> Any:
        seen.append(statement)
        raise RuntimeError("boom from the host")

    with linker.root() as root:
        with root.add_instance(SQL) as sql:
            add_import(sql, "get-dialect", lambda _store: "sqlite")
            add_import(sql, "query", boom)
            add_import(sql, "execute-many", boom)
    store = wasmtime.Store(component.engine)
    store.set_epoch_deadline(1 << 40)
    inst = linker.instantiate(store, component.component)
    migrate = inst.get_func(store, inst.get_export_index(store, "migrate", inst.get_export_index(store, API)))
    with pytest.raises(RuntimeError, match="boom from the host"):
        component.export_call("migrate", migrate, store, lambda: True)(store)
    assert seen, "the engine's first statement reached the host function"
