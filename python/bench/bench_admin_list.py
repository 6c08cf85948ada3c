"""The admin list of 50,000 users through the Python host, as the hub's admin page asks for it
(`GET /admin/api/quota/`, whole), over a SQLite file: median of 10 engine calls, and where the
time of one call goes (the engine's own wasm, the storage imports, the converters) with
``--profile``. ``--component PATH`` times another build of the component too (an older commit's),
first, on its own file. Prints figures; asserts nothing about time.

    bash scripts/build-wasm.sh && bash scripts/python-env.sh && target/pyenv/bin/python python/bench/bench_admin_list.py [--profile] [--component PATH]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import tempfile
import time
from pathlib import Path

from jupyterhub_quota import Caller, Component, QuotaEngine

USERS = 50_000
ROUNDS = 10
ADMIN = Caller("admin", admin=True)
VALUES = {"custom": {"authMode": "github"}}
T0 = 1_795_000_000


def run(label: str, component: Component, profile: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        e = QuotaEngine(str(Path(d) / "q.db"), VALUES, component=component)
        e.conn.execute("BEGIN")
        e.conn.executemany(
            "INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?, ?, 0, ?)",
            [(f"u{i:05}", i % 100, T0) for i in range(USERS)],
        )
        e.conn.execute("COMMIT")
        times = []
        for _ in range(ROUNDS):
            t = time.perf_counter()
            r = e.handle_request("GET", "/admin/api/quota/", "", "", ADMIN, T0)
            times.append(time.perf_counter() - t)
            assert r.status == 200, r.body
        n = len(json.loads(r.body)["users"])
        assert n == USERS, n
        print(f"{label}: GET /admin/api/quota/ with {USERS:,} users through the Python host (SQLite file), "
              f"median of {ROUNDS}: {statistics.median(times) * 1e3:.1f} ms ({len(r.body):,} bytes)")
        if profile:
            p = cProfile.Profile()
            p.enable()
            e.handle_request("GET", "/admin/api/quota/", "", "", ADMIN, T0)
            p.disable()
            pstats.Stats(p).sort_stats("tottime").print_stats(12)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", action="store_true", help="where one call's time goes (cProfile)")
    ap.add_argument("--component", help="another quota-engine.wasm, timed first")
    args = ap.parse_args()
    if args.component:
        run(args.component, Component.load(Path(args.component)), args.profile)
    run("this component", Component.load(), args.profile)


if __name__ == "__main__":
    main()
