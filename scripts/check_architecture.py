"""ARCHITECTURE.md against the tree: every file path the document names exists, it stays a map one
reads in a sitting (at most 250 lines: the file index is CODE-MAP.md, generated and checked by
scripts/code_map.py), and the composite reads it lists are exactly the store traits' methods with
a default body. Exits 1 and names each miss.
    python3 scripts/check_architecture.py      # from the repository root; stdlib only
The README's test command and scripts/test-quick.sh run it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "ARCHITECTURE.md"
LINES_MAX = 250
sys.path.insert(0, str(ROOT / "scripts"))
from rust_source import trait_defaults  # noqa: E402


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split("\n") if f]


def main() -> int:
    doc = DOC.read_text()
    files = tracked()
    problems = []
    # Paths the document names (in backticks, with a folder and an extension) that do not exist.
    for p in sorted(set(re.findall(r"`([A-Za-z0-9_./-]+/[A-Za-z0-9_.-]+\.(?:rs|py|js|mjs|sh|html|css|md|json|toml|yaml|wit))`", doc))):
        generated = p.startswith("gen/") or "/gen/" in p  # js/gen: built, never committed
        if not generated and not any(f == p or f.endswith("/" + p) for f in files):
            problems.append(f"ARCHITECTURE.md names a path that does not exist: {p}")
    lines = doc.count("\n")
    if lines > LINES_MAX:
        problems.append(f"ARCHITECTURE.md has {lines} lines, more than {LINES_MAX}: it is the map; the index is CODE-MAP.md")
    # The composite reads: exactly the store traits' default bodies.
    defaults = sorted(d.split("::")[1] for f in sorted((ROOT / "core/src/store").glob("*.rs")) for d in trait_defaults(f))
    m = re.search(r"\*\*composite read\*\* built from.*?\((`[^)]*`)\)", doc, re.S)
    listed = sorted(re.findall(r"`(\w+)`", m.group(1))) if m else []
    if listed != defaults:
        problems.append(f"ARCHITECTURE.md's composite reads {listed} are not the store traits' default bodies {defaults}")
    for p in problems:
        print(p)
    print(f"{len(files)} files; {lines} lines; {len(defaults)} composite reads; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
