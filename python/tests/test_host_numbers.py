"""The engine's numbers, once (issue 60): every bound and setting a host acts on comes from the
component's configuration summary (`host-settings`: the runtime range and default, the extension
choices, the stop warnings, live streams per user, what the gate does when its database fails, the
sweep's interval, page sizes), so no host source holds one of them as a literal. The patterns are
made from the engine's own values: a host that writes one down again fails here. Comments and
docstrings may name them; code may not."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from jupyterhub_quota import QuotaEngine

REPO = Path(__file__).resolve().parents[2]
#: The hosts' own sources: the JupyterHub package, the Node bridge, the pages, the JupyterLab
#: extension and quota-hub.
HOST_SOURCES = [
    *(REPO / "python" / "src" / "jupyterhub_quota").rglob("*.py"),
    *(REPO / "js" / "src").glob("*.js"),
    *(REPO / "js" / "pages").glob("*.js"),
    *(REPO / "lab" / "src").glob("*.js"),
    *(REPO / "lab" / "jupyterlab_quota").rglob("*.py"),
    *(REPO / "hub" / "src").rglob("*.rs"),
]


def settings():
    e = QuotaEngine(":memory:", {"custom": {"authMode": "github"}})
    try:
        return e.summary.settings
    finally:
        e.close()


def patterns(s) -> dict[str, re.Pattern]:
    """What writing one of the engine's numbers down again looks like in code."""
    choices = r",\s*".join(str(m) for m in s.extend_choices)
    warnings = r",\s*".join(str(m) for m in s.warn_before_stop_minutes)
    page = f"{s.users_page_max:_}".replace("_", "_?")
    return {
        "runtime_minutes_max": re.compile(rf"\b{s.runtime_minutes_max}\b"),
        "default_runtime_minutes": re.compile(rf"(?i)default_?runtime\w*\s*[:=]\s*{s.default_runtime_minutes}\b"),
        "extend_choices": re.compile(rf"\b{choices}\b"),
        "warn_before_stop_minutes": re.compile(rf"\[\s*{warnings}\s*\]"),
        "live_streams_per_user": re.compile(rf"(?i)(live|streams)\w*\s*[:=]\s*{s.live_streams_per_user}\b"),
        "on_storage_error": re.compile(rf"(?i)(or|storage\w*\s*[:=])\s*[\"']{s.on_storage_error}[\"']"),
        "sweep_interval_seconds": re.compile(rf"(?i)sweep\w*\s*[:=]\s*{s.sweep_interval_seconds}\b"),
        "users_page_max": re.compile(rf"(?i)page\w*\s*[:=]\s*{page}\b"),
    }


def python_code(text: str) -> str:
    """The source without comments and docstrings (lines kept, so findings name the line)."""
    lines = text.splitlines(keepends=True)
    blank = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            blank.update(range(body[0].lineno - 1, body[0].end_lineno))
    out = ["\n" if i in blank else line for i, line in enumerate(lines)]
    code = "".join(out)
    result = []
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            result.append((row, col, tok.end[1]))
    out_lines = code.splitlines(keepends=True)
    for row, start, end in result:
        line = out_lines[row - 1]
        out_lines[row - 1] = line[:start] + " " * (end - start) + line[end:]
    return "".join(out_lines)


def c_like_code(text: str) -> str:
    """JavaScript or Rust without comments (strings kept; lines kept)."""
    out, i, n, quote = [], 0, len(text), None
    while i < n:
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"`" or (c == "'" and not text[max(0, i - 1)].isalnum()):
            quote = c
            out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def findings(path: Path, text: str, pats: dict[str, re.Pattern]) -> list[str]:
    code = python_code(text) if path.suffix == ".py" else c_like_code(text)
    found = []
    for no, line in enumerate(code.splitlines(), start=1):
        for name, pat in pats.items():
            if pat.search(line):
                found.append(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:{no}: {name}: {line.strip()}")
    return found


def test_no_host_source_restates_an_engine_number():
    pats = patterns(settings())
    found = [f for p in HOST_SOURCES for f in findings(p, p.read_text(), pats)]
    assert found == [], "take these from the engine's configuration summary (settings):\n" + "\n".join(found)
    assert len(HOST_SOURCES) > 100


def test_the_check_finds_each_number_written_down_again(tmp_path):
    pats = patterns(settings())
    planted = {
        "a.py": ('"""Runtime 1-480 (a docstring may say so)."""\n'
                 'MAX_RUNTIME = 480\nDEFAULT_RUNTIME_MINUTES = 20\nLIVE_STREAMS_PER_USER = 10\n'
                 'x = cfg.get("onStorageError") or "refuse"\nSWEEP_S = 10\nCHOICES = (30, 60, 120)\n'),
        "b.js": ("// up to 480 minutes (a comment may say so)\nif (n > 480) say('no');\nconst warn = [10, 2];\n"
                 "const usersPageMax = 10000;\n"),
    }
    hits = []
    for name, text in planted.items():
        p = tmp_path / name
        p.write_text(text)
        hits += findings(p, text, pats)
    named = {h.split(": ")[1] for h in hits}
    assert named == set(pats), (named, hits)
    assert not any("docstring" in h or "comment" in h for h in hits), hits
