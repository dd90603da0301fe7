"""An exported cache as Kernel Tuner's users meet it: its simulation mode takes the grid-style problem size they
pass (``(N, M)``, x first), and a cache of a sampled search, which it refuses, comes with a warning."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tuner
from tests.test_export import FERMI, ROOT, exported
from tuner import cli
from tuner.recorded import load_recorded

kernel_tuner = pytest.importorskip("kernel_tuner")


def simulate(path: Path, problem_size: tuple[int, ...]) -> list[dict]:
    header = json.loads(path.read_text())
    tune_params = {name: header["tune_params"][name] for name in header["tune_params_keys"]}
    with pytest.warns(UserWarning):  # Kernel Tuner's notes on a source it does not compile in simulation
        found, _ = kernel_tuner.tune_kernel(
            header["kernel_name"], f"__global__ void {header['kernel_name']}() {{}}", problem_size,
            [np.zeros(1, np.float32)], tune_params, cache=str(path), simulation_mode=True, strategy="brute_force",
            quiet=True)
    return found


def test_kernel_tuner_simulates_a_cache_given_the_grid_style_problem_size(tmp_path, capsys):
    files = exported(FERMI, "kernel-tuner-cache", tmp_path, capsys)
    path = next(p for p in files if p.name == "fermi_like_1000x777x333_float32_tiled.json")
    header = json.loads(path.read_text())
    assert header["problem_size"] == [777, 1000] and header["problem"] == {"M": 1000, "N": 777, "K": 333}
    found = simulate(path, (777, 1000))  # N, M: the grid's x covers C's columns, y its rows
    ok = [r for r in found if "__error__" not in r]
    assert len(found) == 3 and min(r["time"] for r in ok) == pytest.approx(load_recorded(path).optimum_ms)
    assert load_recorded(path).problem_size == [1000, 777, 333]  # read back in the problem's own order
    with pytest.raises(ValueError, match="different problem_size"):
        simulate(path, (1000, 777, 333))


def test_a_sampled_run_exports_a_cache_with_a_warning_that_kernel_tuner_refuses_it(tmp_path, capsys):
    sampled, out = tmp_path / "sampled", tmp_path / "export"
    tuner.run(tuner.load_experiment(ROOT / "experiments/fermi_like.yaml"), backend="replay", replay=str(FERMI),
              strategy="random", trials=4, seed=0, out=sampled, quiet=True, report=False)
    assert cli.main(["export", str(sampled), "--format", "kernel-tuner-cache", "--out", str(out)]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]
    path = out / "fermi_like_4096x4096x4096_float32_naive.json"
    (said,) = [line for line in warnings if str(path) in line]
    assert "valid configuration(s) the run never measured" in said and "restrictions" in said
    with pytest.raises(ValueError, match="all configurations must be present in the cache"):
        simulate(path, (4096, 4096))
    assert cli.main(["export", str(sampled), "--format", "t4", "--out", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err  # T4 files are read as results, not simulated
