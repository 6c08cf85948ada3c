"""jupyterlab-quota's server extension (lab/jupyterlab_quota) on its own: the hub read it shares
(at most one per 30 s however many tabs ask, read again at once after an extension), what it does
on a hub without quota routes or with a token lacking the scope (says so once, asks no more), and
a real JupyterLab outside any hub (shows nothing, one line in the server's log)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tornado.httpserver import HTTPServer
from tornado.web import Application, RequestHandler

from jupyterlab_quota.hub import FRESH_S, HubQuota, Unavailable
from support.chromium import TIMEOUT_MS
from support.hub_process import free_port, wait_for

STATUS = {"me": {"username": "ann", "balance": 50}, "server_name": "", "session": {"session_id": 7, "ends_at": "2026-11-22T10:30:00"},
          "seconds_left": 600, "cost_so_far": 3, "extend": [], "events": [], "last_event_id": 4}


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def stub_hub(answer, port=None):
    """A hub stand-in on 127.0.0.1 answering `answer(handler) -> (status, body)`; its requests are
    recorded (a unit test of the extension's reads; the real hub is test_jupyterlab.py's)."""
    seen = []

    class H(RequestHandler):
        async def get(self, path):
            seen.append(("GET", self.request.uri, self.request.headers.get("Authorization")))
            await asyncio.sleep(0.05)  # every caller of a read arrives while it is in flight
            status, body = answer(self)
            self.set_status(status)
            self.finish(json.dumps(body))

        async def post(self, path):
            seen.append(("POST", self.request.uri, self.request.body.decode()))
            self.finish(json.dumps({"session_id": 7, "ends_at": "2026-11-22T11:00:00"}))

    port = port or free_port()
    server = HTTPServer(Application([(r"/hub/api/(.*)", H)]))
    server.listen(port, "127.0.0.1")
    env = {"JUPYTERHUB_API_URL": f"http://127.0.0.1:{port}/hub/api", "JUPYTERHUB_API_TOKEN": "srv-t0ken", "JUPYTERHUB_SERVER_NAME": ""}
    return server, env, seen


def test_tabs_share_one_stream_of_the_hubs_pushes_and_each_push_makes_the_next_read_fresh():
    """quota/live: however many tabs listen, one stream to the hub (the server's token); each
    `quota` event the hub sends tells every tab and drops the cached read; the last tab gone, the
    stream is closed at the hub's next write."""
    async def run():
        streams = []
        sent: list[asyncio.Queue] = []

        class Live(RequestHandler):
            async def get(self):
                streams.append(self.request.headers.get("Authorization"))
                q: asyncio.Queue = asyncio.Queue()
                sent.append(q)
                self.set_header("Content-Type", "text/event-stream")
                try:
                    while True:
                        self.write(await q.get())
                        await self.flush()
                except Exception:  # noqa: BLE001 - the client went away
                    pass

        port = free_port()
        server = HTTPServer(Application([(r"/hub/quota/live", Live)]))
        server.listen(port, "127.0.0.1")
        env = {"JUPYTERHUB_API_URL": f"http://127.0.0.1:{port}/hub/api", "JUPYTERHUB_API_TOKEN": "srv-t0ken"}
        clock = FakeClock()
        q = HubQuota(env, clock=clock)
        q._read_at = clock.t  # a read just made
        tabs = [q.listen() for _ in range(3)]
        await asyncio.wait_for(_until(lambda: sent), 10)
        assert streams == ["token srv-t0ken"], "one stream for every tab, with the server's token"
        sent[0].put_nowait('event: quota\ndata: {"balance": 5}\n\n')
        got = await asyncio.wait_for(asyncio.gather(*(t.get() for t in tabs)), 10)
        assert got == ["changed"] * 3 and q.pushes == 1
        assert q._read_at == float("-inf"), "the next status read goes to the hub"
        # A comment (keep-alive) is no change.
        sent[0].put_nowait(": keep-alive\n\n")
        sent[0].put_nowait('event: quota\ndata: {"balance": 6}\n\n')
        await asyncio.wait_for(asyncio.gather(*(t.get() for t in tabs)), 10)
        assert q.pushes == 2 and all(t.empty() for t in tabs)
        for t in tabs:
            q.unlisten(t)
        sent[0].put_nowait(": keep-alive\n\n")
        await asyncio.wait_for(q._following, 10)
        assert len(streams) == 1
        server.stop()

    asyncio.run(run())


def test_a_hub_stream_that_ends_or_fails_is_opened_again_and_its_pushes_still_arrive():
    """The hub restarted (its stream closed), then failing (a 502), then back: the extension opens
    the stream again each time and the tabs still hear every push."""
    async def run():
        opened = []
        pushes: list[asyncio.Queue] = []

        class Live(RequestHandler):
            async def get(self):
                opened.append(len(opened))
                if len(opened) == 2:
                    self.set_status(502)
                    return self.finish("bad gateway")
                q: asyncio.Queue = asyncio.Queue()
                pushes.append(q)
                self.set_header("Content-Type", "text/event-stream")
                while True:
                    item = await q.get()
                    if item is None:  # the hub going away: the stream ends
                        return self.finish()
                    self.write(item)
                    await self.flush()

        port = free_port()
        server = HTTPServer(Application([(r"/hub/quota/live", Live)]))
        server.listen(port, "127.0.0.1")
        q = HubQuota({"JUPYTERHUB_API_URL": f"http://127.0.0.1:{port}/hub/api", "JUPYTERHUB_API_TOKEN": "t"})
        q.retry_s = 0.05
        tab = q.listen()
        await asyncio.wait_for(_until(lambda: pushes), 10)
        pushes[0].put_nowait('event: quota\ndata: {}\n\n')
        assert await asyncio.wait_for(tab.get(), 10) == "changed"
        pushes[0].put_nowait(None)  # ended; the next try fails (502); the third holds
        await asyncio.wait_for(_until(lambda: len(pushes) == 2), 10)
        assert len(opened) == 3
        pushes[1].put_nowait('event: quota\ndata: {}\n\n')
        assert await asyncio.wait_for(tab.get(), 10) == "changed"
        assert q.pushes == 2
        q.unlisten(tab)
        pushes[1].put_nowait(": keep-alive\n\n")
        await asyncio.wait_for(q._following, 10)
        server.stop()

    asyncio.run(run())


async def _until(check) -> None:
    while not check():
        await asyncio.sleep(0.01)


def test_tabs_share_one_hub_read_per_30_seconds_and_an_extension_reads_again():
    async def run():
        server, env, seen = stub_hub(lambda h: (200, STATUS))
        clock = FakeClock()
        q = HubQuota(env, clock=clock)
        # Ten tabs ask at once: one read.
        got = await asyncio.gather(*(q.status() for _ in range(10)))
        assert all(g["cost_so_far"] == 3 for g in got)
        assert len(seen) == 1 and seen[0][1] == "/hub/api/quota/me/status?server=&events_after=0", seen
        assert seen[0][2] == "token srv-t0ken"
        # Within 30 s: no read.
        clock.t += FRESH_S - 0.5
        await q.status()
        assert len(seen) == 1
        # After 30 s: one more, from the last event id on.
        clock.t += 1
        await asyncio.gather(*(q.status() for _ in range(5)))
        assert len(seen) == 2 and seen[1][1].endswith("events_after=4"), seen
        # An extension: the hub's extend route, then the next status is read at once.
        code, body = await q.extend(30)
        assert code == 200 and seen[2] == ("POST", "/hub/api/quota/sessions/7/extend", '{"minutes": 30}'), seen
        await q.status()
        assert len(seen) == 4 and q.reads == 3
        server.stop()

    asyncio.run(run())


def test_a_failing_or_restarted_hub_is_asked_again_and_nothing_is_given_up():
    async def run():
        answers = [(503, {"message": "busy"}), (500, {"message": "boom"}), (200, STATUS)]
        server, env, seen = stub_hub(lambda h: answers.pop(0))
        q = HubQuota(env)
        for _ in range(2):
            with pytest.raises(ConnectionError):
                await q.status()
        assert q.unavailable is None
        assert (await q.status())["cost_so_far"] == 3
        # The hub goes away: a connection error, not "no quota here"; back on the same port, read again.
        port = int(env["JUPYTERHUB_API_URL"].split(":")[2].split("/")[0])
        server.stop()
        with pytest.raises(ConnectionError):
            await q.status(fresh=True)
        assert q.unavailable is None
        again, _, _ = stub_hub(lambda h: (200, {**STATUS, "cost_so_far": 4}), port=port)
        assert (await q.status(fresh=True))["cost_so_far"] == 4
        again.stop()

    asyncio.run(run())


@pytest.mark.parametrize("status, says", [(404, "has no quota routes"), (403, "lacks the hub scope custom:quota:self")])
def test_a_hub_without_quota_is_said_once_and_not_asked_again(caplog, status, says):
    async def run():
        server, env, seen = stub_hub(lambda h: (status, {"status": status, "message": "no"}))
        q = HubQuota(env)
        for _ in range(3):
            with pytest.raises(Unavailable):
                await q.status(fresh=True)
        assert len(seen) == 1, seen
        server.stop()

    with caplog.at_level(logging.INFO, logger="jupyterlab_quota"):
        asyncio.run(run())
    lines = [r.getMessage() for r in caplog.records if r.name == "jupyterlab_quota"]
    assert len(lines) == 1 and says in lines[0], lines


def requests_post(url: str, body: str, headers: dict) -> tuple[int, str]:
    return _send(urllib.request.Request(url, data=body.encode(), headers=headers, method="POST"))


def requests_get(url: str, headers: dict) -> tuple[int, str]:
    return _send(urllib.request.Request(url, headers=headers))


def _send(req) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_outside_a_hub_jupyterlab_shows_nothing_and_the_server_logs_one_line(tmp_path, browser):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
    log = tmp_path / "server.log"
    args = [sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1", "--no-browser",
            "--IdentityProvider.token=lab-t0ken", f"--ServerApp.root_dir={tmp_path}"]
    if os.geteuid() == 0:
        args.append("--allow-root")
    with open(log, "w") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for("the server's start", lambda: "is running at" in log.read_text() or "http://127.0.0.1" in log.read_text())
        ctx = browser.new_context()
        page = ctx.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        try:
            page.goto(f"http://127.0.0.1:{port}/lab?token=lab-t0ken")
            page.wait_for_function("window.jupyterlabQuota && window.jupyterlabQuota.available === false")
            assert page.locator(".jp-quota-status").count() == 0
            page.reload()
            page.wait_for_function("window.jupyterlabQuota && window.jupyterlabQuota.available === false")
        finally:
            ctx.close()
        # Bad input is refused naming the field, before anything reaches a hub.
        auth = {"Authorization": "token lab-t0ken", "Content-Type": "application/json"}
        for body in ('{"minutes": "30"}', '{"minutes": true}', "{}", "not json"):
            r = requests_post(f"http://127.0.0.1:{port}/quota/extend", body, auth)
            assert r[0] == 400 and "minutes: must be a whole number of minutes" in r[1], (body, r)
        r = requests_get(f"http://127.0.0.1:{port}/quota/events?after=x", auth)
        assert r[0] == 400 and "after: must be an event id" in r[1], r
        said = re.findall(r"jupyterlab-quota: no quota status in this server: .*", log.read_text())
        assert len(said) == 1 and "not running as a JupyterHub single-user server" in said[0], said
    finally:
        proc.terminate()
        proc.wait(timeout=30)
