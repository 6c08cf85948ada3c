"""Import circles in the tree, file by file: exits 1 and names each circle when a file imports
(directly or through others) a file that imports it. Rust crates (`crate::`, `super::` and a
module's own submodules), the Python package (relative imports, `TYPE_CHECKING` ones included)
and the JavaScript sources (relative `import`s). Tests, benches and generated code are left out.
The Python package's subpackages must also import one way: `hub/` uses `host/`, never the reverse.
    python3 scripts/check_imports.py        # from the repository root; stdlib only
ARCHITECTURE.md states the layering this keeps; the README's test command runs it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUST_CRATES = ["core/src", "sql-wire/src", "wasm/src", "host-shim/src", "hub/src", "tests/support/src", "tools/oci-image/src", "tools/componentize/src"]
PYTHON_PACKAGE = "python/src/jupyterhub_quota"
JS_SOURCES = ["js/src", "js/pages"]


def rust_modules(src: Path) -> dict[tuple[str, ...], Path]:
    """Module path -> file, from the crate root's `mod` declarations down."""
    root = src / "lib.rs" if (src / "lib.rs").exists() else src / "main.rs"
    out: dict[tuple[str, ...], Path] = {}

    def walk(path: tuple[str, ...], file: Path) -> None:
        out[path] = file
        text = strip_rust_tests(file.read_text())
        here = file.parent if file.name in ("mod.rs", "lib.rs", "main.rs") else file.parent / file.stem
        for name in re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_0-9]+)\s*;", text, re.M):
            for candidate in (here / f"{name}.rs", here / name / "mod.rs"):
                if candidate.exists():
                    walk(path + (name,), candidate)
                    break

    walk((), root)
    return out


def strip_rust_tests(text: str) -> str:
    """The file without its `#[cfg(test)]` module (tests may import anything)."""
    m = re.search(r"^#\[cfg\(test\)\]\s*\nmod tests\b", text, re.M)
    return text[: m.start()] if m else text


def expand_use(text: str) -> list[str]:
    """Every path a file names: `use a::{b, c::d}` expanded, and paths in code."""
    paths = []
    for m in re.finditer(r"\b((?:crate|super|self)(?:::[A-Za-z_0-9]+)*)::\{([^{}]*)\}", text):
        for part in m.group(2).split(","):
            part = part.strip().split(" as ")[0].strip()
            if part and part != "self":
                paths.append(f"{m.group(1)}::{part}")
            elif part == "self":
                paths.append(m.group(1))
    paths += re.findall(r"\b((?:crate|super)(?:::[A-Za-z_0-9]+)+)", text)
    return paths


def rust_edges(src: Path) -> dict[Path, set[Path]]:
    modules = rust_modules(src)
    edges: dict[Path, set[Path]] = {f: set() for f in modules.values()}
    for path, file in modules.items():
        text = strip_rust_tests(file.read_text())
        own = path if file.name in ("mod.rs", "lib.rs", "main.rs") else path
        parent = path[:-1]
        children = {p[-1] for p in modules if p[:-1] == path and len(p) == len(path) + 1}
        refs = []
        for p in expand_use(text):
            segs = p.split("::")
            if segs[0] == "crate":
                refs.append(tuple(segs[1:]))
            elif segs[0] == "super":
                base = list(parent)
                segs = segs[1:]
                while segs and segs[0] == "super":
                    base = base[:-1]
                    segs = segs[1:]
                refs.append(tuple(base) + tuple(segs))
        # A module's own submodules named bare (`rows::find`).
        for name in children:
            if re.search(rf"\b{name}::", text):
                refs.append(own + (name,))
        for ref in refs:
            for n in range(len(ref), 0, -1):
                target = modules.get(ref[:n])
                if target is not None:
                    if target != file:
                        edges[file].add(target)
                    break
    return edges


def python_edges(pkg: Path) -> dict[Path, set[Path]]:
    """Imports between the package's modules, subpackages included (`from .x`, `from ..sub.x`,
    `from .. import x`, `jupyterhub_quota.sub.x`)."""
    files = {f.relative_to(pkg).with_suffix("").as_posix(): f for f in pkg.rglob("*.py")}
    edges: dict[Path, set[Path]] = {f: set() for f in files.values()}

    def resolve(here: str, dots: int, name: str) -> list[str]:
        base = here.split("/")[:-1]
        base = base[: len(base) - (dots - 1)] if dots > 1 else base
        target = "/".join(base + [p for p in name.split(".") if p])
        # `from .. import x` at the top: the package's own __init__ (a circle through it counts).
        return [target, f"{target}/__init__" if target else "__init__"]

    for key, f in files.items():
        text = f.read_text()
        targets: list[str] = []
        for dots, mod, names in re.findall(r"^\s*from (\.+)([a-z_0-9.]*) import ([a-zA-Z_0-9, ]+)", text, re.M):
            targets += resolve(key, len(dots), mod)
            # `from . import x` / `from ..sub import x`: x may be a module
            targets += [t for n in names.split(",") for t in resolve(key, len(dots), f"{mod}.{n.strip().split(' as ')[0]}")]
        for mod in re.findall(rf"^\s*(?:from|import) {pkg.name}\.([a-z_0-9.]+)", text, re.M):
            targets += ["/".join(mod.split(".")), "/".join(mod.split(".")) + "/__init__"]
        for t in targets:
            if t in files and files[t] != f:
                edges[f].add(files[t])
    return edges


def python_layers(pkg: Path, edges: dict[Path, set[Path]]) -> list[str]:
    """The package's two subpackages import one way: `hub/` (the JupyterHub integration) may use
    `host/` (the WebAssembly host); `host/` never uses `hub/`."""
    host, hub = pkg / "host", pkg / "hub"
    return [
        f"{a.relative_to(ROOT)} imports {b.relative_to(ROOT)}: the WebAssembly host must not use the JupyterHub integration"
        for a, targets in edges.items()
        if host in a.parents
        for b in sorted(targets)
        if hub in b.parents
    ]


def js_edges(dirs: list[Path]) -> dict[Path, set[Path]]:
    files = [f for d in dirs for f in d.rglob("*.js")]
    edges: dict[Path, set[Path]] = {f: set() for f in files}
    for f in files:
        for spec in re.findall(r"""(?:import|export)[^'"]*?from\s*['"](\.[^'"]+)['"]|import\s*\(\s*['"](\.[^'"]+)['"]""", f.read_text()):
            target = (f.parent / (spec[0] or spec[1])).resolve()
            if target in edges and target != f:
                edges[f].add(target)
    return edges


def circles(edges: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: Path) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    graphs = {src: rust_edges(ROOT / src) for src in RUST_CRATES if (ROOT / src).exists()}
    graphs[PYTHON_PACKAGE] = python_edges(ROOT / PYTHON_PACKAGE)
    graphs["js"] = js_edges([(ROOT / d) for d in JS_SOURCES])
    found = 0
    files = 0
    for name, edges in graphs.items():
        files += len(edges)
        for c in circles(edges):
            found += 1
            print(f"circle in {name}: " + " -> ".join(str(p.relative_to(ROOT)) for p in c))
            for a in c:
                for b in sorted(edges[a] & set(c)):
                    print(f"    {a.relative_to(ROOT)} imports {b.relative_to(ROOT)}")
    for problem in python_layers(ROOT / PYTHON_PACKAGE, graphs[PYTHON_PACKAGE]):
        found += 1
        print(problem)
    arrows = sum(len(e) for g in graphs.values() for e in g.values())
    print(f"{files} files, {arrows} imports, {found} circle(s) or wrong-way import(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
