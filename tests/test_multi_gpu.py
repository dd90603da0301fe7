"""--gpus on the replay backend (indices stand for GPUs, each answering from the recording): every GPU measures,
no configuration twice; the report's best table is per GPU model; benchmarks/multi_gpu.py's comparison."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import tuner
from benchmarks import multi_gpu
from tuner.backends.replay.backend import ReplayBackend
from tuner.errors import TunerError
from tuner.report import tables
from tuner.report.run_folder import load_run
from tuner.results import table as results

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"
RECORDING = ROOT / "experiments" / "data" / "fermi_like_h100"


@pytest.fixture
def measured_by(monkeypatch) -> Counter:
    """How many evaluations each replay backend (by object) answered."""
    counts: Counter = Counter()
    evaluate = ReplayBackend.evaluate

    def counted(self, config):
        counts[id(self)] += 1
        return evaluate(self, config)

    monkeypatch.setattr(ReplayBackend, "evaluate", counted)
    return counts


@pytest.mark.slow
def test_two_replayed_gpus_share_the_studies_and_measure_nothing_twice(tmp_path, measured_by):
    result = tuner.run(FERMI, backend="replay", gpus="0,1", replay_pace=0.2, trials=100, strategy="random",
                       out=tmp_path / "run", quiet=True, report=False)
    kernels = result.df[result.df["study"] != "baseline"]
    recorded = pd.read_parquet(RECORDING / "results.parquet")
    valid = recorded[(recorded["study"] != "baseline") & (recorded["status"] != "invalid")]
    assert not kernels.duplicated(["study", "config_key"]).any()
    assert set(kernels["config_key"]) == set(valid["config_key"])
    assert len(measured_by) == 2 and min(measured_by.values()) > 0
    assert set(kernels["gpu_name"]) == {"NVIDIA H100 80GB HBM3"}  # the recording's GPU
    assert result.metadata["runs"][-1]["gpus"] == 2
    assert result.metadata["runs"][-1]["evaluations"] == len(result.df)


def test_a_backend_object_cannot_be_split_over_gpus(tmp_path):
    with pytest.raises(TunerError, match="^gpus needs a backend by name"):
        tuner.run(FERMI, backend=ReplayBackend(RECORDING), gpus="0,1", out=tmp_path / "run", quiet=True)
    assert not (tmp_path / "run").exists()


def test_the_best_table_is_per_gpu_model_where_the_rows_come_from_several(tmp_path):
    out = tmp_path / "run"
    tuner.run(FERMI, backend="replay", strategy="grid", trials=100, out=out, quiet=True, report=False)
    df, metadata = results.load(out)
    half = df.index % 2 == 1
    df.loc[half, "gpu_name"] = "NVIDIA H200"
    results.save(df, metadata, out)
    table = tables.best_per_problem(load_run(out))
    assert table.columns[:3] == ["problem", "dtype", "GPU"]
    assert Counter(row[2] for row in table.rows) == {"NVIDIA H100 80GB HBM3": 3, "NVIDIA H200": 3}


@pytest.mark.slow
def test_the_benchmark_compares_several_gpus_with_one(tmp_path, capsys):
    assert multi_gpu.main([str(FERMI), "--backend", "replay", "--replay", str(RECORDING), "--gpus", "0,1",
                           "--trials", "6", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "multi_gpu_replay.json").read_text())
    assert record["several"]["evaluations"] == record["one"]["evaluations"] > 0
    assert record["ratio"] is not None and record["ratio"] > 0
    assert record["every_gpu_measured_and_verified"] is True
    assert [g["gpu_name"] for g in record["per_gpu"]] == ["NVIDIA H100 80GB HBM3"]
    assert "ratio (several / one)" in (tmp_path / "multi_gpu_replay.txt").read_text()
