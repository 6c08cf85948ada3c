"""The hub's groups as the engine's input: a user's groups at every spawn gate, and a snapshot of
every group before each refresh run (scheduled or through REST), so that a rule targeting a group
changes exactly the hub's members of that moment. Membership is the hub's; the engine only keeps
what it was told last."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Optional
from urllib.parse import quote

from . import names
from ..host.service import SYSTEM, log

if TYPE_CHECKING:
    from .integration import Integration
    from ..host.service import QuotaService


def user_groups(user: Any) -> list[str]:
    """The names of a hub user's groups (a `jupyterhub.user.User` or an ORM user)."""
    return sorted(g.name for g in getattr(user, "groups", None) or ())


#: Users per write of a snapshot (one transaction each): the hub's other quota calls run between
#: the pages. The engine's memberships are read a page at a time too, the hosting contract's
#: largest (`users_page_max`), unless a test sets a smaller one here.
READ_PAGE: Optional[int] = None
WRITE_PAGE = 1_000


#: Hub users per read of the hub's database, each its own short transaction: a SQLite hub database
#: (a rollback journal) makes the hub's own writes wait while a read is open.
HUB_PAGE = 5_000


def hub_memberships(db: Any, ids: Optional[tuple[int, int]] = None) -> dict[str, tuple[str, ...]]:
    """The users in at least one group, with all of their groups (sorted), through `db` (an ORM
    session): every user, or those whose ids are within `ids` (first, last)."""
    from jupyterhub import orm

    rows = db.query(orm.User.name, orm.Group.name).join(orm.Group.users)
    if ids is not None:
        rows = rows.filter(orm.User.id >= ids[0], orm.User.id <= ids[1])
    users: dict[str, list[str]] = {}
    for user, group in rows:
        users.setdefault(user, []).append(group)
    return {u: tuple(sorted(g)) for u, g in users.items()}


async def read_hub(db: Any) -> dict[str, tuple[str, ...]]:
    """`hub_memberships`, read off the hub's event loop through a session of its own, HUB_PAGE users
    per transaction (a hub with 100,000 users in groups takes a second to read, and its own writes
    would wait for all of it). An in-memory hub database has one connection only, shared with the
    hub's session: read there, on the loop, at once."""
    from jupyterhub import orm
    from sqlalchemy.orm import Session
    from sqlalchemy.pool import StaticPool

    bind = db.get_bind()
    if isinstance(bind.pool, StaticPool):
        return hub_memberships(db)

    def read() -> dict[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}
        after = 0
        with Session(bind) as session:
            while True:
                ids = [i for (i,) in session.query(orm.User.id).filter(orm.User.id > after)
                       .order_by(orm.User.id).limit(HUB_PAGE)]
                if not ids:
                    return out
                out.update(hub_memberships(session, (ids[0], ids[-1])))
                session.rollback()  # the read transaction ends: the hub's own writes go on
                after = ids[-1]

    return await asyncio.to_thread(read)


async def engine_memberships(service: "QuotaService") -> dict[str, tuple[str, ...]]:
    """The engine's memberships (users in at least one group), a page per call."""
    out: dict[str, tuple[str, ...]] = {}
    after: Optional[str] = None
    page = READ_PAGE or service.contract.users_page_max
    while True:
        query = f"limit={page}" + ("" if after is None else f"&after={quote(after, safe='')}")
        r = await service.request("GET", "/admin/api/quota/memberships", caller=SYSTEM, query=query)
        if r.status != 200:
            raise RuntimeError(f"reading the engine's memberships: {r.status} {r.body}")
        body = r.json()
        out.update((m["username"], tuple(m["groups"])) for m in body["memberships"] if m["groups"])
        after = body["next_after"]
        if after is None:
            return out


def changes(hub: dict[str, tuple[str, ...]], engine: dict[str, tuple[str, ...]]) -> list[tuple[str, list[str]]]:
    """What makes the engine's memberships the hub's: each user whose groups differ, with the hub's
    groups (none for a user in no hub group any more). The engine keeps usernames in lower case."""
    out = [(u, list(g)) for u, g in hub.items() if engine.get(u.lower()) != g]
    in_hub = {u.lower() for u in hub}
    out.extend((u, []) for u in engine if u not in in_hub)
    return sorted(out)


async def snapshot(quota: "Integration") -> None:
    """Makes the engine's memberships the hub's (a user in no hub group is in none afterwards):
    the hub's read off its event loop, the engine's read a page at a time, and only the users whose
    groups differ written, a page per transaction. Without a hub database it does nothing."""
    db = getattr(quota.app, "db", None)
    if db is None:
        return
    # Both sides at once: the hub's on a thread of its own, the engine's on its worker.
    hub, engine = await asyncio.gather(read_hub(db), engine_memberships(quota.service))
    # A name the engine cannot take is skipped (a warning names it), never the whole snapshot.
    hub = await names.usable(quota.service, hub)
    todo = await asyncio.to_thread(changes, hub, engine)
    changed = 0
    for k in range(0, len(todo), WRITE_PAGE):
        page = todo[k:k + WRITE_PAGE]
        r = await quota.service.run(lambda e, page=page: e.replace_memberships(page, complete=False))
        changed += r["changed"]
    if changed:
        log.info("quota: groups from the hub: %s users in groups, %s changed", len(hub), changed)
