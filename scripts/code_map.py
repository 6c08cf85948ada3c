#!/usr/bin/env python3
"""CODE-MAP.md, the file index beside ARCHITECTURE.md, generated from the files themselves: every
source file of the mapped folders with the first paragraph of its own header (a Rust `//!` doc,
a Python module docstring, a JavaScript or shell file's leading comment). The map stays true
because it is made, not written; a file without a header is an error, so every new file says what
it holds where it is read.

    python3 scripts/code_map.py --write   # writes CODE-MAP.md
    python3 scripts/code_map.py --check   # exits 1 when CODE-MAP.md is stale or a file has no header
(stdlib only; the README's test command runs --check.)"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "CODE-MAP.md"
#: The folders mapped, in the order ARCHITECTURE.md's path of a spawn meets them.
MAPPED = [
    ("core/src", "the engine: every rule, the exact bytes of every answer (`quota-core`)"),
    ("sql-wire/src", "the SQL bridge's wire format, shared by the component and the Rust host"),
    ("wasm/src", "the component: the engine over the host's SQL (`quota-wasm`)"),
    ("host-shim/src", "the Rust host library (`quota-host`): wasmtime, SQLite, PostgreSQL"),
    ("hub/src", "the `quota-hub` binary: REST, pages, storage, schedules, the command line"),
    ("python/src/jupyterhub_quota", "the JupyterHub package (`jupyterhub-quota`)"),
    ("js/src", "the Node and browser bridge (`@quota-engine/js`)"),
    ("js/pages", "the pages: the admin page, the user page, the spawn form"),
    ("lab/src", "JupyterLab's extension, its front end"),
    ("lab/jupyterlab_quota", "JupyterLab's extension, its server side (`jupyterlab-quota`)"),
    ("tests/support/src", "the scenario replayer (`quota-scenarios`)"),
    ("tools/componentize/src", "the component's packager"),
    ("tools/oci-image/src", "the image builder without an engine"),
    ("scripts", "the scripts: build, test, release, checks, rehearsals"),
]
SOURCE = re.compile(r"\.(rs|py|js|mjs|sh|html|css)$")
SUMMARY_CHARS = 260


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split("\n") if f]


def mapped(files: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {folder: [] for folder, _ in MAPPED}
    for f in files:
        if not SOURCE.search(f) or "/tests/" in f or f.endswith("/tests.rs") or not (ROOT / f).is_file():
            continue
        for folder, _ in MAPPED:
            if f.startswith(folder + "/"):
                out[folder].append(f)
                break
    return out


def header(path: Path) -> str:
    """The first paragraph of the file's own header, on one line ('' when it has none)."""
    text = path.read_text(errors="replace")
    lines: list[str] = []
    if path.suffix == ".rs":
        for line in text.splitlines():
            if line.startswith("//!"):
                lines.append(line[3:].strip())
            elif lines or line.strip():
                break
    elif path.suffix == ".py":
        try:
            doc = ast.get_docstring(ast.parse(text)) or ""
        except SyntaxError:
            doc = ""
        lines = doc.splitlines()
    elif path.suffix in (".js", ".mjs", ".css"):
        body = text.lstrip()
        if body.startswith("/*"):
            block = body[2:body.find("*/")]
            lines = [re.sub(r"^\s*\*\s?", "", line).strip() for line in block.splitlines()]
        else:
            for line in body.splitlines():
                if line.startswith("//"):
                    lines.append(line[2:].strip())
                else:
                    break
    elif path.suffix == ".sh":
        for line in text.splitlines()[1 if text.startswith("#!") else 0:]:
            if line.startswith("#"):
                lines.append(line[1:].strip())
            else:
                break
    elif path.suffix == ".html":
        # An HTML comment, or a Jinja template's `{#- ... -#}`.
        m = re.match(r"\s*(?:<!DOCTYPE[^>]*>\s*)?(?:<!--(.*?)-->|\{#-?(.*?)-?#\})", text, re.S | re.I)
        lines = [line.strip() for line in (m.group(1) or m.group(2)).splitlines()] if m else []
    # The first paragraph.
    para: list[str] = []
    for line in lines:
        if not line and para:
            break
        if line:
            para.append(line)
    summary = " ".join(para)
    summary = re.sub(r"\s+", " ", summary).strip()
    if len(summary) > SUMMARY_CHARS:
        cut = summary[:SUMMARY_CHARS]
        stop = max(cut.rfind(". "), cut.rfind(": "), cut.rfind("; "))
        summary = (cut[:stop + 1] if stop > SUMMARY_CHARS // 2 else cut.rsplit(" ", 1)[0]) + " ..."
    return summary.replace("|", "\\|")


def render() -> tuple[str, list[str]]:
    groups = mapped(tracked())
    missing: list[str] = []
    out = [
        "# Code map",
        "",
        "Every source file, with the first paragraph of its own header: generated by",
        "`python3 scripts/code_map.py --write` (the test command checks it is current). What the parts",
        "are for and how a spawn goes through them is [ARCHITECTURE.md](ARCHITECTURE.md); tests, their",
        "helpers and generated code are not listed.",
        "",
    ]
    for folder, what in MAPPED:
        files = sorted(groups[folder])
        if not files:
            continue
        out += [f"## `{folder}/`: {what}", "", "| file | what it holds |", "|---|---|"]
        for f in files:
            h = header(ROOT / f)
            if not h:
                missing.append(f)
            out.append(f"| `{f[len(folder) + 1:]}` | {h or '(no header)'} |")
        out.append("")
    return "\n".join(out), missing


def main() -> int:
    text, missing = render()
    for f in missing:
        print(f"{f}: no header saying what it holds (a `//!` doc, a module docstring, a leading comment)", file=sys.stderr)
    if "--write" in sys.argv:
        OUT.write_text(text)
        print(f"wrote {OUT.relative_to(ROOT)} ({text.count(chr(10) + '| `')} files)")
    elif OUT.read_text() != text if OUT.exists() else True:
        print(f"{OUT.relative_to(ROOT)} is not current: python3 scripts/code_map.py --write", file=sys.stderr)
        return 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
