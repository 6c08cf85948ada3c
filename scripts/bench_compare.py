#!/usr/bin/env python3
"""The figures of two commits' benchmark runs side by side (scripts/bench-compare.sh writes them):
every number with a unit that a bench printed, keyed by its line (numbers blanked) under the
section it belongs to, as HEAD/BASE with the spread of the rounds.

    python3 scripts/bench_compare.py target/bench-compare/out

`out/<bench>/<side>-<round>.txt`, side `base` or `head`. A ratio's spread is the lowest and highest
HEAD/BASE any pair of rounds gives (HEAD's best against BASE's worst and back): a spread that
straddles 1.00 is no change this machine can tell. Times (ns, us, ms, s) are better lower, rates
(/s) and shares (%) better higher: the last column says which way HEAD moved."""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

#: A figure: a number and its unit.
FIGURE = re.compile(
    r"(?<![\w.])(-?\d[\d,]*(?:\.\d+)?)\s*(ns/op|ns|us|ms|cycles/s|commits/s|requests/s|req/s|ops/s|rows/s|/s|s|%|x)(?![\w/])")
LOWER_IS_BETTER = {"ns/op", "ns", "us", "ms", "s"}


def figures(text: str) -> dict[str, tuple[float, str]]:
    """Every figure of one run's output: key -> (value, unit). The key is the section (the last
    unindented line ending in ':') and the line with its numbers blanked, and the figure's place
    on that line; a key seen twice in one run gets its count."""
    out: dict[str, tuple[float, str]] = {}
    section = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" ") and line.rstrip().endswith(":"):
            section = FIGURE.sub("#", line.strip())
            continue
        found = list(FIGURE.finditer(line))
        if not found:
            continue
        shape = FIGURE.sub(lambda m: f"#{m.group(2)}", line.strip())
        # Counts and other numbers without a unit of their own vary too: blanked, not compared.
        shape = re.sub(r"\s+", " ", re.sub(r"(?<![\w#])\d[\d,]*(?:\.\d+)?", "#", shape))
        for i, m in enumerate(found):
            if m.group(2) == "x":
                continue  # a ratio the bench worked out itself: its parts are compared instead
            key = f"{section} | {shape} [{i}]" if section else f"{shape} [{i}]"
            n = 2
            while key in out:
                key = f"{key} ({n})"
                n += 1
            out[key] = (float(m.group(1).replace(",", "")), m.group(2))
    return out


def num(v: float) -> str:
    """A figure as printed: thousands separated, small ones with their decimals."""
    return f"{v:,.1f}" if abs(v) >= 10 else f"{v:.4g}"


def main(folder: Path) -> int:
    benches = sorted(p for p in folder.iterdir() if p.is_dir())
    if not benches:
        print(f"{folder}: no bench output (run scripts/bench-compare.sh)", file=sys.stderr)
        return 1
    for bench in benches:
        runs: dict[str, list[dict]] = defaultdict(list)
        for f in sorted(bench.glob("*.txt")):
            side = f.stem.split("-")[0]
            runs[side].append(figures(f.read_text(errors="replace")))
        if not runs.get("base") or not runs.get("head"):
            print(f"\n{bench.name}: a side has no run; skipped")
            continue
        print(f"\n== {bench.name} ({len(runs['base'])} rounds each, alternated)")
        print(f"{'BASE':>12} {'HEAD':>12}  {'HEAD/BASE':>9} {'spread':>13}  {'':7} figure")
        keys = [k for k in runs["head"][0] if all(k in r for r in runs["base"] + runs["head"])]
        for key in keys:
            unit = runs["head"][0][key][1]
            b = [r[key][0] for r in runs["base"]]
            h = [r[key][0] for r in runs["head"]]
            mb, mh = statistics.median(b), statistics.median(h)
            if mb == 0 or min(b) == 0 or max(b) == 0:
                continue
            lo, hi = min(h) / max(b), max(h) / min(b)
            ratio = mh / mb
            better = (ratio < 1) if unit in LOWER_IS_BETTER else (ratio > 1)
            # One round has no spread: it cannot tell a change from noise.
            moved = ("one run" if len(b) < 2 or len(h) < 2 else
                     "same" if lo <= 1 <= hi else ("better" if better else "WORSE"))
            print(f"{num(mb):>12} {num(mh):>12}  {ratio:>8.2f}x {lo:>5.2f}-{hi:<5.2f}x  {moved:7} {unit:>9}  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "target/bench-compare/out")))
