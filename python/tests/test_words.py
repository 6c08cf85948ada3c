"""One vocabulary (issue 60, item 3): the spawn form's lines that the hub writes (hub/words.py) say
what the pages' words.js says for the same figures. Node runs the words.js the package ships (the
one the form's page loads), in UTC, over the inputs below; each Python function's text (its HTML's
tags dropped, its entities read) must equal the JavaScript function's."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import jupyterhub_quota
from jupyterhub_quota.hub import words

WORDS_JS = Path(jupyterhub_quota.__file__).parent / "hub" / "static" / "pages" / "words.js"

#: Figures as the engine writes them (credits with up to three decimals), and a few it does not
#: (a fourth decimal, a float's tail, a large and a negative number) so the rounding rule is held too.
NUMBERS = [0, 1, 1.0, 2, 2.5, 0.001, 0.5, 98, 100, 999.999, 1000, 1250, 1234567.891, -3, -0.25,
           1_000_000_000, 10**15, 0.0005, 1.0005, 2.0015, 0.30000000000000004, 99.9999, -0.0001]
TIMES = ["2026-11-29T06:00:00", "2026-11-29T06:00:00Z", "2027-01-01T00:30:00", "2026-12-31T23:59:59Z"]
NEXT = [None] + [{"at": t, "balance": b} for t, b in zip(TIMES, [120, 1, 2.5, 1250])]
AVAILABLE = [(98, 100, 2), (100, 100, 0), (1250, 1300.5, 50.5), (0, 32, 32), (1, 1, 0)]

#: (function in words.js, function in words.py, the argument lists)
CASES = [
    ("number", words.number, [[n] for n in NUMBERS]),
    ("credits", words.credits, [[n] for n in NUMBERS]),
    ("rate", words.rate, [[n] for n in NUMBERS]),
    ("when", words.utc, [[t] for t in TIMES]),
    ("availableNow", words.available_now, [list(a) for a in AVAILABLE]),
    ("nextTopUp", words.next_top_up, [[n] for n in NEXT]),
    ("refusalNext", words.refusal_next, [[n] for n in NEXT]),
    ("ownChoice", words.own_choice, [[None]] + [[n] for n in NUMBERS]),
    ("budgetChoice", words.budget_choice, [[n] for n in NUMBERS]),
]


def text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def in_node(calls: list[tuple[str, list]]) -> list:
    """What words.js says for each (function or constant, arguments); a constant takes None."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: scripts/test-all.sh installs it (the pages' tests need it too)")
    script = (
        f"const w = await import({json.dumps(WORDS_JS.as_uri())});\n"
        "const calls = JSON.parse(process.argv[1]);\n"
        "process.stdout.write(JSON.stringify(calls.map(([f, args]) => (args === null ? w[f] : w[f](...args)))));\n"
    )
    out = subprocess.run([node, "--input-type=module", "-e", script, json.dumps(calls)], capture_output=True,
                         text=True, timeout=60, env={**os.environ, "TZ": "UTC"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_form_says_what_the_pages_say_for_the_same_figures():
    assert WORDS_JS.is_file(), f"the package ships {WORDS_JS}"
    calls = [(js, args) for js, _, many in CASES for args in many]
    said = in_node(calls)
    py = {js: fn for js, fn, _ in CASES}
    differ = [f"{js}{tuple(args)}: words.js {js_said!r}, words.py {text(py[js](*args))!r}"
              for (js, args), js_said in zip(calls, said) if text(py[js](*args)) != js_said]
    assert not differ, "\n".join(differ)


def test_the_constants_and_a_grouped_number_are_the_same_words():
    assert in_node([("UNLIMITED", None), ("QUOTA_OFF", None)]) == [words.UNLIMITED, words.QUOTA_OFF]
    # What the form wrote before words.py: "1250 credits" where the pages say "1,250 credits".
    assert text(words.available_now(1250, 1300, 50)) == "Available now: 1,250 credits (balance 1,300, 50 held by your running servers)"


def test_a_form_rendered_by_the_hub_holds_words_py_lines():
    """The form's source (forms.py) says no credit, rate or time in words of its own."""
    source = (Path(words.__file__).parent / "forms.py").read_text()
    for own in ("credit{", "held by your running", "available to you", "Next top-up", "UTC</strong>", "/min"):
        assert own not in source, f"forms.py writes {own!r} itself; hub/words.py says it"
