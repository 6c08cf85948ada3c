"""What a spawn asks for, read once: the runtime and the accelerator that prices it and places it.

The budget a spawn charges comes from `user_options["budget"]`, or from the chosen profile's
`quotaBudget` (a course's profile charges the course's budget).

The accelerator comes from `user_options["gpu_selection"]` (the original spawn page's key), or,
on a spawner with a KubeSpawner `profile_list`, from the chosen profile when it names one
(`quotaAccelerator` in the profile or in a chosen profile option). A profile whose overrides would
move the server (node selector, affinity, tolerations, extra resources such as GPUs) without naming
an accelerator is refused: never a GPU pod at the CPU rate."""

from __future__ import annotations

import inspect
import json
import math
from dataclasses import dataclass
from typing import Any, Optional

#: Spawn options this integration reads (the original spawn page's keys, and the budget to charge).
OPTION_KEYS = ("runtime_minutes", "gpu_selection", "budget")
#: The key a profile (or one of its option choices) names its accelerator with.
PROFILE_KEY = "quotaAccelerator"
#: The key a profile names the shared budget it charges with (a course's profile charges the course).
BUDGET_KEY = "quotaBudget"
#: `quotaAccelerator: cpu` prices a profile at the CPU rate explicitly.
CPU = "cpu"
#: KubeSpawner settings that change where a server runs or what hardware it gets.
PLACEMENT_TRAITS = (
    "node_selector",
    "node_affinity_required",
    "node_affinity_preferred",
    "tolerations",
    "extra_resource_limits",
    "extra_resource_guarantees",
)
#: The same, inside `extra_pod_config` (the pod spec's own keys).
PLACEMENT_POD_KEYS = ("affinity", "nodeSelector", "nodeName", "tolerations")


class OptionError(ValueError):
    """A spawn option is not usable: the message names it."""


def runtime_option(value: Any, default: int) -> int:
    """`user_options["runtime_minutes"]`: an integer (the engine checks it against its runtime bounds). Strings of digits
    are accepted (the spawn form posts strings); floats, NaN, booleans and the rest are refused."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise OptionError(f"runtime_minutes: must be a whole number of minutes, got {json.dumps(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        shown = "NaN" if math.isnan(value) else repr(value)
        raise OptionError(f"runtime_minutes: must be a whole number of minutes, got {shown}")
    if isinstance(value, str):
        s = value.strip()
        if s.lstrip("-").isdigit() and s.isascii():
            return int(s)
        raise OptionError(f"runtime_minutes: must be a whole number of minutes, got {json.dumps(value)}")
    raise OptionError(f"runtime_minutes: must be a whole number of minutes, got {type(value).__name__}")


def accelerator_option(value: Any) -> Optional[str]:
    """`user_options["gpu_selection"]`: an accelerator key; absent, null or "" means CPU."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise OptionError(f"gpu_selection: must be an accelerator name, got {json.dumps(value, default=str)}")
    return value


