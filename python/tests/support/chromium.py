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


#: Where the page tests keep their screenshots (CI keeps target/test-artifacts; docs/screenshots.md
#: lists them).
SHOTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "target", "test-artifacts", "screenshots")
#: The widths every page is looked at: a laptop, and the narrow window the navigation bar must fit.
WIDTHS = (1280, 760)


def shoot(page, name: str, widths=WIDTHS) -> list[str]:
    """Screenshots of `page` at each width (the whole page), `<name>-<hub>-<width>.png` where <hub>
    is `jh6` or `jh5` (the JupyterHub this run uses); the viewport is left at the last width."""
    import jupyterhub

    os.makedirs(SHOTS, exist_ok=True)
    out = []
    for w in widths:
        page.set_viewport_size({"width": w, "height": 900})
        path = os.path.join(SHOTS, f"{name}-jh{jupyterhub.version_info[0]}-{w}.png")
        page.screenshot(path=path, full_page=True)
        out.append(os.path.normpath(path))
    return out


def one_row(page, selector: str = "nav.navbar") -> tuple[bool, list]:
    """Whether the visible items of the navigation bar (its links, our live item, the user's name)
    sit on one row: every item's top within a few pixels of the first's. With the items' boxes."""
    boxes = page.evaluate(
        """(sel) => [...document.querySelectorAll(`${sel} .nav-item, ${sel} .navbar-brand`)]
            .filter((e) => e.offsetParent !== null && e.getBoundingClientRect().height > 0)
            .map((e) => { const r = e.getBoundingClientRect();
                          return { text: e.innerText.trim(), top: Math.round(r.top), height: Math.round(r.height),
                                   lines: Math.round(r.height / parseFloat(getComputedStyle(e).lineHeight || '24')) }; })""",
        selector,
    )
    tops = [b["top"] for b in boxes]
    flat = bool(boxes) and max(tops) - min(tops) <= 12 and all(b["height"] <= 60 for b in boxes)
    return flat, boxes
