"""Who calls the engine from the hub: the request's expanded scopes (the token's intersected with
its owner's, as JupyterHub computes them) as the engine's caller, never the account's `admin` flag;
the custom scopes an operator grants through `c.JupyterHub.load_roles`, and `custom:quota:admin`
granted to the built-in `admin` role."""

from __future__ import annotations

from typing import Any

from ..host.engine import Caller

#: The scopes an admin grants through `c.JupyterHub.load_roles` (same meaning as quota-hub's).
CUSTOM_SCOPES = {
    "custom:quota:admin": {"description": "Every quota admin operation (set, add, deduct, batch, refresh, sessions)."},
    "custom:quota:manage": {
        "description": "Course staff: the credit of a group's members and the budgets the group shares, and their "
                       "credit requests. Give it with a group filter: custom:quota:manage!group=<group>.",
    },
    "custom:quota:refresh": {"description": "Run quota refresh rules (POST /hub/admin/api/quota/refresh)."},
    "custom:quota:sessions": {"description": "Record and end quota usage sessions (what the hub itself does)."},
    "custom:quota:self": {
        "description": "Read your own quota (balance, sessions, usage, events), extend your own running servers and "
                       "ask for credit.",
    },
}

#: What `configure()` grants the hub's `user` role (a user's own pages and tokens) and `server`
#: role (a single-user server's own token, which JupyterLab's quota status bar calls the hub with):
#: the owner's own quota, nothing of anyone else's.
SELF_SCOPE = "custom:quota:self!user"


#: Hub scope -> the engine's scope of the same meaning.
SCOPES = {
    "custom:quota:admin": "quota:admin",
    "custom:quota:refresh": "quota:refresh",
    "custom:quota:sessions": "quota:sessions",
}

#: The quota admin's scope: `configure()` grants it to the built-in `admin` role.
ADMIN_SCOPE = "custom:quota:admin"
#: Course staff of group `<g>`: `custom:quota:manage!group=<g>` (the engine's `quota:manage!group=<g>`).
MANAGE_PREFIX = "custom:quota:manage!group="


def managed_groups(expanded_scopes: set) -> list:
    """The groups the request manages (`custom:quota:manage!group=<g>`), sorted. An unfiltered
    `custom:quota:manage` manages nothing: course staff are given their groups."""
    return sorted(s[len(MANAGE_PREFIX):] for s in expanded_scopes if s.startswith(MANAGE_PREFIX) and len(s) > len(MANAGE_PREFIX))


#: Course staff's scope without its filter.
MANAGE_SCOPE = "custom:quota:manage"


def _hands_out_unfiltered_manage(scopes: Any) -> bool:
    """Whether a role's scopes hold `custom:quota:manage` other than with a `!group=<g>` filter."""
    for s in scopes or ():
        base, _, filter_ = str(s).partition("!")
        if base == MANAGE_SCOPE and not (filter_.startswith("group=") and len(filter_) > len("group=")):
            return True
    return False


def unfiltered_manage_roles(roles: Any, extra_user_scopes: Any = ()) -> list:
    """The roles (`load_roles` entries, or the hub's stored roles) that hand out
    `custom:quota:manage` without a `!group=` filter: its holder could make a token for any group's
    filter of it (JupyterHub intersects a token's scopes with its owner's), so a hub whose roles do
    refuses to start. JupyterHub 6's `extra_user_scopes` count as the `user` role's."""
    out = [str(_role_name(r)) for r in roles or () if _hands_out_unfiltered_manage(_role_scopes(r))]
    if _hands_out_unfiltered_manage(extra_user_scopes) and "user" not in out:
        out.append("user")
    return out


def _role_name(r: Any) -> Any:
    return r.get("name") if isinstance(r, dict) else getattr(r, "name", "?")


def _role_scopes(r: Any) -> Any:
    return r.get("scopes") if isinstance(r, dict) else getattr(r, "scopes", ())


def unfiltered_refusal(roles: list) -> str:
    """The CRITICAL line of a hub that hands out an unfiltered manage scope: the roles and the fix."""
    return (
        f"quota: the hub's role{'s' if len(roles) > 1 else ''} {', '.join(repr(r) for r in roles)} hand"
        f"{'' if len(roles) > 1 else 's'} out custom:quota:manage without a group filter: its holders could make "
        "a token that manages any group. Give each course's staff custom:quota:manage!group=<group> instead "
        "(docs/jupyterhub.md, Course staff); the hub does not start until then"
    )


