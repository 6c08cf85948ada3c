"""The live balances' loops end when the hub cancels them, also when the cancel comes as their
wait finishes (hub/live.py `within`). With `asyncio.wait_for` before Python 3.12 the cancel was
lost in that case, the loop went on, and a JupyterHub 5 hub did not exit on SIGTERM (its shutdown
sets the wake-up as it cancels every task, then waits for them all)."""

from __future__ import annotations

import asyncio

from jupyterhub_quota.hub.live import within


async def loop_like_the_live_balances(wake: asyncio.Event, passes: list) -> None:
    while True:
        await within(wake.wait(), 30)
        wake.clear()
        passes.append(1)


async def cancelled_as_it_wakes() -> tuple[bool, list]:
    """The loop waiting, then its wake-up set and its task cancelled in the same turn of the event
    loop (the wait finishes first): does the task end, cancelled? (The same loop around
    `asyncio.wait_for` on Python 3.11.7 does not: it runs another pass and waits again.)"""
    wake, passes = asyncio.Event(), []
    task = asyncio.ensure_future(loop_like_the_live_balances(wake, passes))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the loop is waiting
    wake.set()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    ended = bool(done) and task.cancelled()
    if not done:
        task.cancel()
        await asyncio.wait({task}, timeout=5)
    return ended, passes


def test_a_cancel_that_comes_as_the_wait_ends_ends_the_loop():
    ended, passes = asyncio.run(cancelled_as_it_wakes())
    assert ended and passes == [], passes


def test_a_timeout_and_a_result_are_told_apart():
    async def main():
        q: asyncio.Queue = asyncio.Queue()
        assert await within(q.get(), 0.01) == (False, None)
        q.put_nowait("v")
        assert await within(q.get(), 5) == (True, "v")
        assert q.empty()
    asyncio.run(main())
