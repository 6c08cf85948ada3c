"""The hub's groups as the engine's input: a user's groups at every spawn gate, and a snapshot of
every group before each refresh run (scheduled or through REST), so that a rule targeting a group
changes exactly the hub's members of that moment. Membership is the hub's; the engine only keeps
what it was told last."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .service import log

if TYPE_CHECKING:
    from .quota_hub import QuotaHub


def user_groups(user: Any) -> list[str]:
    """The names of a hub user's groups (a `jupyterhub.user.User` or an ORM user)."""
    return sorted(g.name for g in getattr(user, "groups", None) or ())


def hub_memberships(db: Any) -> list[tuple[str, list[str]]]:
    """Every user in at least one group, with all of their groups, in one query of the hub's
    database (its ORM session: call it on the hub's event loop)."""
    from jupyterhub import orm

    users: dict[str, list[str]] = {}
    rows = db.query(orm.User.name, orm.Group.name).join(orm.Group.users)
    for user, group in rows:
        users.setdefault(user, []).append(group)
    return sorted((u, sorted(g)) for u, g in users.items())


async def snapshot(quota: "QuotaHub") -> None:
    """Replaces the engine's memberships with the hub's (complete: a user in no hub group is in
    none afterwards), in one engine transaction. Without a hub database it does nothing."""
    db = getattr(quota.app, "db", None)
    if db is None:
        return
    users = hub_memberships(db)
    r = await quota.service.run(lambda e: e.replace_memberships(users, complete=True))
    if r["changed"]:
        log.info("quota: groups from the hub: %s users in groups, %s changed", r["users"], r["changed"])
