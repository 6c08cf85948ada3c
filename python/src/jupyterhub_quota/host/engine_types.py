"""What the engine answers and raises, as the Python host hands it on: the exceptions, the caller,
a REST response, the configuration summary and the events a committed call reports (an
`Observer` hears them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional, Sequence

class EngineError(RuntimeError):
    """The component could not be loaded, or a call trapped or ran out of time or memory. The call
    changed nothing (it was rolled back) and the instance was replaced."""


class ConfigError(ValueError):
    """The values document was refused: ``problems`` is a list of (key path, message)."""

    def __init__(self, problems: Sequence[tuple[str, str]]):
        self.problems = list(problems)
        super().__init__("; ".join(f"{f}: {m}" for f, m in self.problems))


class QuotaError(Exception):
    """An operation was refused (nothing changed): ``kind`` is the WIT case (``invalid``,
    ``not-found``, ...)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Caller:
    """Who makes a request: a name, whether they are a quota admin, and their quota scopes
    (``quota:sessions``, ``quota:refresh``, ``quota:admin``)."""

    name: str
    admin: bool = False
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Response:
    status: int
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Rule:
    name: str
    enabled: bool
    schedule: str


@dataclass(frozen=True)
class HostSettings:
    """What a host acts on, from the engine (the component's `host-settings`): a host never
    restates one of these numbers."""

    #: A start's runtime bounds, in minutes (the gate refuses outside them).
    runtime_minutes_min: int
    runtime_minutes_max: int
    #: The runtime of a spawn that gives none (`custom.quota.defaultRuntimeMinutes`).
    default_runtime_minutes: int
    #: The extensions a running server's user is offered, in minutes.
    extend_choices: tuple[int, ...]
    #: Minutes before a server's end at which `session.ending` tells its user.
    warn_before_stop_minutes: tuple[int, ...]
    #: Live balance streams one user may hold open (`custom.quota.liveStreamsPerUser`).
    live_streams_per_user: int
    #: What the gate does when its database fails: `refuse`, or `allow` (start unbilled).
    on_storage_error: str
    #: How often a host runs the sweep, in seconds.
    sweep_interval_seconds: int
    #: The largest page a host asks of the users and memberships lists.
    users_page_max: int


@dataclass(frozen=True)
class ConfigSummary:
    enabled: bool
    rules: tuple[Rule, ...]
    settings: HostSettings


@dataclass(frozen=True)
class Observation:
    """Something a committed call did (the component's `observation`, returned with the call's
    answer): ``kind`` is ``gate`` (with ``result`` allowed/refused/invalid), ``sessions-ended``
    (``status``, ``sessions``, ``credits``), ``refreshed`` (``rule_name``, ``users_updated``) or
    ``holds-repaired`` (``budget``; ``credits``: thousandths the total moved by)."""

    kind: str
    resource_type: str = ""
    result: str = ""
    status: str = ""
    sessions: int = 0
    credits: int = 0
    rule_name: str = ""
    users_updated: int = 0
    #: ``sessions-ended``: the budget charged (None: personal accounts).
    budget: Optional[str] = None


class Observer:
    """What a host may watch of an engine (all no-ops here): the observations of committed calls,
    traps, calls failed as busy, and calls run again after a conflict."""

    def committed(self, observations: Sequence[Observation]) -> None:
        pass

    def trapped(self) -> None:
        pass

    def busy(self) -> None:
        pass

    def conflict_retried(self) -> None:
        pass
