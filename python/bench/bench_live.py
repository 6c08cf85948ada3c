"""The hub's live balance stream (`/hub/quota/live`) at scale, against a real JupyterHub with the
real configurable-http-proxy on this machine: USERS users each hold a stream through the proxy (a
token in the Authorization header, as a script would; a browser sends its cookie); then each
user's balance is changed once by an admin's `add` over REST (CONCURRENCY at a time), and the time
from the add's answer to the new balance arriving on that user's stream is measured. Prints the
figures; asserts nothing about time.

    bash scripts/test-python.sh -k nothing   # once: target/pyenv with the package
    target/pyenv/bin/python python/bench/bench_live.py [USERS] [CONCURRENCY]
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import sys
import time
from pathlib import Path

from tornado.httpclient import AsyncHTTPClient, HTTPRequest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.hub_process import Hub, throwaway_hub  # noqa: E402

USERS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
CONCURRENCY = int(sys.argv[2]) if len(sys.argv) > 2 else 8


def pct(xs: list, p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def main(hub: Hub, tokens: dict) -> None:
    AsyncHTTPClient.configure(None, max_clients=USERS + 64)
    client = AsyncHTTPClient()
    first: dict[str, asyncio.Event] = {u: asyncio.Event() for u in tokens}
    got: dict[str, tuple[float, int]] = {}
    want: dict[str, int] = {}
    buffers: dict[str, str] = {u: "" for u in tokens}

    def on_chunk(user: str):
        def chunk(data: bytes) -> None:
            buffers[user] += data.decode()
            while "\n\n" in buffers[user]:
                block, buffers[user] = buffers[user].split("\n\n", 1)
                for line in block.splitlines():
                    if line.startswith("data: "):
                        balance = json.loads(line[6:])["balance"]
                        first[user].set()
                        if want.get(user) == balance and user not in got:
                            got[user] = (time.monotonic(), balance)
        return chunk

    streams = [
        client.fetch(HTTPRequest(f"{hub.url}/hub/quota/live", headers={"Authorization": f"token {t}"},
                                 streaming_callback=on_chunk(u), request_timeout=3600, connect_timeout=60), raise_error=False)
        for u, t in tokens.items()
    ]
    t0 = time.monotonic()
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in first.values())), 300)
    print(f"{USERS} streams open through the proxy, first value on each: {time.monotonic() - t0:.2f} s")

    sent: dict[str, float] = {}
    admin = {"Authorization": f"token {hub.admin_token}", "Content-Type": "application/json"}
    queue = list(tokens)
    t_start = time.monotonic()

    async def worker() -> None:
        while queue:
            user = queue.pop()
            want[user] = 1
            r = await client.fetch(HTTPRequest(f"{hub.url}/hub/admin/api/quota/users/{user}", method="POST", headers=admin,
                                               body=json.dumps({"action": "add", "amount": 1})), raise_error=False)
            assert r.code == 200, (r.code, r.body)
            sent[user] = time.monotonic()

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    adds_s = time.monotonic() - t_start
    await wait_all(got)
    report(f"{USERS} admin adds ({CONCURRENCY} at a time) in {adds_s:.2f} s = {USERS / adds_s:.0f}/s; "
           "add answered -> new balance on the user's stream", got, sent)

    # One batch changes everyone: the hub learns who from the ledger (one read per 1,000 rows).
    got.clear()
    want.update(dict.fromkeys(tokens, 11))
    r = await client.fetch(HTTPRequest(f"{hub.url}/hub/admin/api/quota/batch", method="POST", headers=admin,
                                       body=json.dumps({"users": [{"username": u, "amount": 11} for u in tokens]})), raise_error=False)
    assert r.code == 200, (r.code, r.body)
    done = time.monotonic()
    await wait_all(got)
    report(f"one batch setting all {USERS}; batch answered -> new balance on each stream", got, dict.fromkeys(tokens, done))
    for f in streams:
        f.cancel()


async def wait_all(got: dict) -> None:
    deadline = time.monotonic() + 60
    while len(got) < USERS and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def report(what: str, got: dict, sent: dict) -> None:
    lat = [max(0.0, got[u][0] - sent[u]) for u in got if u in sent]
    print(f"{what}: p50 {statistics.median(lat) * 1000:.1f} ms, p99 {pct(lat, 99) * 1000:.1f} ms, "
          f"max {max(lat) * 1000:.1f} ms; {sum(1 for x in lat if x > 2.0)} of {len(lat)} over 2 s; "
          f"{USERS - len(got)} never arrived")


def run() -> None:
    with throwaway_hub({"cpuRate": 1, "defaultQuota": 0}) as hub:
        names = [f"u{i:05}" for i in range(USERS)]
        for i in range(0, USERS, 500):
            status, body = hub.admin("POST", "/hub/api/users", {"usernames": names[i:i + 500]})
            assert status == 201, (status, body)
        status, body = hub.admin("POST", "/hub/admin/api/quota/batch",
                                 {"users": [{"username": n, "amount": 0} for n in names]})
        assert status == 200, (status, body)
        t = time.monotonic()
        tokens = {n: hub.token_for(n) for n in names}
        print(f"{USERS} users and tokens made in {time.monotonic() - t:.1f} s")
        # The streams still open when the run ends are cut; tornado would log each.
        logging.getLogger("tornado").setLevel(logging.CRITICAL)
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(lambda _loop, _ctx: None)
        loop.run_until_complete(main(hub, tokens))


if __name__ == "__main__":
    run()
