"""Who calls the engine from the hub: a hub user's or service's scopes as the engine's caller, and
the custom scopes an admin grants through `c.JupyterHub.load_roles`."""

from __future__ import annotations

from typing import Any

from .engine import Caller

#: The scopes an admin grants through `c.JupyterHub.load_roles` (same meaning as quota-hub's).
CUSTOM_SCOPES = {
    "custom:quota:admin": {"description": "Every quota admin operation (set, add, deduct, batch, refresh, sessions)."},
    "custom:quota:refresh": {"description": "Run quota refresh rules (POST /hub/admin/api/quota/refresh)."},
    "custom:quota:sessions": {"description": "Record and end quota usage sessions (what the hub itself does)."},
}


#: Hub scope -> the engine's scope of the same meaning.
SCOPES = {
    "custom:quota:admin": "quota:admin",
    "custom:quota:refresh": "quota:refresh",
    "custom:quota:sessions": "quota:sessions",
}


def caller_for(user: Any, expanded_scopes: set) -> Caller:
    """The engine's caller for a hub user or service: a quota admin if the user is a hub admin,
    holds `admin:users` (the built-in admin role) or `custom:quota:admin`."""
    scopes = tuple(v for k, v in SCOPES.items() if k in expanded_scopes)
    admin = bool(getattr(user, "admin", False)) or "admin:users" in expanded_scopes or "custom:quota:admin" in expanded_scopes
    return Caller(user.name, admin=admin, scopes=scopes)
