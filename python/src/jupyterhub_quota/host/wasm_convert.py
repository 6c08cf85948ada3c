"""Component values converted by closures built from each type once (issue 36).

wasmtime-py (50.x) reads a function's type again at every call, and every type again at every value
it converts: the type tree of ``result<string, error>`` was rebuilt through ctypes for every storage
import the engine makes, most of the Python host's 500 us gate. ``lowerer(ty)`` and ``lifter(ty)``
read a type once and answer plain Python closures. What a value becomes on each side is exactly
wasmtime-py's (``Record``, ``Variant``, ``str``, ``int``, ``bool``, ``list``, ``tuple``, ``None``),
so the rest of the package cannot tell the difference; ``tests/test_wasm_calls.py`` checks each
type the component uses against wasmtime-py's own converters, both ways. The calls that use them
are ``wasm_calls``.
"""

from __future__ import annotations

import ctypes
from ctypes import byref
from itertools import repeat
from typing import Any, Callable, Optional

from wasmtime import _ffi as ffi
from wasmtime.component import _types as T
from wasmtime.component import Record, Variant

Lower = Callable[[Any, Any], None]  # (value, the wasmtime_component_val_t to fill)
Lift = Callable[[Any], Any]  # (a wasmtime_component_val_t it takes ownership of) -> value

_val_t = ffi.wasmtime_component_val_t
# wasm_byte_vec_new taking a Python bytes object as it is (wasmtime-py's own binding wants a copy
# into a ctypes array first); a separate function object, so wasmtime-py's binding is untouched.
_byte_vec_new = ffi.dll["wasm_byte_vec_new"]
_byte_vec_new.restype = None
_byte_vec_new.argtypes = [ctypes.POINTER(ffi.wasm_byte_vec_t), ctypes.c_size_t, ctypes.c_char_p]
_string_at = ctypes.string_at


def _set_bytes(vec: Any, b: bytes) -> None:
    """Fills the byte vector ``vec`` (a field inside a C value) with a copy of ``b``."""
    _byte_vec_new(byref(vec), len(b), b)


def _str_to_capi(s: str) -> Any:
    vec = ffi.wasm_byte_vec_t()
    _set_bytes(vec, s.encode("utf-8"))
    return vec


def _to_str(vec: Any) -> str:
    return _string_at(vec.data, vec.size).decode("utf-8")

_byte_vec_delete = ffi.wasm_byte_vec_delete
_val_new = ffi.wasmtime_component_val_new
_BOOL = ffi.WASMTIME_COMPONENT_BOOL

# kind constant and union field of each integer type
_INTS = {
    T.S8: (ffi.WASMTIME_COMPONENT_S8, "s8"), T.U8: (ffi.WASMTIME_COMPONENT_U8, "u8"),
    T.S16: (ffi.WASMTIME_COMPONENT_S16, "s16"), T.U16: (ffi.WASMTIME_COMPONENT_U16, "u16"),
    T.S32: (ffi.WASMTIME_COMPONENT_S32, "s32"), T.U32: (ffi.WASMTIME_COMPONENT_U32, "u32"),
    T.S64: (ffi.WASMTIME_COMPONENT_S64, "s64"), T.U64: (ffi.WASMTIME_COMPONENT_U64, "u64"),
}


def _forget(c: Any) -> None:
    """Marks a lifted value as moved out, so freeing its container frees nothing twice."""
    c.kind = _BOOL
    c.of.boolean = False


def lowerer(ty: Any) -> Lower:
    """A converter of Python values into ``ty``'s C values, built from the type once."""
    if isinstance(ty, T.Bool):
        def lower_bool(v: Any, c: Any) -> None:
            if not isinstance(v, bool):
                raise TypeError("expected bool")
            c.kind = _BOOL
            c.of.boolean = v
        return lower_bool
    for cls, (kind, field) in _INTS.items():
        if isinstance(ty, cls):
            def lower_int(v: Any, c: Any, kind: Any = kind, field: str = field) -> None:
                if not isinstance(v, int):
                    raise TypeError(f"expected int for {field}")
                c.kind = kind
                setattr(c.of, field, v)
            return lower_int
    if isinstance(ty, T.String):
        return _text_lowerer(ffi.WASMTIME_COMPONENT_STRING, "string")
    if isinstance(ty, T.EnumType):
        return _text_lowerer(ffi.WASMTIME_COMPONENT_ENUM, "enumeration")
    if isinstance(ty, T.ListType):
        return _list_lowerer(ty)
    if isinstance(ty, T.RecordType):
        return _record_lowerer(ty)
    if isinstance(ty, T.TupleType):
        return _tuple_lowerer(ty)
    if isinstance(ty, (T.VariantType, T.OptionType, T.ResultType)):
        return _variant_lowerer(ty)
    return lambda v, c: ty.convert_to_c(None, v, ctypes.pointer(c))  # types the engine does not use


