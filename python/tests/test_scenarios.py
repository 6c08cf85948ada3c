"""Every scenario through the Python bridge over a real SQLite file, byte for byte as the native core."""

import pytest

from jupyterhub_quota import QuotaEngine

from support.scenarios import assert_matches_native, files


@pytest.mark.parametrize("path", files(), ids=lambda p: p.name)
def test_scenario_transcript_matches_the_native_core(path, native_transcripts, tmp_path):
    assert_matches_native(path, native_transcripts, lambda values: QuotaEngine(str(tmp_path / "quota.db"), values))
