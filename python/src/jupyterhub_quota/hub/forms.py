"""The spawn form (`Spawner.options_form`) and its parser (`Spawner.options_from_form`).

When the spawner has a form of its own (KubeSpawner's, built from `profile_list`, or one the
operator configured), the quota fields are added below it and its own parser still runs; without
one, the quota form is the whole form. The quota fields: the accelerators with their rates (hidden
when the chosen profile names its accelerator), a runtime, the user's balance, and the estimated
cost computed in the page by the engine component, as the gate will compute it."""

from __future__ import annotations

import html
import inspect
import json
import time
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from tornado import web

from ..host.engine import Caller
from .options import OPTION_KEYS, page_profiles, profile_list, slug_of
from . import names, words
from .groups import user_groups
from ..host.service import log, maybe_await

if TYPE_CHECKING:
    from .integration import Integration

#: Below the hub's prefix (served by pages.py).
STATIC_PREFIX = "quota-static/"


def json_for_script(value: Any) -> str:
    """JSON inside a `<script type="application/json">`: `<` escaped, so it cannot end the element."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")


def _call_parser(fn: Callable, form: dict, spawner: Any) -> Any:
    try:
        takes_spawner = "spawner" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_spawner = False
    return fn(form, spawner=spawner) if takes_spawner else fn(form)


def options_from_form(configured: Optional[Callable]) -> Callable:
    """The form parser `configure()` installs. The operator's configured parser (if any) gets the
    whole form; otherwise the spawner's own (KubeSpawner's reads `profile` and its options and drops
    the rest) gets the form without the quota keys. The quota keys are then added as single values
    (a form posts lists of strings)."""

    def parse(form_data: dict, spawner: Any = None) -> dict:
        if spawner is not None:
            # The form as posted, for the form rendered again after a refusal (kept choices).
            spawner._quota_form = {
                k: (v[0] if isinstance(v, list) and v else v) for k, v in form_data.items() if k != "_xsrf"
            }
        if configured is not None:
            options = dict(_call_parser(configured, form_data, spawner))
        else:
            own = spawner.trait_defaults("options_from_form") if spawner is not None else None
            rest = {k: v for k, v in form_data.items() if k not in OPTION_KEYS}
            options = dict(_call_parser(own, rest, spawner)) if callable(own) else rest
        for key in OPTION_KEYS:
            v = options[key] if key in options else form_data.get(key)
            if key not in options and key not in form_data:
                continue
            options[key] = v[0] if isinstance(v, list) and len(v) == 1 else v
        return options

    return parse


async def own_form(spawner: Any, configured: Any) -> str:
    """The form the spawner would show without quota: the operator's configured one, else the
    spawner class's own (KubeSpawner renders its `profile_list`), as text."""
    form = configured if configured is not None else spawner.trait_defaults("options_form")
    if callable(form):
        form = await maybe_await(form(spawner))
    return form or ""


#: What the page's engine needs to price a spawn, and nothing more: every user sees the form's
#: source, so an accelerator's `env` (and any other key of the values file) stays on the hub.
_PAGE_QUOTA_KEYS = ("enabled", "cpuRate", "minimumToStart", "defaultQuota")
_PAGE_ACCELERATOR_KEYS = ("displayName", "description", "nodeSelector", "quotaRate")


def _page_values(values: dict) -> dict:
    custom = (values or {}).get("custom") or {}
    out: dict = {}
    if "authMode" in custom:
        out["authMode"] = custom["authMode"]
    if isinstance(custom.get("quota"), dict):
        out["quota"] = {k: v for k, v in custom["quota"].items() if k in _PAGE_QUOTA_KEYS}
    if isinstance(custom.get("accelerators"), dict):
        out["accelerators"] = {
            key: {k: v for k, v in a.items() if k in _PAGE_ACCELERATOR_KEYS} if isinstance(a, dict) else a
            for key, a in custom["accelerators"].items()
        }
    return {"custom": out}


