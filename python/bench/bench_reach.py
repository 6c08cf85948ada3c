"""What course staff's reach at the moment of the request costs (issue 58): a real JupyterHub whose
groups of 100 and 1,000 members each have a manager, and the same read of one member's credit
(`GET /hub/admin/api/quota/users/<member>`) by a quota admin (no reach to read), by the group's
manager with nothing changed in the hub (one query of the hub's database, one trip to the engine,
nothing written), and by the manager right after the hub removed a member (that member written).
Median and 90th percentile of each, in milliseconds, over real HTTP through the hub's proxy.
Prints figures; asserts nothing about time.

    target/pyenv/bin/python python/bench/bench_reach.py [--rounds 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.hub_process import HERE, Hub  # noqa: E402

SIZES = (100, 1000)


def config(path: Path) -> None:
    groups = {f"c{n}": {"users": [f"u{n}x{i}" for i in range(n)]} for n in SIZES}
    roles = [{"name": f"staff-{n}", "scopes": [f"custom:quota:manage!group=c{n}"], "users": [f"tm{n}"]} for n in SIZES]
    path.write_text(
        f"load_subconfig({str(HERE / 'hub_config.py')!r})\n"
        "c = get_config()\n"
        f"c.JupyterHub.load_groups = {json.dumps(groups)}\n"
        f"c.JupyterHub.load_roles = [*c.JupyterHub.load_roles, *{json.dumps(roles)}]\n"
    )


def timed(hub: Hub, token: str, path: str) -> float:
    t = time.perf_counter()
    st, body = hub.api("GET", path, token)
    assert st == 200, (st, body)
    return (time.perf_counter() - t) * 1000


def summary(ms: list) -> str:
    q = statistics.quantiles(ms, n=10)
    return f"median {statistics.median(ms):.1f} ms, p90 {q[-1]:.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        config(state / "hub_config_reach.py")
        values = state / "values.json"
        values.write_text(json.dumps({"custom": {"authMode": "github"}}))
        hub = Hub(state / "hub", values, config=state / "hub_config_reach.py").start(deadline=300)
        try:
            admin = hub.token_for("admin")
            for n in SIZES:
                staff = hub.token_for(f"tm{n}")
                path = f"/hub/admin/api/quota/users/u{n}x1"
                timed(hub, staff, path)  # the first reach: every member written
                as_admin = [timed(hub, admin, path) for _ in range(args.rounds)]
                unchanged = [timed(hub, staff, path) for _ in range(args.rounds)]
                after_change = []
                for i in range(min(args.rounds, 20)):
                    who = f"u{n}x{2 + i}"
                    st, _ = hub.admin("DELETE", f"/hub/api/groups/c{n}/users", {"users": [who]})
                    assert st == 200
                    after_change.append(timed(hub, staff, path))
                print(f"group of {n:,} members: a quota admin's read {summary(as_admin)}; "
                      f"course staff's, nothing changed {summary(unchanged)}; "
                      f"right after the hub removed a member {summary(after_change)}")
        finally:
            hub.stop()


if __name__ == "__main__":
    main()
