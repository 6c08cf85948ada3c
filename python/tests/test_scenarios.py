"""Every scenario through the Python bridge over a real SQLite file, byte for byte as the native core."""

import json

import pytest

from jupyterhub_quota import QuotaEngine

from scenarios import files, replay


@pytest.mark.parametrize("path", files(), ids=lambda p: p.name)
def test_scenario_transcript_matches_the_native_core(path, native_transcripts, tmp_path):
    scenario = json.loads(path.read_text())
    got = replay(scenario, lambda values: QuotaEngine(str(tmp_path / "quota.db"), values))
    want = native_transcripts[path.name]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        # `sent` may differ in spelling only (Rust's JSON writes 99999999999999999999 as 1e+20).
        # Copies: the native transcripts are shared by every test of the session.
        g, w = dict(g), dict(w)
        g.pop("sent"), w.pop("sent")
        assert g == w, f"step {w['step']} {w['request']}"
