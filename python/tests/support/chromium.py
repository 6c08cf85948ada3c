"""Debian's headless Chromium driven by playwright (which downloads no browser), for the tests of
the pages inside a real hub."""

from __future__ import annotations

import os

from .hub_process import DEADLINE_S, Hub

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = int(DEADLINE_S * 1000)


def launch(p):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install chromium (scripts/ensure-chromium.sh does)"
    return p.chromium.launch(executable_path=CHROMIUM, args=ARGS)


def login(browser, hub: Hub, user: str, next_path: str):
    """A new browser context signed in through the hub's own login form, left on `next_path`."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(hub.url + next_path)
    page.wait_for_url("**/hub/login**")
    page.fill("#username_input", user)
    page.fill("#password_input", "any")
    page.click("#login_submit")
    page.wait_for_url(f"**{next_path}")
    return ctx, page
