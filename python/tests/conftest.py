import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def native_transcripts():
    """The native core's transcripts of every scenario (Rust, `scenario-transcripts`)."""
    import json

    out = subprocess.run(
        ["cargo", "run", "-q", "--locked", "-p", "quota-scenarios", "--bin", "scenario-transcripts"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)
