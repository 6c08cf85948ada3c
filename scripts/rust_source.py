"""Rust source read just enough to count: comments, strings and char literals blanked (so braces
can be counted), each function's extent outside `#[cfg(test)]` items, and a trait's methods with a
default body. Shared by scripts/check_limits.py (function sizes) and scripts/check_architecture.py
(the composite reads ARCHITECTURE.md names)."""

from __future__ import annotations

import re
from pathlib import Path

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def code_only(text: str) -> str:
    """The Rust text with comments, strings and char literals blanked (newlines kept), so that
    braces can be counted."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif (m := re.match(r'b?r(#*)"', text[i:i + 20])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}', '{') or a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                out.append(" " * m.end())
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def rust_items(path: str | Path) -> tuple[list[tuple[str, int, int]], int]:
    """(name, first line, lines) of each function outside `#[cfg(test)]` items, and the lines
    those test items take."""
    code = code_only(Path(path).read_text())
    lines = code.split("\n")
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1

    def close_of(open_at: int) -> int:
        depth = 0
        for j in range(open_at, len(code)):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    return j
        return len(code) - 1

    def line_of(at: int) -> int:
        lo, hi = 0, len(offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if offsets[mid] <= at:
                lo = mid
            else:
                hi = mid - 1
        return lo

    found, skip_until, test_next, test_lines = [], -1, False, 0
    for no, line in enumerate(lines):
        if offsets[no] <= skip_until:
            continue
        stripped = line.strip()
        if stripped.startswith("#[cfg(test)]"):
            test_next = True
            continue
        m = FN.match(line)
        item = m or re.match(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", line)
        if item:
            # The body: the first `{` at or after the signature that is not a `;`-ended declaration.
            start = offsets[no]
            j = start
            while j < len(code) and code[j] not in "{;":
                j += 1
            if j >= len(code) or code[j] == ";":
                test_next = False
                continue
            end = close_of(j)
            if test_next:
                skip_until = end
                test_lines += line_of(end) - no + 2  # the item and its #[cfg(test)] line
            elif m:
                found.append((m.group(1), no + 1, line_of(end) - no + 1))
            test_next = False
        elif stripped and not stripped.startswith("#["):
            test_next = False
    return found, test_lines



def trait_defaults(path: str | Path) -> list[str]:
    """`Trait::method` of each method with a default body in the file's `pub trait` items."""
    code = code_only(Path(path).read_text())
    out = []
    for m in re.finditer(r"pub trait (\w+)[^{]*\{", code):
        i, depth = m.end(), 1
        j = i
        while depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        body = code[i:j - 1]
        k, d = 0, 0
        while k < len(body):
            c = body[k]
            if c == "{":
                d += 1
            elif c == "}":
                d -= 1
            elif d == 0 and (fm := re.match(r"fn (\w+)", body[k:])) and (k == 0 or not body[k - 1].isalnum()):
                q, paren = k, 0
                while not (body[q] in ";{" and paren <= 0):
                    paren += {"(": 1, "<": 1, ")": -1, ">": -1}.get(body[q], 0)
                    q += 1
                if body[q] == "{":
                    out.append(f"{m.group(1)}::{fm.group(1)}")
                k = q
                continue
            k += 1
    return out