#: How long after a refusal the form rendered again shows it (and keeps the choices), in seconds.
REFUSAL_NOTE_S = 60


class Refused(NamedTuple):
    """A start the gate refused (403), for the form JupyterHub renders again under its error."""

    at: float
    #: The engine's message (the specification's text), as the hub's error shows it.
    message: str
    #: The first scheduled top-up after which the same start would pass (None: none within a year).
    next_refresh: Optional[dict]
    #: Whether the refusal was for credits (the engine forecasts a top-up only then).
    for_credits: bool
    #: The form as posted: field name -> value.
    form: dict


def refusal_of(quota: "Integration", user: str, server: str) -> Optional[Refused]:
    """The refusal the form rendered now follows, if any (taken once, within REFUSAL_NOTE_S)."""
    refused = quota.refusals.pop((user, server), None)
    if refused is None or time.monotonic() - refused.at > REFUSAL_NOTE_S:
        return None
    return refused


def refusal_note(refused: Optional[Refused]) -> str:
    """Below the hub's error, before the page's script rewrites it in the form's own words: the first
    scheduled top-up after which the same start would pass, or that none within a year would."""
    if refused is None or not refused.for_credits:
        return ""
    return f'\n<p id="quota-refusal-next" class="alert alert-info" role="status">{words.refusal_next(refused.next_refresh)}</p>'


