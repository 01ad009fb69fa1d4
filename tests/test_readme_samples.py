"""The README's command samples are what the commands print (file ids,
timings and counts masked), on a demo table built as the README says."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.readme_samples import README, Sample, masked, run, samples

SAMPLES = samples(README.read_text())


@pytest.fixture(scope="module")
def demo_table(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("readme") / "trips"
    subprocess.run([sys.executable, "-m", "engine_bridge", "demo", "--path", str(path), "--no-spark", "--no-sync"], check=True,
                   capture_output=True, timeout=300)
    return str(path)


def test_the_readme_has_samples() -> None:
    assert len(SAMPLES) >= 9 and all(s.output for s in SAMPLES)


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"line {s.line}" for s in SAMPLES])
def test_a_readme_sample_is_what_the_command_prints(demo_table: str, sample: Sample) -> None:
    assert masked(run(sample.command, demo_table)) == masked(sample.output), \
        f"README line {sample.line}: regenerate with `python -m tests.readme_samples --write`"