def _text_lowerer(kind: Any, field: str) -> Lower:
    """A string or an enum case: its UTF-8 bytes in the byte vector ``field`` of the C value."""
    def lower_text(v: Any, c: Any) -> None:
        if not isinstance(v, str):
            raise TypeError(f"expected str for {field}")
        _set_bytes(getattr(c.of, field), v.encode("utf-8"))
        c.kind = kind
    return lower_text


def _sequence(kind: Any, field: str, alloc: Any, new_uninit: Any, delete: Any) -> Callable[[Any, int, Any], None]:
    """``fill(pairs, n, c)``: the ``n`` values of ``pairs`` ((lowerer, value), ...) lowered into a new
    C list or tuple in ``c``; if one fails, what was made is freed."""
    def fill(pairs: Any, n: int, c: Any) -> None:
        raw = alloc()
        new_uninit(raw, n)
        data, i = raw.data, 0
        try:
            for low, e in pairs:
                low(e, data[i])
                i += 1
        except BaseException:
            for j in range(i, n):
                _forget(data[j])
            delete(byref(raw))
            raise
        c.kind = kind
        setattr(c.of, field, raw)
    return fill


def _list_lowerer(ty: Any) -> Lower:
    element = lowerer(ty.element)
    fill = _sequence(ffi.WASMTIME_COMPONENT_LIST, "list", ffi.wasmtime_component_vallist_t,
                     ffi.wasmtime_component_vallist_new_uninit, ffi.wasmtime_component_vallist_delete)

    def lower_list(v: Any, c: Any) -> None:
        if not isinstance(v, list):
            raise TypeError("expected list value")
        fill(zip(repeat(element), v), len(v), c)
    return lower_list


def _record_lowerer(ty: Any) -> Lower:
    fields = [(name, name.encode("utf-8"), lowerer(t)) for name, t in ty.fields]
    kind = ffi.WASMTIME_COMPONENT_RECORD

    def lower_record(v: Any, c: Any) -> None:
        raw = ffi.wasmtime_component_valrecord_t()
        ffi.wasmtime_component_valrecord_new_uninit(raw, len(fields))
        data, i = raw.data, 0
        try:
            for name, encoded, low in fields:
                entry = data[i]
                low(getattr(v, name), entry.val)
                _set_bytes(entry.name, encoded)
                i += 1
        except BaseException:
            for j in range(i, len(fields)):
                _forget(data[j].val)
            ffi.wasmtime_component_valrecord_delete(byref(raw))
            raise
        c.kind = kind
        c.of.record = raw
    return lower_record


def _tuple_lowerer(ty: Any) -> Lower:
    elements = [lowerer(t) for t in ty.elements]
    fill = _sequence(ffi.WASMTIME_COMPONENT_TUPLE, "tuple", ffi.wasmtime_component_valtuple_t,
                     ffi.wasmtime_component_valtuple_new_uninit, ffi.wasmtime_component_valtuple_delete)

    def lower_tuple(v: Any, c: Any) -> None:
        if not isinstance(v, tuple) or len(v) != len(elements):
            raise TypeError(f"expected a tuple of {len(elements)}")
        fill(zip(elements, v), len(elements), c)
    return lower_tuple


def _classes(ty: Optional[Any]) -> tuple:
    s: set = set()
    if ty is None:
        s.add(object)
    else:
        ty.add_classes(s)
    return tuple(s)


def _variant_lowerer(ty: Any) -> Lower:
    """A variant, an option or a result: which case a value is, as wasmtime-py decides it (by its
    ``Variant`` tag when cases share a Python class, else by the value's class), decided with the
    cases read once."""
    tagged = ty._tagged()
    cases = [(name, None if t is None else lowerer(t), _classes(t), t is None) for name, t in ty._cases()]

    def case(v: Any) -> tuple[str, Any]:
        if tagged and not isinstance(v, Variant):
            raise TypeError("expected Variant type")
        for name, low, classes, empty in cases:
            if tagged:
                if name != v.tag:
                    continue
            elif empty:
                if v is not None:
                    continue
            elif not isinstance(v, classes):
                continue
            if low is None:
                return name, None
            raw = _val_t()
            low(v.payload if tagged else v, raw)
            return name, _val_new(byref(raw))
        raise ValueError("value not valid for this variant")

    if isinstance(ty, T.ResultType):
        kind_r = ffi.WASMTIME_COMPONENT_RESULT

        def lower_result(v: Any, c: Any) -> None:
            name, raw = case(v)
            c.kind = kind_r
            c.of.result.is_ok = name == "ok"
            c.of.result.val = raw
        return lower_result
    if isinstance(ty, T.OptionType):
        kind_o = ffi.WASMTIME_COMPONENT_OPTION

        def lower_option(v: Any, c: Any) -> None:
            _, raw = case(v)
            c.kind = kind_o
            c.of.option = raw
        return lower_option
    kind_v = ffi.WASMTIME_COMPONENT_VARIANT

    def lower_variant(v: Any, c: Any) -> None:
        name, raw = case(v)
        c.kind = kind_v
        c.of.variant.discriminant = _str_to_capi(name)
        c.of.variant.val = raw
    return lower_variant


