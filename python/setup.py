"""Puts the engine component into the package when a wheel is built: the repository's
`target/wasm/quota-engine.wasm`, built first with `scripts/build-wasm.sh` if it is not there."""

import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUILT = REPO / "target" / "wasm" / "quota-engine.wasm"
IN_SOURCE = HERE / "src" / "jupyterhub_quota" / "quota-engine.wasm"  # an sdist carries it here


class BuildWithComponent(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "jupyterhub_quota" / "quota-engine.wasm"
        if IN_SOURCE.is_file():
            source = IN_SOURCE
        else:
            if not BUILT.is_file():
                script = REPO / "scripts" / "build-wasm.sh"
                if not script.is_file():
                    raise SystemExit("quota-engine.wasm is missing and there is no repository to build it from")
                self.announce("building the engine component (scripts/build-wasm.sh)", level=2)
                subprocess.run(["bash", str(script)], cwd=REPO, check=True)
            source = BUILT
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


setup(cmdclass={"build_py": BuildWithComponent})
