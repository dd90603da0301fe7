"""``python -m tuner run experiments/cpu_blocking.yaml``: the CPU backend by default for C families, measured for
real, recorded, reported."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tuner import results


def test_the_cpu_experiment_runs_end_to_end(quick_ceilings, tmp_path):
    out = tmp_path / "run"
    done = run_cli("run", "experiments/cpu_blocking.yaml", "--trials", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    df, metadata = results.load(out)
    tuned = df[df["family"] != results.BASELINE_FAMILY]
    assert set(tuned["problem"]) == {"1024x1024x1024", "500x377x333"}
    assert set(tuned["status"]) == {"ok"} and tuned["gflops"].gt(0).all()
    assert tuned["block"].isna().all() and tuned["code_bytes"].gt(0).all()
    baselines = df[df["family"] == results.BASELINE_FAMILY]
    assert len(baselines) == 2 and set(baselines["status"]) == {"ok"}
    assert baselines["reason"].str.contains("numpy").all()
    environment = next(iter(metadata["environments"].values()))
    assert environment["backend"] == "cpu" and metadata["runs"][0]["backend"] == "cpu"
    assert environment["peaks"]["measured"]["bandwidth_gbs"] > 0
    assert tuned["pct_flops_ceiling"].notna().all()
    assert (out / "report.html").is_file()
    assert json.loads((out / "metadata.json").read_text())["experiment"]["name"] == "cpu_blocking"
