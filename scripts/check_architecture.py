"""ARCHITECTURE.md against the tree: every source file of the code maps is named there, and every
file path the document names exists. Exits 1 and names each miss.
    python3 scripts/check_architecture.py      # from the repository root; stdlib only

A file counts as named when its path appears in the document, or its name does inside a table row
or paragraph that names its folder (`sql_store/` ... `users.rs`). The README's test command and
scripts/test-quick.sh run it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "ARCHITECTURE.md"
#: The folders the code maps cover: every file under them must be named.
MAPPED = [
    "core/src", "sql-wire/src", "wasm/src", "host-shim/src", "hub/src", "tests/support/src",
    "python/src/jupyterhub_quota", "js/src", "js/pages", "lab/src", "lab/jupyterlab_quota",
    "tools/componentize/src", "tools/oci-image/src", "scripts",
]
SOURCE = re.compile(r"\.(rs|py|js|mjs|sh|html|css)$")


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split("\n") if f]


def named(path: str, doc: str, sections: list[str]) -> bool:
    if path in doc:
        return True
    parts = path.split("/")
    # Named by its name, or by its folder and name (`store/users.rs`, `sql_store/`'s `users.rs`),
    # inside a section that names one of its folders.
    tails = ["/".join(parts[i:]) for i in range(1, len(parts))]
    folders = ["/".join(parts[i:-1]) for i in range(len(parts) - 1)]
    for section in sections:
        if not any(f and f in section for f in folders):
            continue
        for t in tails:
            if re.search(rf"(?<![\w.-]){re.escape(t)}(?![\w-])", section):
                return True
    return False


def main() -> int:
    doc = DOC.read_text()
    sections = re.split(r"\n(?=#+ )", doc)
    files = tracked()
    missing = [
        f for f in files
        if SOURCE.search(f) and any(f.startswith(m + "/") for m in MAPPED)
        and "/tests/" not in f and not f.endswith("/tests.rs")
        and not named(f, doc, sections)
    ]
    # Paths the document names that do not exist (in backticks, with a folder and an extension).
    stale = []
    for p in sorted(set(re.findall(r"`([A-Za-z0-9_./-]+/[A-Za-z0-9_.-]+\.(?:rs|py|js|mjs|sh|html|css|md|json|toml|yaml|wit))`", doc))):
        generated = p.startswith("gen/") or "/gen/" in p  # js/gen: built, never committed
        if not generated and not any(f == p or f.endswith("/" + p) for f in files):
            stale.append(p)
    for f in missing:
        print(f"not in ARCHITECTURE.md: {f}")
    for p in stale:
        print(f"ARCHITECTURE.md names a path that does not exist: {p}")
    print(f"{len(files)} files; {len(missing)} unnamed, {len(stale)} stale path(s)")
    return 1 if missing or stale else 0


if __name__ == "__main__":
    sys.exit(main())
