"""Puts the engine into the package when a wheel is built: the repository's
`target/wasm/quota-engine.wasm` (built first with `scripts/build-wasm.sh` if it is not there), and
the pages' assets under `hub/static/`: js/pages, the page side of js/src, and js/gen, the same
component transpiled by jco (`scripts/build-js.sh`, run when js/gen is missing or was made from
another component)."""

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUILT = REPO / "target" / "wasm" / "quota-engine.wasm"
JS = REPO / "js"
PACKAGE = HERE / "src" / "jupyterhub_quota"
IN_SOURCE = PACKAGE / "host" / "quota-engine.wasm"  # an sdist carries it here
STATIC_IN_SOURCE = PACKAGE / "hub" / "static"  # and the assets here


def _script(name: str) -> None:
    script = REPO / "scripts" / name
    if not script.is_file():
        raise SystemExit(f"the engine's build output is missing and there is no repository to run scripts/{name} in")
    subprocess.run(["bash", str(script)], cwd=REPO, check=True)


def _gen_matches(component: Path) -> bool:
    try:
        recorded = json.loads((JS / "gen" / "source.json").read_text())["component_sha256"]
    except (OSError, ValueError, KeyError):
        return False
    return recorded == hashlib.sha256(component.read_bytes()).hexdigest()


class BuildWithComponent(build_py):
    def run(self):
        super().run()
        package = Path(self.build_lib) / "jupyterhub_quota"
        # The component beside the WebAssembly host that loads it, the assets beside the pages.
        wasm = package / "host" / "quota-engine.wasm"
        static = package / "hub" / "static"
        wasm.parent.mkdir(parents=True, exist_ok=True)
        static.parent.mkdir(parents=True, exist_ok=True)
        if IN_SOURCE.is_file():
            shutil.copyfile(IN_SOURCE, wasm)
            if STATIC_IN_SOURCE.is_dir():
                shutil.rmtree(static, ignore_errors=True)
                shutil.copytree(STATIC_IN_SOURCE, static)
            return
        if not BUILT.is_file():
            self.announce("building the engine component (scripts/build-wasm.sh)", level=2)
            _script("build-wasm.sh")
        if not _gen_matches(BUILT):
            self.announce("transpiling the component for the pages (scripts/build-js.sh)", level=2)
            _script("build-js.sh")
        shutil.copyfile(BUILT, wasm)
        shutil.rmtree(static, ignore_errors=True)
        for sub, exts in (("pages", (".html", ".js", ".css")), ("gen", (".js", ".wasm", ".json", ".css"))):
            (static / sub).mkdir(parents=True)
            for f in sorted((JS / sub).iterdir()):
                if f.is_file() and f.suffix in exts:
                    shutil.copyfile(f, static / sub / f.name)
        (static / "src").mkdir()
        for name in ("component.js", "contract.js", "browser.js"):
            shutil.copyfile(JS / "src" / name, static / "src" / name)


setup(cmdclass={"build_py": BuildWithComponent})
