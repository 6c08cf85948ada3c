"""Replays the scenario files of ``tests/scenarios`` through the Python bridge (the format is in
``tests/scenarios/README.md``; the Rust replayer is ``tests/support``)."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any, Callable, Optional

from jupyterhub_quota import Caller, ConfigError, QuotaEngine

from .openapi_check import assert_conforms

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = REPO / "tests" / "scenarios"

FIXTURE = {
    "custom": {
        "authMode": "github",
        "quota": {"cpuRate": 1, "minimumToStart": 10, "defaultQuota": 0},
        "accelerators": {
            "phx": {"displayName": "PHX", "description": "PHX accelerator", "nodeSelector": {"accel": "phx"}, "quotaRate": 2},
            "dgpu": {"displayName": "DGPU", "description": "Discrete GPU", "nodeSelector": {"accel": "dgpu"}, "quotaRate": 4},
        },
    }
}


def parse_time(s: str) -> int:
    return int(dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp())


def caller_for(v: Any) -> Optional[Caller]:
    if v is None:
        return Caller("admin", admin=True)
    if isinstance(v, str):
        return {
            "anonymous": None,
            "admin": Caller("admin", admin=True),
            "hub": Caller("hub", scopes=("quota:sessions",)),
            "scheduler": Caller("scheduler", scopes=("quota:refresh",)),
            "service-admin": Caller("service-admin", scopes=("quota:admin",)),
        }.get(v, Caller(v)) if v != "anonymous" else None
    return Caller(v["name"], admin=bool(v.get("admin", False)), scopes=tuple(v.get("scopes", [])))


def merged_values(scenario: dict) -> dict:
    values = copy.deepcopy(scenario.get("values", FIXTURE))
    q = scenario.get("quota")
    if isinstance(q, dict):
        quota = values.get("custom", {}).get("quota")
        if isinstance(quota, dict):
            quota.update(q)
    return values


def dumps(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def replay(scenario: dict, open_engine: Callable[[dict], QuotaEngine]) -> list[dict]:
    """The transcript: ``{step, request, status, body}`` per request."""
    now = parse_time(scenario.get("start", "2026-11-22T10:00:00Z"))
    engine = open_engine(merged_values(scenario))
    out = []
    try:
        for i, step in enumerate(scenario["steps"]):
            n = i + 1
            if "advance" in step:
                now += step["advance"]
                continue
            if "at" in step:
                now = parse_time(step["at"])
                continue
            if "configure" in step:
                values = step["configure"]
                doc = step if values is None else {"values": values, **({"quota": step["quota"]} if "quota" in step else {})}
                if "refused" not in step:
                    engine.configure(merged_values(doc))
                    continue
                # Refused with (at least) these problems; the previous configuration stays.
                try:
                    engine.configure(merged_values(doc))
                except ConfigError as e:
                    said = [f"{f}: {m}" for f, m in e.problems]
                    missing = [p for p in step["refused"] if p not in said]
                    assert not missing, f"step {n}: the refusal does not say {missing}: {said}"
                    continue
                raise AssertionError(f"step {n}: configure should have been refused")
            target = step["path"]
            path, _, query = target.partition("?")
            if isinstance(step.get("raw_body"), str):
                body = step["raw_body"]
            elif "body" in step:
                body = dumps(step["body"])
            else:
                body = ""
            r = engine.handle_request(step["method"], path, query, body, caller_for(step.get("as")), now)
            out.append({"step": n, "request": f"{step['method']} {target}", "sent": body, "status": r.status, "body": r.body})
    finally:
        engine.close()
    return out


def files() -> list[Path]:
    return sorted(p for p in SCENARIOS.glob("*.json"))


def assert_matches_native(path: Path, native_transcripts: dict, open_engine: Callable[[dict], QuotaEngine]) -> None:
    """Replays the scenario file at `path` with engines from `open_engine` and asserts the transcript
    equals the native core's, every exchange as the OpenAPI document says (the request bodies sent may differ in spelling only: Rust's JSON
    writes 99999999999999999999 as 1e+20)."""
    got = replay(json.loads(path.read_text()), open_engine)
    assert_conforms(got)
    want = native_transcripts[path.name]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        # Copies: the native transcripts are shared by every test of the session.
        g, w = dict(g), dict(w)
        g.pop("sent"), w.pop("sent")
        assert g == w, f"step {w['step']} {w['request']}"