def may_self_serve(user: Any, expanded_scopes: set) -> bool:
    """Whether a request may use the quota routes as its owner (their own quota, their own servers):
    it holds `custom:quota:self` for its owner, or any quota scope."""
    name = getattr(user, "name", "")
    if "custom:quota:self" in expanded_scopes or f"custom:quota:self!user={name}" in expanded_scopes:
        return True
    return any(k in expanded_scopes for k in SCOPES) or bool(managed_groups(expanded_scopes))


def caller_for(user: Any, expanded_scopes: set) -> Caller:
    """The engine's caller for a hub user or service, from the request's expanded scopes only: a
    quota admin with `custom:quota:admin` (the built-in admin role's, through a full token or the
    hub's login), course staff with `custom:quota:manage!group=<g>`. An admin's token narrowed to
    `custom:quota:self!user` is a plain user; `admin:users` alone grants nothing here."""
    scopes = [v for k, v in SCOPES.items() if k in expanded_scopes]
    scopes += [f"quota:manage!group={g}" for g in managed_groups(expanded_scopes)]
    return Caller(user.name, admin=ADMIN_SCOPE in expanded_scopes, scopes=tuple(scopes))


def is_quota_staff(expanded_scopes: set) -> bool:
    """Whether the request may open the admin page: a quota admin or course staff."""
    return ADMIN_SCOPE in expanded_scopes or bool(managed_groups(expanded_scopes))


def grant_admin_scope() -> None:
    """Adds `custom:quota:admin` to JupyterHub's built-in `admin` role, which `load_roles` may not
    change: the default roles are read through `jupyterhub.roles.get_default_roles` (at start, and
    when a role named `admin` is checked), so the hub's admins hold it through their login and full
    tokens, and a token narrowed below it does not."""
    from jupyterhub import roles

    if getattr(roles.get_default_roles, "quota_admin_scope", False):
        return
    original = roles.get_default_roles

    def get_default_roles() -> list:
        out = original()
        for role in out:
            if role["name"] == "admin" and ADMIN_SCOPE not in role["scopes"]:
                role["scopes"] = [*role["scopes"], ADMIN_SCOPE]
        return out

    get_default_roles.quota_admin_scope = True  # type: ignore[attr-defined]
    get_default_roles.__doc__ = original.__doc__
    roles.get_default_roles = get_default_roles


def _with_self(scopes: list) -> list:
    return scopes if SELF_SCOPE in scopes else [*scopes, SELF_SCOPE]


def grant_self_scope(c: Any) -> None:
    """Adds `custom:quota:self!user` to the hub's `user` and `server` roles (keeping every scope
    they have, an operator's `load_roles` entries for them included) and to
    `c.Spawner.server_token_scopes` when an operator set it as a list. Servers started before this
    get it at their next start (a server's token keeps the scopes it was made with)."""
    from jupyterhub.app import JupyterHub
    from jupyterhub.roles import get_default_roles

    defaults = {r["name"]: list(r["scopes"]) for r in get_default_roles()}
    roles = [dict(r) for r in c.JupyterHub.load_roles] if "load_roles" in c.JupyterHub else []
    names = {r.get("name"): r for r in roles}
    for role in ("user", "server"):
        if role in names:
            names[role]["scopes"] = _with_self(list(names[role].get("scopes", defaults[role])))
        elif role == "user" and "extra_user_scopes" in JupyterHub.class_trait_names():
            # JupyterHub 6: the user role stays the default one, which keeps extra_user_scopes.
            have = list(c.JupyterHub.extra_user_scopes) if "extra_user_scopes" in c.JupyterHub else []
            c.JupyterHub.extra_user_scopes = set(_with_self(have))
        else:
            roles.append({"name": role, "scopes": _with_self(defaults[role])})
    c.JupyterHub.load_roles = roles
    if "server_token_scopes" in c.Spawner and isinstance(c.Spawner.server_token_scopes, (list, tuple, set)):
        c.Spawner.server_token_scopes = _with_self(list(c.Spawner.server_token_scopes))


def self_scope_missing(app: Any) -> list:
    """The hub roles that lack `custom:quota:self` in the running hub (the configuration was changed
    after `configure()`, e.g. `c.JupyterHub.load_roles` set again): said at start."""
    roles = {r.get("name"): r for r in (getattr(app, "load_roles", None) or [])}
    missing = []
    user = roles.get("user")
    if user is not None and "scopes" in user:
        if SELF_SCOPE not in user["scopes"]:
            missing.append("user")
    elif SELF_SCOPE not in set(getattr(app, "extra_user_scopes", None) or ()):
        missing.append("user")
    server = roles.get("server")
    if server is None or SELF_SCOPE not in server.get("scopes", []):
        missing.append("server")
    return missing