def lifter(ty: Any) -> Lift:
    """A converter of ``ty``'s C values into Python values, built from the type once."""
    if isinstance(ty, T.Bool):
        return lambda c: bool(c.of.boolean)
    for cls, (_kind, field) in _INTS.items():
        if isinstance(ty, cls):
            return lambda c, field=field: int(getattr(c.of, field))
    if isinstance(ty, T.String):
        return _text_lifter("string")
    if isinstance(ty, T.EnumType):
        return _text_lifter("enumeration")
    if isinstance(ty, T.ListType):
        element = lifter(ty.element)

        def lift_list(c: Any) -> list:
            return _items(c.of.list, repeat(element), ffi.wasmtime_component_vallist_delete)
        return lift_list
    if isinstance(ty, T.RecordType):
        return _record_lifter([(name, lifter(t)) for name, t in ty.fields])
    if isinstance(ty, T.TupleType):
        elements = [lifter(t) for t in ty.elements]

        def lift_tuple(c: Any) -> tuple:
            return tuple(_items(c.of.tuple, elements, ffi.wasmtime_component_valtuple_delete))
        return lift_tuple
    if isinstance(ty, (T.VariantType, T.OptionType, T.ResultType)):
        return _variant_lifter(ty)
    return ty.convert_from_c  # types the engine does not use


def lifter_unobserved(ty: Any) -> Optional[Lift]:
    """For an export that returns what it observed beside its answer (a ``tuple<T,
    list<observation>>``, or a record with an ``observations`` field, also inside a result or
    variant case): a converter that leaves the observations unread (``[]``; freed with the value),
    for an engine nobody observes. Lifting them into Python objects was about 7 us of the Python
    host's 96 us gate (``python/bench/bench_gate.py``). ``None`` for other types."""
    if isinstance(ty, T.RecordType) and any(name == "observations" for name, _t in ty.fields):
        return _record_lifter([(name, None if name == "observations" else lifter(t)) for name, t in ty.fields])
    if isinstance(ty, T.TupleType) and len(ty.elements) == 2 and isinstance(ty.elements[1], T.ListType):
        answer = lifter(ty.elements[0])

        def lift_tuple(c: Any) -> tuple:
            raw = c.of.tuple
            try:
                first = raw.data[0]
                out = answer(first)
                _forget(first)
                return (out, [])  # the observations: left in the C tuple, freed with it below
            finally:
                ffi.wasmtime_component_valtuple_delete(byref(raw))
        return lift_tuple
    if isinstance(ty, (T.VariantType, T.OptionType, T.ResultType)):
        # `result<http-response, string>`, `result<request-step, string>`: through the cases.
        if any(t is not None and lifter_unobserved(t) is not None for _name, t in ty._cases()):
            return _variant_lifter(ty, lambda t: lifter_unobserved(t) or lifter(t))
    return None


def _record_lifter(fields: list[tuple[str, Optional[Lift]]]) -> Lift:
    """A record's converter from its fields' (name, converter); a field without one is left unread
    (``[]``: a list of observations nobody wants), freed with the C record."""
    def lift_record(c: Any) -> Record:
        raw = c.of.record
        try:
            out = Record()
            data = raw.data
            for i, (name, lift) in zip(range(raw.size), fields):
                if lift is None:
                    setattr(out, name, [])
                    continue
                v = data[i].val
                setattr(out, name, lift(v))
                _forget(v)
            return out
        finally:
            ffi.wasmtime_component_valrecord_delete(byref(raw))
    return lift_record


def _items(raw: Any, lifts: Any, delete: Any) -> list:
    """The values of a C list or tuple ``raw``, each lifted by the next of ``lifts``; ``raw`` freed."""
    try:
        out = []
        data = raw.data
        for i, lift in zip(range(raw.size), lifts):
            e = data[i]
            out.append(lift(e))
            _forget(e)
        return out
    finally:
        delete(byref(raw))


def _text_lifter(field: str) -> Lift:
    def lift_text(c: Any) -> str:
        vec = getattr(c.of, field)
        try:
            return _to_str(vec)
        finally:
            _byte_vec_delete(byref(vec))
    return lift_text


def _variant_lifter(ty: Any, lift_of: Callable[[Any], Lift] = lifter) -> Lift:
    tagged = ty._tagged()
    cases = {name: (None if t is None else lift_of(t)) for name, t in ty._cases()}

    def lift_case(tag: str, ptr: Any) -> Any:
        lift = cases[tag]
        if lift is None:
            return Variant(tag) if tagged else None
        payload = lift(ptr.contents)
        _forget(ptr.contents)
        ffi.wasmtime_component_val_delete(ptr)
        return Variant(tag, payload) if tagged else payload

    if isinstance(ty, T.ResultType):
        return lambda c: lift_case("ok" if c.of.result.is_ok else "err", c.of.result.val)
    if isinstance(ty, T.OptionType):
        return lambda c: lift_case("some" if c.of.option else "none", c.of.option)

    def lift_variant(c: Any) -> Any:
        d = c.of.variant.discriminant
        tag = _to_str(d)
        _byte_vec_delete(byref(d))
        return lift_case(tag, c.of.variant.val)
    return lift_variant
