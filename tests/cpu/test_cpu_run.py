"""``python -m tuner run experiments/cpu_blocking.yaml``: the CPU backend by default for C families, measured for
real, recorded, reported."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tuner.results import table as results


@pytest.mark.slow
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


def test_space_compile_reports_the_c_compiler_for_c_families(cpu_cache, tmp_path):
    experiment = tmp_path / "c_space.yaml"
    experiment.write_text("name: c_space\nproblems:\n  - {M: 64, N: 48, K: 40}\nkernels:\n"
                          "  - template: cpu_reorder\n    parameters: {PARALLEL: [0, 1], dtype: [float32]}\n")
    done = run_cli("space", str(experiment), "--compile", "--quiet")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.strip().startswith("cpu_reorder  float32")]
    assert [row[2] for row in rows] == ["PARALLEL=0", "PARALLEL=1"]
    assert all(int(row[3]) > 0 and row[5] == "ok" for row in rows)  # code bytes, status
    assert "C compiler's report" in done.stdout and "2 kernels: 2 compiled, 0 failed" in done.stdout
