"""A hub's group snapshot of 100,000 users through the Python host (`QuotaEngine.replace_memberships`,
complete, on a SQLite file): the first (every user new), unchanged, and with 1,000 users moved to
another group. ``--component PATH`` times another build of the component too (an older commit's),
in the same run. Prints figures; asserts nothing about time.

    bash scripts/build-wasm.sh && target/pyenv/bin/python python/bench/bench_snapshot.py [--component PATH]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from jupyterhub_quota import Component, QuotaEngine

USERS = 100_000
T0 = 1_795_000_000


def groups_of(i: int) -> list[str]:
    """User i is in group g(i % 1000), and every tenth user also in g((i / 10) % 1000)."""
    g = {f"g{i % 1000:03}"}
    if i % 10 == 0:
        g.add(f"g{(i // 10) % 1000:03}")
    return sorted(g)


def run(label: str, component: Component) -> None:
    snapshot = [(f"u{i:06}", groups_of(i)) for i in range(USERS)]
    moved = [(u, [f"m{i % 1000:03}"]) if i < 1000 else (u, g) for i, (u, g) in enumerate(snapshot)]
    with tempfile.TemporaryDirectory() as d:
        # A deadline past the longest (a first snapshot took 213 s before issue 36).
        e = QuotaEngine(str(Path(d) / "q.db"), {"custom": {"authMode": "github"}}, component=component,
                        call_deadline=600)
        for what, s in (("the first (all new)", snapshot), ("unchanged", snapshot), ("1,000 users moved", moved)):
            t = time.perf_counter()
            r = e.replace_memberships(s, True, T0)
            print(f"{label}: group snapshot of {USERS:,} users, {what}: {time.perf_counter() - t:.2f} s "
                  f"({r['changed']:,} changed)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--component", help="another quota-engine.wasm, timed first")
    args = ap.parse_args()
    if args.component:
        run(args.component, Component.load(Path(args.component)))
    run("this component", Component.load())


if __name__ == "__main__":
    main()
