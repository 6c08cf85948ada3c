"""What JupyterLab's quota status bar costs the hub: a real JupyterHub spawns a real JupyterLab
(with jupyterlab-quota), TABS Chromium tabs keep it open for SECONDS, and the hub's own request
counter (`/hub/metrics`, route `/api/quota/me/status`) says how many quota reads the server's
extension made. Prints the figures beside the goal (at most one read per server per 30 s);
asserts nothing about time.

    target/pyenv/bin/python python/bench/bench_lab_reads.py [TABS] [SECONDS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.chromium import launch, login  # noqa: E402
from support.hub_process import Hub, throwaway_hub  # noqa: E402

TABS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 125.0
ROUTE = "/api/quota/me/status"


def reads(hub: Hub) -> int:
    status, text = hub.admin("GET", "/hub/metrics")
    assert status == 200, text
    n = 0
    for line in text.splitlines():
        if line.startswith("quota_http_requests_total{") and f'route="{ROUTE}"' in line:
            n += int(float(line.rsplit(" ", 1)[1]))
    return n


def main() -> None:
    with throwaway_hub({"cpuRate": 1, "minimumToStart": 1}) as hub:
        hub.admin("POST", "/hub/admin/api/quota/users/tess", {"action": "set", "amount": 1000})
        status, body = hub.spawn("tess", {"runtime_minutes": 60})
        assert status in (201, 202), (status, body)
        hub.wait_ready("tess")
        with sync_playwright() as p:
            browser = launch(p)
            ctx, page = login(browser, hub, "tess", "/user/tess/lab")
            pages = [page] + [ctx.new_page() for _ in range(TABS - 1)]
            for extra in pages[1:]:
                extra.set_default_timeout(120_000)
                extra.goto(hub.url + "/user/tess/lab")
            for pg in pages:
                pg.wait_for_function("window.jupyterlabQuota && window.jupyterlabQuota.available === true")
            start, t0 = reads(hub), time.monotonic()
            polls0 = sum(pg.evaluate("window.jupyterlabQuota.requests") for pg in pages)
            while time.monotonic() - t0 < SECONDS:
                pages[0].wait_for_timeout(1000)
            elapsed = time.monotonic() - t0
            hub_reads = reads(hub) - start
            polls = sum(pg.evaluate("window.jupyterlabQuota.requests") for pg in pages) - polls0
            ctx.close()
            browser.close()
        print(f"{TABS} JupyterLab tabs on one server for {elapsed:.0f} s: {polls} requests from the tabs to the "
              f"server's extension, {hub_reads} quota reads at the hub = {hub_reads / (elapsed / 30):.2f} per 30 s "
              f"(goal: at most 1 per 30 s)")


if __name__ == "__main__":
    main()
