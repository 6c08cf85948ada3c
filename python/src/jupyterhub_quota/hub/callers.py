"""Who calls the engine from the hub: a hub user's or service's scopes as the engine's caller, and
the custom scopes an admin grants through `c.JupyterHub.load_roles`."""

from __future__ import annotations

from typing import Any

from ..host.engine import Caller

#: The scopes an admin grants through `c.JupyterHub.load_roles` (same meaning as quota-hub's).
CUSTOM_SCOPES = {
    "custom:quota:admin": {"description": "Every quota admin operation (set, add, deduct, batch, refresh, sessions)."},
    "custom:quota:refresh": {"description": "Run quota refresh rules (POST /hub/admin/api/quota/refresh)."},
    "custom:quota:sessions": {"description": "Record and end quota usage sessions (what the hub itself does)."},
    "custom:quota:self": {
        "description": "Read your own quota (balance, sessions, usage, events) and extend your own running servers.",
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


def may_self_serve(user: Any, expanded_scopes: set) -> bool:
    """Whether a token may use the quota routes as its owner (their own quota, their own servers):
    it holds `custom:quota:self` for its owner, or any quota scope, or is an admin's."""
    name = getattr(user, "name", "")
    if "custom:quota:self" in expanded_scopes or f"custom:quota:self!user={name}" in expanded_scopes:
        return True
    return caller_for(user, expanded_scopes).admin or any(k in expanded_scopes for k in SCOPES)


def caller_for(user: Any, expanded_scopes: set) -> Caller:
    """The engine's caller for a hub user or service: a quota admin if the user is a hub admin,
    holds `admin:users` (the built-in admin role) or `custom:quota:admin`."""
    scopes = tuple(v for k, v in SCOPES.items() if k in expanded_scopes)
    admin = bool(getattr(user, "admin", False)) or "admin:users" in expanded_scopes or "custom:quota:admin" in expanded_scopes
    return Caller(user.name, admin=admin, scopes=scopes)


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
