"""Names that come from the hub (its users and groups) and the engine's verdict on each: a name the
engine cannot take (a user's with a space, a group's over 255 characters or with a control
character) is skipped with a WARNING naming it, once per process, while every other entry and
request goes on. The rule is the engine's (its `name-problems` export); a verdict is kept for the
process's life, so a hub's names are asked about once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

from ..host.service import log

if TYPE_CHECKING:
    from ..host.service import QuotaService

#: (kind, name) -> the engine's problem with it (None: it takes the name).
_verdicts: dict[tuple[str, str], Optional[str]] = {}


def _warn(kind: str, name: str, problem: str) -> None:
    log.warning(
        "quota: the hub's %s %r is skipped: the quota engine cannot take it as a %s name (%s); every other "
        "%s and request goes on", kind, name, kind, problem, kind,
    )


async def problems(service: "QuotaService", kind: str, names: Iterable[str]) -> dict[str, str]:
    """The names among `names` the engine cannot take, with its reason; each warned about once."""
    new = sorted({n for n in names if (kind, n) not in _verdicts})
    if new:
        found = await service.run(lambda e: e.name_problems(kind, new))
        for name, problem in zip(new, found):
            _verdicts[(kind, name)] = problem
            if problem is not None:
                _warn(kind, name, problem)
    return {n: p for n in set(names) if (p := _verdicts.get((kind, n))) is not None}


async def usable(service: "QuotaService", memberships: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """`memberships` (user -> their groups) without the users and groups the engine cannot take."""
    bad_users = await problems(service, "user", memberships)
    bad_groups = await problems(service, "group", {g for gs in memberships.values() for g in gs})
    if not bad_users and not bad_groups:
        return memberships
    return {
        u: tuple(g for g in gs if g not in bad_groups)
        for u, gs in memberships.items() if u not in bad_users
    }


async def usable_groups(service: "QuotaService", groups: list[str]) -> list[str]:
    """A user's groups without those the engine cannot take."""
    bad = await problems(service, "group", groups)
    return [g for g in groups if g not in bad] if bad else groups
