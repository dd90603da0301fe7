"""The search space and template rendering."""

import pandas as pd
import pytest
from space_listing import experiment_space, kernel_space, valid_configs

from tuner.config import Config, Problem
from tuner.experiment.schema import load_experiment
from tuner.kernels.discovery import families, get_family, template_hash
from tuner.kernels.model import cost
from tuner.kernels.render import launch, render
from tuner.measure.measurement import Measurement, Status
from tuner.report.groups import key_parameters
from tuner.results import table as results
from tuner.results.record import Record
from tuner.space.entry_space import KernelSpec, count_valid, violations

ODD = Problem(1000, 777, 333)


def test_families_are_registered():
    assert {"naive", "tiled"} <= set(families())


def test_thread_limit_rejects_large_blocks():
    naive = get_family("naive")
    assert violations(naive, {"BLOCK_X": 64, "BLOCK_Y": 32}, "float32") == ["threads per block ≤ 1024"]
    assert violations(naive, {"BLOCK_X": 32, "BLOCK_Y": 32}, "float32") == []


def test_space_counts_before_and_after_constraints():
    spec = KernelSpec("naive", {"BLOCK_X": (16, 64), "BLOCK_Y": (16, 32)}, ("float32", "float64"))
    total, valid, reasons = count_valid(spec)
    assert (total, valid) == (8, 6)
    assert reasons == {"threads per block ≤ 1024": 2}
    space = kernel_space(spec, ODD)
    assert (space.size_before, space.size_after) == (8, 6)
    assert all(config.problem == ODD for config in space.valid)


def test_fermi_like_space(root):
    experiment = load_experiment(root / "experiments/fermi_like.yaml")
    spaces = experiment_space(experiment)
    assert len(spaces) == len(experiment.problems) * len(experiment.kernels)
    assert {s.problem.label for s in spaces} >= {"4096x4096x4096", "1000x777x333"}
    assert any(p.M % 32 for p in experiment.problems)
    tiled = [s for s in spaces if s.family == "tiled"][0]
    assert sorted(c["TILE_WIDTH"] for c in tiled.valid) == [8, 16, 32]
    naive = [s for s in spaces if s.family == "naive"][0]
    assert naive.size_before > naive.size_after  # 64×32 threads is rejected
    configs = valid_configs(experiment)
    assert len(configs) == len(set(configs)) == sum(s.size_after for s in spaces)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_rendering_is_deterministic_and_labelled(dtype):
    config = Config.make(ODD, "tiled", dtype, {"TILE_WIDTH": 16})
    source = render(config)
    assert source == render(config)
    first_lines = "\n".join(source.splitlines()[:2])
    assert "family 'tiled'" in first_lines and f"dtype={dtype}" in first_lines and "TILE_WIDTH=16" in first_lines
    assert template_hash("tiled") in first_lines
    assert {"float32": "typedef float real_t", "float64": "typedef double real_t",
            "int32": "typedef int real_t"}[dtype] in source


def test_launch_geometry_covers_the_matrix():
    geometry = launch(Config.make(ODD, "naive", "float32", {"BLOCK_X": 32, "BLOCK_Y": 8}))
    assert geometry.block == (32, 8, 1)
    assert geometry.grid == (-(-777 // 32), -(-1000 // 8), 1)
    tiled = launch(Config.make(ODD, "tiled", "float32", {"TILE_WIDTH": 16}))
    assert tiled.block == (16, 16, 1) and tiled.grid == (49, 63, 1)
    assert tiled.dynamic_shared_bytes == 0


def test_config_key_and_row():
    config = Config.make(ODD, "tiled", "float32", {"TILE_WIDTH": 16})
    assert config.key == "1000x777x333/tiled/float32/TILE_WIDTH=16"
    row = config.as_row()
    assert row["p_TILE_WIDTH"] == 16 and row["M"] == 1000 and row["family"] == "tiled"


@pytest.mark.parametrize(("family", "params", "rule"), [
    ("tiled", {"TILE_WIDTH": 0}, "TILE_WIDTH ≥ 1"),
    ("naive", {"BLOCK_X": 0, "BLOCK_Y": 8}, "BLOCK_X and BLOCK_Y ≥ 1"),
    ("naive", {"BLOCK_X": 32, "BLOCK_Y": 0}, "BLOCK_X and BLOCK_Y ≥ 1"),
])
def test_a_size_of_zero_breaks_only_the_precondition_and_no_formula_sees_it(family, params, rule):
    assert violations(get_family(family), params, "float32") == [rule]
    config = Config.make(ODD, family, "float32", params)
    with pytest.raises(ValueError, match=rule):
        launch(config)
    with pytest.raises(ValueError, match=rule):
        cost(config)


def test_a_rejected_size_of_zero_is_a_row_without_the_analytical_columns():
    config = Config.make(ODD, "tiled", "float32", {"TILE_WIDTH": 0})
    record = Record("t", "t/study", "random", 0, config, Measurement(Status.INVALID, reason="TILE_WIDTH ≥ 1"),
                    "env", 0.0, "2000-01-01T00:00:00+00:00")
    row = results.row(record, results.analytics_of(record.config))
    assert row["status"] == "invalid" and row["flops"] == 2 * ODD.M * ODD.N * ODD.K
    assert (row["block"], row["grid"], row["bytes_model"], row["intensity"]) == (None, None, None, None)


def test_the_report_classes_leave_out_values_no_formula_describes():
    rows = pd.DataFrame({"params": [{"TILE_WIDTH": 0}, {"TILE_WIDTH": 16}, {"TILE_WIDTH": 32}],
                         "M": [64] * 3, "N": [64] * 3, "K": [64] * 3, "dtype": ["float32"] * 3})
    assert key_parameters("tiled", rows) == ("TILE_WIDTH",)
