"""A refresh run inside a real JupyterHub with USERS users in groups (the real configurable-http-proxy,
SQLite for the hub and, by default, for the quota database; ``--pg URL`` puts the quota database on
PostgreSQL): how long ``POST /hub/admin/api/quota/refresh`` with a run id takes (the hub's group
snapshot first, then the run a chunk of users per transaction), and what the hub's own requests
(``GET /hub/api/users``) and a quota request (``GET /hub/api/quota/rates``) wait meanwhile, against
the same requests before it (each asked every 0.1 s). The first run's snapshot writes every
user's groups; the second finds them unchanged; a third runs with no other request. Prints
figures; asserts nothing about time.

    bash scripts/test-python.sh -k nothing   # once: target/pyenv with the package
    target/pyenv/bin/python python/bench/bench_hub_refresh.py [--users N] [--pg URL]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.hub_process import Hub  # noqa: E402

from bench_snapshot import groups_of  # noqa: E402  (the same groups as the engine-only bench)

GROUPS = 1000


def seed_hub(db: Path, users: int) -> None:
    """USERS users and their groups in a new hub database, written with JupyterHub's own ORM."""
    from jupyterhub import orm
    from sqlalchemy import insert, select

    session = orm.new_session_factory(f"sqlite:///{db}")()
    session.execute(insert(orm.Group), [{"name": f"g{k:03}"} for k in range(GROUPS)])
    session.execute(insert(orm.User), [{"name": f"u{i:06}"} for i in range(users)])
    uid = dict(session.execute(select(orm.User.name, orm.User.id)).all())
    gid = dict(session.execute(select(orm.Group.name, orm.Group.id)).all())
    rows = [{"user_id": uid[f"u{i:06}"], "group_id": gid[g]} for i in range(users) for g in groups_of(i)]
    session.execute(insert(orm.user_group_map), rows)
    # The hub's `user` role, held already: a hub starting with users who lack it grants it one by one.
    role = orm.Role(name="user")
    session.add(role)
    session.flush()
    session.execute(insert(orm.Base.metadata.tables["user_role_map"]), [{"user_id": u, "role_id": role.id} for u in uid.values()])
    session.commit()
    session.close()


def seed_quota(db: str, values: dict, users: int) -> None:
    """The same users with a balance in the quota database (SQLite file or PostgreSQL), as an
    admin's batch sets them, 1,000 a call."""
    from jupyterhub_quota import Caller, QuotaEngine

    e = QuotaEngine(db, values)
    admin = Caller("admin", admin=True)
    for k in range(0, users, 1000):
        body = {"users": [{"username": f"u{i:06}", "amount": i % 100} for i in range(k, min(users, k + 1000))]}
        r = e.handle_request("POST", "/admin/api/quota/batch", "", json.dumps(body), admin)
        assert r.status == 200, r.body
    e.close()


#: Seconds between the starts of a prober's requests (sooner only when one took longer): a busy
#: hub, not one saturated by the bench's own requests (whose waits would be its own queue).
EVERY_S = 0.1


class Prober(threading.Thread):
    """GETs `path` every EVERY_S until stopped, recording each request's time."""

    def __init__(self, hub: Hub, path: str):
        super().__init__(daemon=True)
        self.url, self.token = hub.url + path, hub.admin_token
        self.times: list[float] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            req = urllib.request.Request(self.url, headers={"Authorization": f"token {self.token}"})
            t = time.perf_counter()
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()
                assert r.status == 200, r.status
            took = time.perf_counter() - t
            self.times.append(took)
            self.stopping.wait(max(0.0, EVERY_S - took))

    def stop(self) -> list[float]:
        self.stopping.set()
        self.join()
        return self.times


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def show(what: str, xs: list[float]) -> str:
    ms = [x * 1e3 for x in xs]
    return (f"{what}: {len(ms)} requests, median {statistics.median(ms):.1f} ms, p99 {pct(ms, 99):.1f} ms, "
            f"max {max(ms):.1f} ms")


PROBES = (("/hub/api/users", "the hub's GET /hub/api/users"), ("/hub/api/quota/rates", "a quota GET /hub/api/quota/rates"))


def probed(hub: Hub, work) -> tuple[object, float, dict]:
    probes = {p: Prober(hub, p) for p, _ in PROBES}
    for p in probes.values():
        p.start()
    t = time.perf_counter()
    out = work()
    took = time.perf_counter() - t
    return out, took, {p: probes[p].stop() for p in probes}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--pg", help="the quota database on this PostgreSQL (a throwaway database)")
    args = ap.parse_args()
    values = {"custom": {"authMode": "github", "quota": {"defaultQuota": 10}}}
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "hub"
        state.mkdir()
        (Path(tmp) / "values.json").write_text(json.dumps(values))
        t = time.perf_counter()
        seed_hub(state / "jupyterhub.sqlite", args.users)
        seed_quota(args.pg or str(state / "quota.sqlite"), values, args.users)
        print(f"seeded {args.users:,} hub users in {GROUPS} groups and their balances in {time.perf_counter() - t:.1f} s")
        extra = {"QT_DB_URL": args.pg} if args.pg else {}
        hub = Hub(state, Path(tmp) / "values.json", extra_env=extra)
        t = time.perf_counter()
        hub.start(deadline=1800)
        print(f"the hub started in {time.perf_counter() - t:.1f} s")
        try:
            _, _, before = probed(hub, lambda: time.sleep(5))
            for p, what in PROBES:
                print(show(f"before, {what}", before[p]))
            for run, snapshot in (("bench-1", "every user's groups new"), ("bench-2", "groups unchanged")):
                def refresh(run=run):
                    return hub.admin("POST", "/hub/admin/api/quota/refresh", {"action": "add", "amount": 1, "run_id": run})
                (status, body), took, during = probed(hub, refresh)
                assert status == 200, (status, body)
                print(f"refresh {run} of {body['users_updated']:,} users ({snapshot}): {took:.2f} s")
                for p, what in PROBES:
                    print(show(f"  during it, {what}", during[p]))
            # The same with no other request meanwhile: the refresh's own time in the hub.
            t = time.perf_counter()
            status, body = hub.admin("POST", "/hub/admin/api/quota/refresh", {"action": "add", "amount": 1, "run_id": "bench-3"})
            assert status == 200, (status, body)
            print(f"refresh bench-3 of {body['users_updated']:,} users (groups unchanged), no other request: "
                  f"{time.perf_counter() - t:.2f} s")
        finally:
            hub.stop()


if __name__ == "__main__":
    main()
