"""Values files (the Helm chart's format, the keys quota-hub reads: ``custom.quota``,
``custom.accelerators``, ``custom.authMode``) and where the database lives."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Optional, Union

import yaml


class ValuesError(ValueError):
    pass


def load(path: Union[str, Path]) -> dict:
    """Reads a YAML (or JSON) values file into the document the engine takes."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ValuesError(f"values file {p}: {e}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValuesError(f"values file {p}: {e}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ValuesError(f"values file {p}: the top level must be a mapping, got {type(doc).__name__}")
    return doc


def document(values: Any) -> dict:
    """`configure(values=...)`: the whole values document (with a top-level `custom`), or the
    `custom` block alone, as z2jh's `get_config("custom")` hands it over."""
    if not isinstance(values, dict):
        raise ValuesError(f"values: must be a mapping (the values document or its `custom` block), got {type(values).__name__}")
    return values if "custom" in values else {"custom": values}


#: Authenticators whose hubs identify users for real (quota on when `enabled` is null), and the ones
#: for demos (quota off), by class name.
_GITHUB = ("GitHubOAuthenticator", "github")
_DUMMY = ("DummyAuthenticator", "SharedPasswordAuthenticator", "dummy", "shared-password")


def auth_mode_from_authenticator(authenticator_class: Any) -> Optional[str]:
    """The values file's `authMode` for a hub's `authenticator_class` (a class, an entry-point
    name or a dotted path): ``github``, ``dummy``, or None when it cannot be told."""
    if authenticator_class is None:
        return None
    name = authenticator_class if isinstance(authenticator_class, str) else getattr(authenticator_class, "__name__", "")
    last = name.rsplit(".", 1)[-1]
    if last in _GITHUB or name in _GITHUB:
        return "github"
    if last in _DUMMY or name in _DUMMY:
        return "dummy"
    return None


def with_auth_mode(values: dict, authenticator_class: Any) -> dict:
    """The values with `custom.authMode` filled from the hub's authenticator when the file gives
    neither `authMode` nor `custom.quota.enabled`; an authenticator that cannot be mapped is an error
    that names both keys."""
    custom = values.get("custom") if isinstance(values.get("custom"), dict) else None
    quota = (custom or {}).get("quota") if isinstance((custom or {}).get("quota"), dict) else {}
    if custom is not None and custom.get("authMode") is not None:
        return values
    if quota.get("enabled") is not None:
        return values
    mode = auth_mode_from_authenticator(authenticator_class)
    if mode is None:
        raise ValuesError(
            "custom.authMode: is not set and custom.quota.enabled is null, and the hub's authenticator "
            f"({authenticator_class!r}) does not say whether quota applies: set custom.quota.enabled "
            "(true or false) or custom.authMode (github, multi, auto-login, dummy) in the values file"
        )
    out = copy.deepcopy(values)
    out.setdefault("custom", {})["authMode"] = mode
    return out


def sqlite_path(db_url: str) -> str:
    """The file of a SQLite URL, read as quota-hub reads `--db` (so one URL names one file for both):
    ``sqlite://quota.db`` is relative to the hub's working directory, ``sqlite:///var/lib/q.db`` is
    absolute, ``sqlite://:memory:`` is a private in-memory database. A plain path is taken as it is."""
    if "://" not in db_url:
        return db_url
    scheme, _, rest = db_url.partition("://")
    if scheme in ("postgres", "postgresql"):
        return db_url  # the engine connects to it (psycopg)
    if scheme != "sqlite":
        raise ValuesError(f"db_url: `{scheme}://` is not supported (sqlite://<file> or postgresql://user@host/db)")
    if not rest:
        raise ValuesError(f"db_url: `{db_url}` names no file (e.g. sqlite://quota.db or sqlite:///var/lib/quota/quota.db)")
    return rest