def spawn_form(quota: "Integration", values: dict, configured: Any = None):
    page_values = _page_values(values)

    async def options_form(spawner: Any) -> str:
        user = spawner.user.name
        bad = await names.problems(quota.service, "user", [user])
        if bad:
            raise web.HTTPError(400, f"The user name {user!r} cannot have quota: {bad[user]}; ask an administrator")
        try:
            # The user's hub groups now: the accelerators listed are the ones the gate will allow.
            groups = await names.usable_groups(quota.service, user_groups(spawner.user))
            await quota.service.run(lambda e: e.replace_memberships([(user, groups)], complete=False))
            me = (await quota.service.request("GET", "/api/quota/me", "", Caller(user))).json()
            rates = (await quota.service.request("GET", "/api/quota/rates", "", Caller(user))).json()
            accels = (await quota.service.request("GET", "/api/accelerators", "", Caller(user))).json()["accelerators"]
        except Exception:
            log.exception("quota: the spawn form could not read %s's balance", user)
            raise web.HTTPError(503, "The quota service is not answering; try again") from None
        base = await own_form(spawner, configured)
        profiles = await profile_list(spawner) if base.strip() else []
        e = lambda s: html.escape(str(s), quote=True)  # noqa: E731
        rates_of = rates["rates"]
        entries = [("", "CPU", "CPU only", rates_of.get("cpu", 0))] + [
            (k, a.get("displayName") or k, a.get("description", ""), rates_of.get(k, a.get("quotaRate", 0))) for k, a in accels.items()
        ]
        choices = [
            f'<div class="form-check quota-choice"><input class="form-check-input" type="radio" name="gpu_selection" '
            f'id="quota-accelerator-{i}" value="{e(k)}"{" checked" if i == 0 else ""}> '
            f'<label class="form-check-label" for="quota-accelerator-{i}"><strong>{e(name)}</strong> {e(about)} '
            f'<span class="quota-rate text-body-secondary">({e(words.rate(rate))})</span></label></div>'
            for i, (k, name, about, rate) in enumerate(entries)
        ]
        unlimited = bool(me.get("unlimited")) or me.get("available") is None
        # What can be spent now (docs/glossary.md): the balance less what running servers hold.
        available = me.get("available")
        balance_line = (
            words.UNLIMITED if unlimited and rates.get("enabled")
            else words.QUOTA_OFF if not rates.get("enabled")
            else words.available_now(available, me.get("balance", 0), me.get("held", 0))
        )
        refused = refusal_of(quota, user, spawner.name or "")
        config = {
            "static": f"{spawner.hub.base_url}{STATIC_PREFIX}", "values": page_values, "balance": me.get("balance", 0),
            "available": available, "held": me.get("held", 0),
            "unlimited": unlimited, "enabled": bool(rates.get("enabled")),
            "names": {"": "CPU", **{k: a.get("displayName") or k for k, a in accels.items()}},
            "minimumToStart": rates.get("minimum_to_start", 0),
            # Where "Request credits" leads: the user page's request form.
            "requestUrl": f"{spawner.hub.base_url}quota#ask-panel",
        }
        if refused is not None:
            config["refused"] = {
                "message": refused.message, "forCredits": refused.for_credits,
                "nextRefresh": refused.next_refresh, "form": refused.form,
            }
        # When and to what, not the rule's name: the form's source shows no key of the values file.
        nxt = me.get("next_refresh")
        if nxt:
            config["nextRefresh"] = {"at": nxt["at"], "balance": nxt["balance"]}
        next_line = words.next_top_up(nxt)
        note = refusal_note(refused)
        if profiles:
            config["profiles"] = page_profiles(profiles)
            config["defaultProfile"] = slug_of(next((p for p in profiles if p.get("default")), profiles[0]))
        # "Charge to": the user's own credit or one of the budgets they may charge, with what each
        # has available now (a budget: its balance less its reservations, capped by the monthly limit).
        budgets = me.get("budgets") or []
        config["budgets"] = {b["name"]: b["available"] for b in budgets}
        charge_to = ""
        if budgets and rates.get("enabled"):
            own = words.own_choice(None if unlimited else available)
            rows = [
                f'<div class="form-check"><input class="form-check-input" type="radio" name="budget" id="quota-budget-0" '
                f'value="" checked> <label class="form-check-label" for="quota-budget-0">{own}</label></div>'
            ] + [
                f'<div class="form-check"><input class="form-check-input" type="radio" name="budget" id="quota-budget-{i}" '
                f'value="{e(b["name"])}"> <label class="form-check-label" for="quota-budget-{i}"><strong>{e(b["name"])}</strong> '
                f'{e(b.get("description", ""))} <span class="text-body-secondary">{words.budget_choice(b["available"])}</span>'
                f'</label></div>'
                for i, b in enumerate(budgets, start=1)
            ]
            charge_to = f"""
<fieldset id="quota-charge-to" class="mb-3">
  <legend class="fs-5">Charge to</legend>
  {"".join(rows)}
</fieldset>
<p id="quota-profile-budget" role="status" hidden></p>"""
        bounds = quota.settings
        fields = f"""
<div id="quota-spawn" class="quota-spawn">{note}
<script type="application/json" id="quota-spawn-config">{json_for_script(config)}</script>
<fieldset id="quota-accelerators" class="mb-3">
  <legend class="fs-5">Accelerator</legend>
  {"".join(choices)}
</fieldset>
<p id="quota-profile-accelerator" role="status" hidden></p>{charge_to}
<p><label class="form-label" for="quota-runtime">Runtime (minutes, {bounds.runtime_minutes_min}-{bounds.runtime_minutes_max})</label>
  <input id="quota-runtime" class="form-control" style="max-width: 10rem" name="runtime_minutes" type="number" min="{bounds.runtime_minutes_min}" max="{bounds.runtime_minutes_max}" step="1" value="{quota.default_runtime}" required></p>
<p id="quota-available">{balance_line} <a href="{e(spawner.hub.base_url)}quota">(your credits and history)</a></p>
<p id="quota-next-refresh">{next_line}</p>
<p>Estimated cost: <output id="quota-cost" for="quota-runtime" aria-live="polite">computing...</output></p>
<div id="quota-cost-note" role="status"></div>
<script type="module" src="{e(config["static"])}pages/spawn.js"></script>
</div>"""
        return base + fields if base.strip() else fields

    return options_form
