"""A family from outside the package, tuned end to end on the GPU: the transpose example."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import tuner
from tests.gpu.support import QUICK
from tuner.results import table as results

pytestmark = pytest.mark.gpu

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "transpose" / "transpose.yaml"


def test_the_transpose_example_is_tuned_from_its_own_folder(tmp_path):
    experiment = replace(tuner.load_experiment(EXAMPLE), measure=QUICK)
    result = tuner.run(experiment, backend="pycuda", strategy="random", trials=6, out=tmp_path / "run", quiet=True)
    df = result.df
    assert len(df) == 6 * 4 and set(df["status"]) <= {"ok", "invalid"}, df[["config_key", "status", "reason"]]
    assert df.loc[df["status"] == "invalid", "device_s"].isna().all(), "only static rules may refuse one"
    df = df[df["status"] == "ok"]
    assert df["study"].nunique() == 4 and (df["verify_error"] == 0).all(), "a transpose copies exactly"
    assert (df["effective_bandwidth_gbs"] > 0).all() and df["gflops"].isna().all()
    for column in ("registers", "shared_bytes", "local_bytes", "spill_store_bytes", "spill_load_bytes", "spill_bytes"):
        assert df[column].notna().all(), column
    written, metadata = results.load(tmp_path / "run")
    assert "transpose" in next(iter(metadata["environments"].values()))["templates"]
    assert (tmp_path / "run" / "report.html").is_file()
