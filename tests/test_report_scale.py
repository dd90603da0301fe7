"""benchmarks/report_scale.py: the runs it builds and the files it writes (its times are not checked)."""

from __future__ import annotations

import json

import pytest

from benchmarks import report_scale
from tuner.report import REPORT_PARTS


def test_the_runs_have_a_thousand_block_shapes_and_enough_problems():
    for evaluations, problems, trials in ((1000, 2, 500), (3000, 4, 750), (10000, 13, 770)):
        experiment, per_study = report_scale.experiment(evaluations)
        assert (len(experiment.problems), per_study) == (problems, trials)
        assert problems * trials >= evaluations
        (kernel,) = experiment.kernels
        assert kernel.family == "naive"
        assert len(kernel.values["BLOCK_X"]) * len(kernel.values["BLOCK_Y"]) == 1000
        assert experiment.search.strategy == "random"


@pytest.mark.slow
def test_a_small_run_is_built_reported_and_written_as_synthetic(tmp_path):
    stem = report_scale.run([40], tmp_path / "work", tmp_path / "out")
    text = stem.with_suffix(".txt").read_text()
    assert "synthetic, not measurements" in text and "scripted stand-in backend" in text
    record = json.loads(stem.with_suffix(".json").read_text())
    (row,) = record["rows"]
    assert row["evaluations"] == 40 and row["problems"] == 1
    assert list(row["parts"]) == list(REPORT_PARTS)
    assert record["metadata"]["device"]["kind"] == "cpu" and record["metadata"]["device"]["logical_cores"] >= 1
    assert record["metadata"]["versions"]["matplotlib"]
    assert (tmp_path / "work" / "naive_40" / "report.html").is_file()
