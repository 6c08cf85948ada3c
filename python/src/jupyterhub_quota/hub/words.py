"""The spawn form's words, which the hub writes before the page's script runs: the rules of
js/pages/words.js (docs/glossary.md) in Python, fed by the engine's figures. Each function returns
HTML (escaped; an engine time inside `<strong data-at=...>` for the page to show in the user's time
zone too) whose text is what words.js's function of the same name says in a browser set to UTC;
python/tests/test_words.py runs both on the same inputs and holds them equal."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Optional

UNLIMITED = "Your credits are unlimited."
QUOTA_OFF = "Quota is disabled on this hub: nothing is charged."

_MILLI = Decimal("0.001")


def _e(s: Any) -> str:
    return html.escape(str(s), quote=True)


def number(n: Any) -> str:
    """A number of credits as a number: "1,250", "2.5" (at most three decimals, halves away from
    zero: words.js's `toLocaleString('en-US', {maximumFractionDigits: 3})`)."""
    d = Decimal(str(n)).quantize(_MILLI, rounding=ROUND_HALF_UP)
    text = format(d, ",f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def credits(n: Any) -> str:
    """"1 credit", "2.5 credits", "-3 credits"."""
    return f"{number(n)} credit{'' if float(n) == 1 else 's'}"


def rate(n: Any) -> str:
    """A rate: "1 credit/min", "4.5 credits/min"."""
    return f"{credits(n)}/min"


def utc(t: str) -> str:
    """An engine time ("2026-11-29T06:00:00", UTC, with or without "Z") as words.js's `when` says it
    in UTC: "2026-11-29 06:00 UTC"."""
    d = datetime.fromisoformat(t.replace("Z", "+00:00").replace("z", "+00:00"))
    d = d.replace(tzinfo=timezone.utc) if d.tzinfo is None else d.astimezone(timezone.utc)
    return d.strftime("%Y-%m-%d %H:%M UTC")


def _at(t: str) -> str:
    return f'<strong data-at="{_e(t)}">{_e(utc(t))}</strong>'


def available_now(avail: Any, balance: Any, held: Any) -> str:
    """"Available now: 98 credits (balance 100, 2 held by your running servers)", the bracket only
    when servers hold some."""
    out = f'Available now: <strong id="quota-balance">{_e(credits(avail))}</strong>'
    if float(held or 0) > 0:
        out += (f' <span class="text-body-secondary">(balance {_e(number(balance))}, '
                f'{_e(number(held))} held by your running servers)</span>')
    return out


def next_top_up(nxt: Optional[dict]) -> str:
    """"Next top-up: 2026-11-29 06:00 UTC, to 120 credits.", or that no rule will change it."""
    if not nxt:
        return "No refresh rule will change your balance."
    return f'Next top-up: {_at(nxt["at"])}, to {_e(credits(nxt["balance"]))}.'


def refusal_next(nxt: Optional[dict]) -> str:
    """After a refusal for credits: the first top-up after which the same start would pass."""
    if not nxt:
        return "No scheduled top-up within a year would let this start pass."
    return (f'The first top-up after which this start would pass: {_at(nxt["at"])}, '
            f'when your balance becomes {_e(credits(nxt["balance"]))}.')


def own_choice(avail: Any) -> str:
    """"Charge to": "Your balance (98 available)", or "(unlimited)" (`avail` None)."""
    return f"Your balance ({'unlimited' if avail is None else _e(number(avail)) + ' available'})"


def budget_choice(avail: Any) -> str:
    """"Charge to": a budget's share for this user, "(50 available to you)"."""
    return f"({_e(number(avail))} available to you)"
