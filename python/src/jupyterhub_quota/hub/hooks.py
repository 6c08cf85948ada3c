"""Where the spawn hooks go in a hub's configuration.

traitlets applies a class's own config section over its parents' (`c.KubeSpawner.pre_spawn_hook`
wins over `c.Spawner.pre_spawn_hook` for a KubeSpawner), and z2jh sets most things on
`c.KubeSpawner`. So a hook set only on `c.Spawner` can be hidden; `configure()` sets each of its
hooks on every spawner section of the configured class's ancestry, and chains what the most
specific of them held before. At hub start, `check()` says loudly if a later line of the config
replaced one of them."""

from __future__ import annotations

from typing import Any, Optional

from ..host.service import log


def spawner_class(c: Any) -> Optional[type]:
    """The class `c.JupyterHub.spawner_class` names (a class, an entry point name such as
    `kubespawner` or `simple`, or a dotted path), resolved as JupyterHub resolves it."""
    try:
        from jupyterhub.app import JupyterHub
    except ImportError:
        return None
    trait = JupyterHub.class_traits()["spawner_class"]
    value = c.JupyterHub.spawner_class if "spawner_class" in c.JupyterHub else trait.default_value
    try:
        return trait.validate(None, value)
    except Exception as e:  # noqa: BLE001 - the hub reports it too; the hooks still go on c.Spawner
        log.warning("quota: cannot resolve c.JupyterHub.spawner_class=%r (%s); hooks are set on c.Spawner only", value, e)
        return None


def sections(cls: Optional[type]) -> list[str]:
    """Config section names that apply to `cls`, most specific first; `Spawner` always."""
    names: list[str] = []
    if cls is not None:
        from jupyterhub.spawner import Spawner

        names = [k.__name__ for k in cls.__mro__ if isinstance(k, type) and issubclass(k, Spawner)]
    if "Spawner" not in names:
        names.append("Spawner")
    return names


def has_trait(cls: Optional[type], name: str) -> list[str]:
    """The sections (most specific first) of `cls`'s ancestry that define trait `name`."""
    if cls is None:
        return []
    return [k.__name__ for k in cls.__mro__ if isinstance(k, type) and name in getattr(k, "class_trait_names", lambda: [])()]


def previous(c: Any, names: list[str], trait: str) -> Any:
    """What `trait` was set to for the spawner class, or None: the most specific section wins."""
    for name in names:
        if name in c and trait in c[name]:
            return c[name][trait]
    return None


def install(c: Any, names: list[str], trait: str, value: Any) -> None:
    for name in names:
        c[name][trait] = value


def check(config: Any, cls: type, installed: dict[str, Any]) -> list[str]:
    """The hooks `configure()` installed that the final configuration no longer uses for `cls`
    (a line after `configure()` replaced them), as messages."""
    names = sections(cls)
    out = []
    for trait, ours in installed.items():
        current = previous(config, names, trait)
        if current is not ours:
            where = next((n for n in names if n in config and trait in config[n]), "Spawner")
            out.append(
                f"c.{where}.{trait} was set after jupyterhub_quota.configure() and replaced the quota hook: "
                "set it before configure() (configure keeps it and runs it first)"
            )
    return out
