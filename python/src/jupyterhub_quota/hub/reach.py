"""Course staff's reach at the moment of their request: before the engine answers course staff of
groups M, the memberships of M are made the hub's as it has them now, with no cache window. A
student removed from a course in the hub is out of its staff's reach for their next request, as
JupyterHub's own `!group=` filters are.

One query of the hub's database reads every group of the users who are in M there, or whom the
engine still counts in M; one trip to the engine reads its members of M. Only a user whose groups
within M differ is written (with all of their hub groups), so a request after no change writes
nothing. Names the engine cannot take are skipped with a warning (`names.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable
from urllib.parse import quote

from . import names
from ..host.service import SYSTEM

if TYPE_CHECKING:
    from .integration import Integration


def hub_groups_now(db: Any, managed: Iterable[str], also: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Every group of each user who is in one of `managed` in the hub, or is named in `also`
    (sorted), in one query of the hub's database through its own session."""
    from jupyterhub import orm
    from sqlalchemy import or_, select

    in_managed = (
        select(orm.user_group_map.c.user_id)
        .join(orm.Group, orm.Group.id == orm.user_group_map.c.group_id)
        .where(orm.Group.name.in_(list(managed)))
    )
    rows = (
        db.query(orm.User.name, orm.Group.name)
        .join(orm.Group.users)
        .filter(or_(orm.User.id.in_(in_managed), orm.User.name.in_(list(also))))
    )
    out: dict[str, list[str]] = {}
    for user, group in rows:
        out.setdefault(user, []).append(group)
    return {u: tuple(sorted(g)) for u, g in out.items()}


def _engine_members(e: Any, managed: list[str]) -> dict[str, set[str]]:
    """The engine's members of each of `managed` (user -> those of `managed` they are in); a group
    the engine has no member of is none."""
    out: dict[str, set[str]] = {}
    for g in managed:
        r = e.handle_request("GET", "/admin/api/quota/groups/" + quote(g, safe=""), caller=SYSTEM)
        if r.status == 404:
            continue
        if r.status != 200:
            raise RuntimeError(f"reading the engine's group {g!r}: {r.status} {r.body}")
        for u in r.json()["members"]:
            out.setdefault(u, set()).add(g)
    return out


async def reach_now(quota: "Integration", managed: list[str]) -> int:
    """Makes the engine's memberships of `managed` the hub's of this moment; answers how many
    users' groups changed. Without a hub database it does nothing."""
    db = getattr(quota.app, "db", None)
    if db is None or not managed:
        return 0
    usable = [g for g in managed if g not in await names.problems(quota.service, "group", managed)]
    engine = await quota.service.run(lambda e: _engine_members(e, usable))
    hub = await names.usable(quota.service, hub_groups_now(db, usable, engine))
    wanted = set(usable)
    by_name = {u.lower(): gs for u, gs in hub.items()}
    todo = []
    for user in sorted(set(by_name) | set(engine)):
        groups = by_name.get(user, ())
        if set(groups) & wanted != engine.get(user, set()):
            todo.append((user, list(groups)))
    if todo:
        await quota.service.run(lambda e: e.replace_memberships(todo, complete=False))
    return len(todo)
