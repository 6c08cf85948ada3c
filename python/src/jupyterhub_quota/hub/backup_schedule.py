"""Scheduled online backups of the hub's SQLite quota database (``configure(backup_schedule=...)``):
at each time of a five-field cron expression (UTC; ``30 2 * * *`` is 02:30 every day), a checked
copy into ``backup_dir``, the newest ``backup_keep`` kept (backups.py). A backup that fails is
logged as an error and tried again at the next time; the hub serves on."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from pathlib import Path
from typing import Optional

from . import backups
from ..host.service import log

#: Each field's range: minute, hour, day of month, month, day of week (0 = Sunday; 7 too).
RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
NAMES = ("minute", "hour", "day of month", "month", "day of week")


class ScheduleError(ValueError):
    """A schedule that is not a five-field cron expression; the message names the field."""


def _field(text: str, index: int) -> tuple[set[int], bool]:
    lo, hi = RANGES[index]
    out: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = int(step_text) if step_text.isdigit() and int(step_text) > 0 else None
        if step_text and step is None:
            raise ScheduleError(f"backup_schedule: {NAMES[index]} `{text}`: `/{step_text}` is not a step")
        if body == "*":
            a, b = lo, hi
        elif "-" in body:
            x, _, y = body.partition("-")
            if not (x.isdigit() and y.isdigit()):
                raise ScheduleError(f"backup_schedule: {NAMES[index]} `{text}` is not a number, range or `*`")
            a, b = int(x), int(y)
        elif body.isdigit():
            a = b = int(body)
            if step:
                b = hi
        else:
            raise ScheduleError(f"backup_schedule: {NAMES[index]} `{text}` is not a number, range or `*`")
        if not (lo <= a <= b <= hi):
            raise ScheduleError(f"backup_schedule: {NAMES[index]} `{text}` is outside {lo}-{hi}")
        out.update(range(a, b + 1, step or 1))
    if index == 4 and 7 in out:
        out = (out - {7}) | {0}
    return out, text != "*"


def parse(expr: str) -> tuple:
    parts = expr.split()
    if len(parts) != 5:
        raise ScheduleError(f"backup_schedule: `{expr}` is not a cron expression of five fields (minute hour day month weekday)")
    return tuple(_field(p, i) for i, p in enumerate(parts))


def next_time(expr: str, after: int) -> int:
    """The first minute matching ``expr`` strictly after ``after`` (UTC seconds). Day of month and
    day of week both restricted: either matches (cron's rule)."""
    (minutes, _), (hours, _), (days, dom_set), (months, _), (weekdays, dow_set) = parse(expr)
    t = dt.datetime.fromtimestamp(after - after % 60 + 60, dt.timezone.utc)
    day = t.replace(hour=0, minute=0)
    for _ in range(366 * 5):
        dow = (day.weekday() + 1) % 7
        if dom_set and dow_set:
            day_ok = day.day in days or dow in weekdays
        else:
            day_ok = day.day in days and dow in weekdays
        if day.month in months and day_ok:
            for h in sorted(hours):
                for m in sorted(minutes):
                    at = day.replace(hour=h, minute=m)
                    if at >= t:
                        return int(at.timestamp())
        day += dt.timedelta(days=1)
    raise ScheduleError(f"backup_schedule: `{expr}` never fires")


def run_once(path: str, values: dict, folder: Path, keep: int) -> Optional[Path]:
    """One scheduled backup; a failure is logged, not raised."""
    try:
        return backups.backup(Path(path), folder, values, folder=True, keep=keep, say=lambda m: log.info("quota: %s", m))
    except Exception as e:  # noqa: BLE001 - the hub serves on; the next time tries again
        log.error("quota: the scheduled backup of %s failed: %s", path, e)
        return None


async def run_forever(expr: str, path: str, values: dict, folder: Path, keep: int) -> None:
    parse(expr)
    log.info("quota: backing up %s at `%s` (UTC) into %s, keeping %d", path, expr, folder, keep)
    while True:
        at = next_time(expr, int(time.time()))
        await asyncio.sleep(max(0.0, at - time.time()))
        await asyncio.to_thread(run_once, path, values, folder, keep)