def budget_option(value: Any) -> Optional[str]:
    """`user_options["budget"]`: the shared budget to charge; absent, null or "" means the user's
    own credit."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise OptionError(f"budget: must be a budget name, got {json.dumps(value, default=str)}")
    return value


@dataclass(frozen=True)
class Choice:
    """One spawn's decision: the runtime, the accelerator key (None: CPU), the profile it came
    from (None: no profile list, or the accelerator came from `gpu_selection`) and the budget it
    charges (None: the user's own credit)."""

    runtime: int
    accelerator: Optional[str]
    profile: Optional[str] = None
    budget: Optional[str] = None


@dataclass(frozen=True)
class ProfilePrice:
    """What a profile (with the choices made in it) says about its price: the accelerators it names
    (a set: more than one is a configuration error) and the settings that move the server."""

    named: frozenset
    moves: tuple  # the settings that change placement, for the message

    def merge(self, other: "ProfilePrice") -> "ProfilePrice":
        return ProfilePrice(self.named | other.named, self.moves + other.moves)

    def under(self, choices: "ProfilePrice") -> "ProfilePrice":
        """The profile's price with its chosen options': a choice that names an accelerator wins
        over the profile's own (a "GPU type" option under a GPU profile)."""
        return ProfilePrice(choices.named or self.named, self.moves + choices.moves)


def _overrides_price(holder: Any) -> ProfilePrice:
    """A profile, a choice or an unlisted choice: its `quotaAccelerator` and the placement settings
    of its `kubespawner_override`."""
    if not isinstance(holder, dict):
        return ProfilePrice(frozenset(), ())
    named = holder.get(PROFILE_KEY)
    override = holder.get("kubespawner_override") or {}
    moves = [k for k in PLACEMENT_TRAITS if isinstance(override, dict) and override.get(k)]
    pod = override.get("extra_pod_config") if isinstance(override, dict) else None
    if isinstance(pod, dict):
        moves += [f"extra_pod_config.{k}" for k in PLACEMENT_POD_KEYS if pod.get(k)]
    return ProfilePrice(frozenset() if named in (None, "") else frozenset([named]), tuple(moves))


def slug_of(profile: dict) -> str:
    """A profile's slug, as KubeSpawner makes it (python-slugify of the display name when unset)."""
    if profile.get("slug"):
        return str(profile["slug"])
    from slugify import slugify  # a KubeSpawner dependency: only profile lists need it

    return slugify(str(profile.get("display_name", "")))


async def profile_list(spawner: Any) -> list:
    """The spawner's `profile_list` as KubeSpawner reads it (a list, a dict by key, or a callable
    of the spawner), or [] for spawners without one."""
    profiles = getattr(spawner, "profile_list", None)
    if callable(profiles):
        profiles = profiles(spawner)
        if inspect.isawaitable(profiles):
            profiles = await profiles
    if isinstance(profiles, dict):
        profiles = [profiles[k] for k in sorted(profiles)]
    return [p for p in (profiles or []) if isinstance(p, dict)]


def _default_choice(option: dict) -> Optional[str]:
    choices = option.get("choices") or {}
    for key, c in choices.items():
        if isinstance(c, dict) and c.get("default"):
            return key
    return next(iter(choices), None)


def profile_price(profile: dict, options: dict) -> ProfilePrice:
    """The price-relevant parts of `profile` with the option choices in `options` (the defaults
    where none is given), as KubeSpawner will apply them; a chosen option's `quotaAccelerator`
    wins over the profile's. A choice that does not exist is an `OptionError` naming the option."""
    slug = slug_of(profile)
    chosen = ProfilePrice(frozenset(), ())
    for name, option in (profile.get("profile_options") or {}).items():
        if not isinstance(option, dict):
            continue
        unlisted = options.get(f"{name}--unlisted-choice")
        choice = options.get(name)
        if unlisted:
            chosen = chosen.merge(_overrides_price(option.get("unlisted_choice")))
        elif choice:
            choices = option.get("choices") or {}
            if choice not in choices:
                raise OptionError(
                    f"{name}: no choice {json.dumps(choice)} in profile {json.dumps(slug)} "
                    f"(choices: {', '.join(choices) or 'none'})"
                )
            chosen = chosen.merge(_overrides_price(choices[choice]))
        else:
            default = _default_choice(option)
            if default is not None:
                chosen = chosen.merge(_overrides_price(option["choices"][default]))
    return _overrides_price(profile).under(chosen)


def profile_accelerator(profile: dict, options: dict, accelerators: Any) -> Optional[str]:
    """The accelerator a profile (with its choices) runs on: a key, `cpu`, or None when it names
    none and moves nothing (the user's `gpu_selection` then decides). Refusals name `profile`."""
    slug = slug_of(profile)
    price = profile_price(profile, options)
    if len(price.named) > 1:
        raise OptionError(
            f"profile: {json.dumps(slug)} names more than one {PROFILE_KEY} ({', '.join(sorted(map(str, price.named)))}) "
            "with these choices; ask the hub's operator to name one"
        )
    if price.named:
        (named,) = price.named
        if named != CPU and named not in accelerators:
            raise OptionError(
                f"profile: {json.dumps(slug)} names {PROFILE_KEY} {json.dumps(named)}, which is not an accelerator "
                f"of the quota configuration (known: {', '.join([CPU, *accelerators])})"
            )
        return named
    if price.moves:
        raise OptionError(
            f"profile: {json.dumps(slug)} changes where the server runs ({', '.join(price.moves)}) but names no "
            f"{PROFILE_KEY} to price it; ask the hub's operator to add one"
        )
    return None


def find_profile(profiles: list, slug: Any) -> dict:
    """The profile `slug` names, or the default one (KubeSpawner's rule: the first marked
    `default`, else the first) when the spawn names none."""
    if slug in (None, ""):
        return next((p for p in profiles if p.get("default")), profiles[0])
    if not isinstance(slug, str):
        raise OptionError(f"profile: must be a profile name, got {json.dumps(slug, default=str)}")
    for p in profiles:
        if slug_of(p) == slug:
            return p
    raise OptionError(f"profile: no profile {json.dumps(slug)} (profiles: {', '.join(slug_of(p) for p in profiles)})")


def profile_budget(profile: dict, chosen: Optional[str]) -> Optional[str]:
    """The budget a spawn of `profile` charges: the profile's `quotaBudget` (the user's choice may
    only repeat it), else the user's choice."""
    named = profile.get(BUDGET_KEY)
    if named in (None, ""):
        return chosen
    if not isinstance(named, str):
        raise OptionError(f"profile: {json.dumps(slug_of(profile))} has a {BUDGET_KEY} that is not a budget name")
    if chosen is not None and chosen != named:
        raise OptionError(
            f"budget: the profile {json.dumps(slug_of(profile))} charges budget {json.dumps(named)}; "
            f"leave budget empty or set it to {json.dumps(named)}"
        )
    return named


#: KubeSpawner's traits that set the container's resources: (trait, the accelerator's key in `resources`).
RESOURCE_TRAITS = (("extra_resource_limits", "limits"), ("extra_resource_guarantees", "requests"))


def profile_resources(profile: dict, options: dict) -> dict:
    """The extended resources the profile (and its chosen options, defaults included) gives the
    server through `kubespawner_override`: {"limits": {name: value}, "requests": {...}}, as text."""
    holders = [profile]
    for name, option in (profile.get("profile_options") or {}).items():
        if not isinstance(option, dict):
            continue
        if options.get(f"{name}--unlisted-choice"):
            holders.append(option.get("unlisted_choice"))
        else:
            key = options.get(name) or _default_choice(option)
            holders.append((option.get("choices") or {}).get(key))
    out: dict = {"limits": {}, "requests": {}}
    for h in holders:
        override = h.get("kubespawner_override") if isinstance(h, dict) else None
        for trait, kind in RESOURCE_TRAITS:
            given = override.get(trait) if isinstance(override, dict) else None
            if isinstance(given, dict):
                out[kind].update({str(k): str(v) for k, v in given.items()})
    return out


def check_profile_resources(slug: str, profile: dict, options: dict, accelerator: Any) -> None:
    """A profile's own limits for a resource the accelerator allocates win only if equal (what is
    billed is what runs); otherwise a refusal naming `profile`."""
    given = getattr(accelerator, "resources", None) or {}
    if not given:
        return
    mine = profile_resources(profile, options)
    for kind in ("limits", "requests"):
        for name, value in (given.get(kind) or {}).items():
            other = mine[kind].get(name)
            if other is not None and other != value:
                raise OptionError(
                    f"profile: {json.dumps(slug)} sets {kind} {name}: {other}, but the accelerator "
                    f"{json.dumps(accelerator.key)} it runs on allocates {value}; ask the hub's operator to make them agree"
                )


async def choose(spawner: Any, options: dict, default_runtime: int, accelerators: Any) -> Choice:
    """Reads the spawn's options once into the decision that both prices and places it."""
    runtime = runtime_option(options.get("runtime_minutes"), default_runtime)
    selected = accelerator_option(options.get("gpu_selection"))
    budget = budget_option(options.get("budget"))
    profiles = await profile_list(spawner)
    if not profiles:
        return Choice(runtime, selected, None, budget)
    profile = find_profile(profiles, options.get("profile"))
    slug = slug_of(profile)
    budget = profile_budget(profile, budget)
    named = profile_accelerator(profile, options, accelerators)
    if named is None:
        if isinstance(accelerators, dict) and selected in accelerators:
            check_profile_resources(slug, profile, options, accelerators[selected])
        return Choice(runtime, selected, slug, budget)
    accelerator = None if named == CPU else named
    if selected is not None and selected != accelerator:
        raise OptionError(
            f"gpu_selection: the profile {json.dumps(slug)} runs on {json.dumps(named)}; "
            f"leave gpu_selection empty or set it to {json.dumps(named)}"
        )
    if isinstance(accelerators, dict) and accelerator in accelerators:
        check_profile_resources(slug, profile, options, accelerators[accelerator])
    return Choice(runtime, accelerator, slug, budget)


def page_profiles(profiles: list) -> dict:
    """What the spawn form's script needs to price a profile as the gate will: per profile slug,
    the accelerator it names and whether it moves the server, and the same per option choice."""

    def part(holder: Any) -> dict:
        p = _overrides_price(holder)
        return {"accelerator": next(iter(p.named), None), "moves": bool(p.moves)}

    out: dict = {}
    for profile in profiles:
        options = {}
        for name, option in (profile.get("profile_options") or {}).items():
            if not isinstance(option, dict):
                continue
            options[name] = {
                "choices": {k: part(c) for k, c in (option.get("choices") or {}).items()},
                "default": _default_choice(option),
                "unlisted": part(option.get("unlisted_choice")),
            }
        budget = profile.get(BUDGET_KEY)
        out[slug_of(profile)] = {**part(profile), "options": options, "budget": budget if isinstance(budget, str) and budget else None}
    return out


def check_profiles(profiles: list, accelerators: Any) -> list[str]:
    """Problems of a static profile list, for the hub's log at start: every `quotaAccelerator`
    that names no accelerator, and every profile that cannot be priced with its default choices."""
    problems = []
    for profile in profiles:
        slug = slug_of(profile)
        holders = [(f"profile {slug}", profile)]
        for name, option in (profile.get("profile_options") or {}).items():
            if isinstance(option, dict):
                holders += [(f"profile {slug}, option {name}, choice {k}", c) for k, c in (option.get("choices") or {}).items()]
                holders.append((f"profile {slug}, option {name}, unlisted choice", option.get("unlisted_choice")))
        for where, holder in holders:
            named = holder.get(PROFILE_KEY) if isinstance(holder, dict) else None
            if named not in (None, "", CPU) and named not in accelerators:
                problems.append(f"{where}: {PROFILE_KEY} {json.dumps(named)} is not an accelerator of the quota configuration")
        try:
            profile_accelerator(profile, {}, accelerators)
        except OptionError as e:
            problems.append(str(e))
    return problems
