#!/usr/bin/env python3
"""The size limits that keep a module one thing (ARCHITECTURE.md, "Invariants": limits that hold): no source file over
400 lines, no Rust function over 100. Tests (their folders and a Rust file's `#[cfg(test)]`
items), benches and generated code are not held to them;
anything else over a limit must be in scripts/limits-allow.txt with its reason, and an entry that
is no longer over its limit must go (so the list only shrinks). Exits 1, naming each file or
function and its size, when a limit is broken.

    python3 scripts/check_limits.py            # check (the test command runs this)
    python3 scripts/check_limits.py --report   # every file and function near or over a limit"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rust_source import rust_items  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ALLOW = REPO / "scripts" / "limits-allow.txt"
FILE_LINES, FN_LINES = 400, 100
SOURCE = re.compile(r"\.(rs|py|js|mjs|ts|sh)$")
#: Not held to the limits: tests, benches, generated code and vendored fixtures.
EXEMPT = re.compile(r"(^|/)(tests?|benches|bench|fixtures|gen|gen-fault|node_modules)/|\.test\.js$|^python/build/")


def sources() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return sorted(p for p in out if SOURCE.search(p) and not EXEMPT.search(p) and (REPO / p).is_file())


def allowed() -> dict[str, str]:
    out = {}
    for raw in ALLOW.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, reason = line.partition("  ")
        if not sep or not reason.strip():
            raise SystemExit(f"{ALLOW.relative_to(REPO)}: `{line}`: an entry is `path` or `path::function`, two spaces, its reason")
        out[key.strip()] = reason.strip()
    return out


def main() -> int:
    report = "--report" in sys.argv
    allow = allowed()
    over: dict[str, str] = {}
    for path in sources():
        functions, test_lines = rust_items(REPO / path) if path.endswith(".rs") else ([], 0)
        n = len((REPO / path).read_text().splitlines()) - test_lines
        if n > FILE_LINES or (report and n > FILE_LINES * 0.9):
            over[path] = f"{n} lines{' besides its tests' if test_lines else ''} (limit {FILE_LINES})"
        if path.endswith(".rs"):
            for name, first, length in functions:
                if length > FN_LINES or (report and length > FN_LINES * 0.8):
                    over[f"{path}::{name}"] = f"{length} lines from line {first} (limit {FN_LINES})"
    if report:
        for k, v in sorted(over.items()):
            print(f"{k}: {v}{'  [allowed: ' + allow[k] + ']' if k in allow else ''}")
        return 0
    broken = [f"{k}: {v}" for k, v in sorted(over.items()) if k not in allow]
    stale = [f"{k}: no longer over its limit; remove it from {ALLOW.relative_to(REPO)}" for k in sorted(allow) if k not in over]
    for line in broken + stale:
        print(line, file=sys.stderr)
    if broken:
        print(f"{len(broken)} over a size limit: split them (a file over {FILE_LINES} lines usually holds two things), "
              f"or allow one in {ALLOW.relative_to(REPO)} with its reason", file=sys.stderr)
    files = len(sources())
    print(f"{files} source files: {len(broken)} over a limit, {len(allow)} allowed, {len(stale)} stale allowance(s)")
    return 1 if broken or stale else 0


if __name__ == "__main__":
    sys.exit(main())
