"""An experiment that names a recorded space: validated like the rest of the file, searched on the replay backend."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import run_cli

from tuner.errors import ExperimentError
from tuner.experiment.schema import load_experiment
from tuner.kernels.discovery import get_family
from tuner.results import table as results
from tuner.space.entry_space import entry_space

ROOT = Path(__file__).resolve().parent.parent
A100 = ROOT / "experiments" / "recorded_gemm_a100.yaml"

# A 3 × 2 × 2 space: 12 combinations, 7 recorded (one of them failed to compile, one failed at run time).
TIMES = {(8, 1, "a"): 4.0, (8, 2, "a"): 3.0, (16, 1, "a"): 2.0, (16, 2, "b"): 1.5, (32, 1, "b"): 5.0,
         (32, 2, "a"): "CompilationFailedConfig", (32, 2, "b"): "RuntimeFailedConfig"}


def cache_file(folder: Path) -> Path:
    cache = {}
    for (block, unroll, order), time in TIMES.items():
        record = {"BLOCK": block, "UNROLL": unroll, "ORDER": order, "time": time, "compile_time": 500.0}
        if not isinstance(time, str):
            record.update(times=[time, time], benchmark_time=10 * time)
        cache[f"{block},{unroll},{order}"] = record
    document = {"device_name": "Test GPU", "kernel_name": "toy", "problem_size": [256, 256],
                "tune_params_keys": ["BLOCK", "UNROLL", "ORDER"],
                "tune_params": {"BLOCK": [8, 16, 32], "UNROLL": [1, 2], "ORDER": ["a", "b"]}, "cache": cache}
    path = folder / "data" / "toy_cache.json.gz"
    path.parent.mkdir()
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    return path


def experiment_file(folder: Path, entry: str, problem: str = "{M: 256, N: 256, K: 64}") -> Path:
    path = folder / "recorded.yaml"
    path.write_text(f"name: recorded_toy\nproblems:\n  - {problem}\nkernels:\n  - {entry}\n"
                    f"search: {{strategy: grid, trials: 12}}\n")
    return path


def test_a_recorded_entry_takes_its_parameters_and_valid_set_from_the_file(tmp_path):
    cache_file(tmp_path)
    experiment = load_experiment(experiment_file(tmp_path, "recorded: data/toy_cache.json.gz"))
    spec = experiment.kernels[0]
    assert spec.family == "toy_cache" and spec.dtypes == ("float32",)
    assert spec.values == {"BLOCK": (8, 16, 32), "UNROLL": (1, 2), "ORDER": ("a", "b")}
    space = entry_space(spec)
    assert space.size == 12 and len(space.valid_rows) == len(TIMES)
    assert get_family("toy_cache").recording == tmp_path / "data" / "toy_cache.json.gz"


@pytest.mark.slow
def test_replay_searches_the_recording_with_its_outcomes_and_costs(tmp_path):
    cache_file(tmp_path)
    path = experiment_file(tmp_path, "{recorded: data/toy_cache.json.gz, name: toy}")
    out = tmp_path / "out"
    done = run_cli("run", str(path), "--backend", "replay", "--out", str(out), "--no-report")
    assert done.returncode == 0, done.stderr
    df, metadata = results.load(out)
    by_status = df.groupby("status").size().to_dict()
    assert by_status == {"ok": 5, "compile_error": 1, "crashed": 1}  # the grid sweeps the recorded ones
    ok = df[df["status"] == "ok"]
    fastest = ok.loc[ok["time_median_ms"].idxmin()]
    assert (fastest["p_BLOCK"], fastest["p_UNROLL"], fastest["p_ORDER"]) == (16, 2, "b")
    assert fastest["time_median_ms"] == 1.5 and fastest["samples"] == 2
    assert fastest["device_s"] == pytest.approx((500.0 + 1.5 + 1.5) / 1000)  # compile time and the recorded runs
    assert fastest["gflops"] == pytest.approx(2 * 256 * 256 * 64 / 1.5e-3 / 1e9)
    failed = df[df["status"] == "compile_error"].iloc[0]
    assert failed["reason"] == "recorded as CompilationFailedConfig"
    run = metadata["runs"][0]
    assert run["backend"] == "replay" and run["recording"].endswith("toy_cache.json.gz")
    assert run["device_busy_s"] == pytest.approx(df["device_s"].sum(), abs=1e-3)
    environment = next(iter(metadata["environments"].values()))
    assert environment["device"]["name"] == "Test GPU"


@pytest.mark.parametrize(("entry", "field", "message"), [
    ("recorded: data/missing.json.gz", "kernels[0].recorded", "no such file"),
    ("{recorded: data/toy_cache.json.gz, name: 'a b'}", "kernels[0].name", "must be a Python identifier"),
    ("{recorded: data/toy_cache.json.gz, dtype: float8}", "kernels[0].dtype", "unknown dtype"),
    ("{recorded: data/toy_cache.json.gz, parameters: {}}", "kernels[0].parameters", "unknown key 'parameters'"),
])
def test_a_bad_recorded_entry_names_file_and_field(tmp_path, entry, field, message):
    cache_file(tmp_path)
    with pytest.raises(ExperimentError) as raised:
        load_experiment(experiment_file(tmp_path, entry))
    assert field in str(raised.value) and message in str(raised.value)
    assert str(tmp_path / "recorded.yaml") in str(raised.value)


def test_a_problem_other_than_the_recorded_one_is_refused(tmp_path):
    cache_file(tmp_path)
    with pytest.raises(ExperimentError) as raised:
        load_experiment(experiment_file(tmp_path, "recorded: data/toy_cache.json.gz", "{M: 512, N: 256, K: 64}"))
    assert "problems[0]" in str(raised.value) and "recorded at problem size [256, 256]" in str(raised.value)


@pytest.mark.slow
def test_an_unreadable_recording_exits_2_in_one_paragraph(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "broken.json").write_text('{"results": 3}')
    done = run_cli("run", str(experiment_file(tmp_path, "recorded: data/broken.json")), "--backend", "replay",
                   "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "kernels[0].recorded" in done.stderr and "broken.json" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_recording_is_only_replayed(tmp_path):
    cache_file(tmp_path)
    done = run_cli("run", str(experiment_file(tmp_path, "recorded: data/toy_cache.json.gz")), "--backend",
                   "pycuda", "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "only replayed" in done.stderr


@pytest.mark.slow
def test_the_shipped_a100_experiment_replays(tmp_path):
    out = tmp_path / "a100"
    done = run_cli("run", str(A100), "--backend", "replay", "--trials", "12", "--strategy", "random",
                   "--out", str(out), "--no-report")
    assert done.returncode == 0, done.stderr
    df, _ = results.load(out)
    assert len(df) == 12 and set(df["family"]) == {"gemm_A100"}
    ok = df[df["status"] == "ok"]
    assert (ok["time_median_ms"] > 0).all() and (ok["device_s"] > 0).all()


def test_a_recording_may_not_take_a_family_name(tmp_path):
    cache_file(tmp_path)
    with pytest.raises(ExperimentError) as raised:
        load_experiment(experiment_file(tmp_path, "{recorded: data/toy_cache.json.gz, name: regblock}"))
    assert "kernels[0].name" in str(raised.value) and "is the name of a kernel family" in str(raised.value)
