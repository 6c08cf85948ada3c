"""The component's answers read into the package's types: a call's observations, its quota errors,
the records a call takes and gives (`-` in the component's names, `_` in Python's), and a call's
`now` checked. Used by :mod:`.engine` for every export."""

from __future__ import annotations

import time
from typing import Any, Optional

from wasmtime.component import Record, Variant

from .bridge import JSON_INT_MAX
from .engine_types import Observation, QuotaError


def _observation(v: Any) -> Optional[Observation]:
    p = v.payload
    if v.tag == "gate":
        return Observation("gate", resource_type=_get(p, "resource_type"), result=str(p.decision))
    if v.tag == "sessions-ended":
        return Observation("sessions-ended", resource_type=_get(p, "resource_type"), status=str(p.status),
                           sessions=p.sessions, credits=p.credits, budget=_get(p, "budget"))
    if v.tag == "refreshed":
        return Observation("refreshed", rule_name=_get(p, "rule_name"), users_updated=_get(p, "users_updated"))
    if v.tag == "holds-repaired":
        return Observation("holds-repaired", budget=_get(p, "budget"), credits=_get(p, "summed") - _get(p, "kept"))
    return None


def _answered(r: Any) -> tuple[Any, list]:
    """An export that observes answers ``(answer, observations)``."""
    return r[0], r[1]


def _responded(r: Any) -> tuple[Any, list]:
    """``handle-request(-step)`` answers a response carrying its observations (none for a chunk
    with more to do, or a storage failure's text)."""
    if r is None or isinstance(r, str):
        return r, []
    return r, _get(r, "observations")


def _record(**fields: Any) -> Record:
    r = Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


def _get(r: Any, name: str) -> Any:
    return getattr(r, name.replace("_", "-"))


def _quota_error(v: Any) -> QuotaError:
    if isinstance(v, Variant):
        payload = v.payload
        if v.tag == "invalid" and payload is not None:
            return QuotaError("invalid", f"{_get(payload, 'field')}: {_get(payload, 'message')}")
        if v.tag == "insufficient-balance":
            return QuotaError(v.tag, "Insufficient balance")
        return QuotaError(v.tag, str(payload))
    return QuotaError("other", str(v))


def _timestamp(now: Optional[int]) -> int:
    t = int(time.time()) if now is None else now
    if type(t) is not int or not -JSON_INT_MAX <= t <= JSON_INT_MAX:
        raise ValueError(f"now: {t!r} is not a timestamp in whole seconds")
    return t
