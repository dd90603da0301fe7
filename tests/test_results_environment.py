"""The run environment as a dataclass, and a results row made from the analytics its caller hands it."""

from __future__ import annotations

import pytest

from tuner.backends.pycuda.environment import gpu_environment as environment
from tuner.config import Config, Problem
from tuner.kernels import discovery
from tuner.measure.measurement import Measurement, Status, Timing
from tuner.results import analytics, record
from tuner.results.analytics import Analytics, analytics_of
from tuner.results.environment import Environment, baseline_library, ceilings_under_load
from tuner.results.metadata import metadata_id
from tuner.results.record import Record, baseline_config, row
from tuner.settings import CompileSettings, MeasureSettings

TILED = Config.make(Problem(1024, 1024, 1024), "tiled", "float32", {"TILE_WIDTH": 16})


def test_a_built_environment_reads_back_as_the_same_mapping():
    built = environment("pycuda", None, MeasureSettings(), CompileSettings())
    again = Environment.from_dict(built).as_dict()
    assert again == built and metadata_id(again) == metadata_id(built)


def test_a_damaged_environment_reads_as_empty_fields():
    damaged = Environment.from_dict({"backend": 3, "device": "H100", "peaks": [1], "versions": "blas",
                                     "ceilings": {"load": "yes"}, "template_dirs": "x"})
    assert (damaged.backend, damaged.device, damaged.measured_peaks, damaged.template_dirs) == (None, {}, {}, [])
    assert not damaged.on_cpu and damaged.multiprocessors is None and not damaged.ceilings_under_load
    assert Environment.from_dict(None) == Environment.from_dict({})


def test_what_the_metadata_says_of_its_environments():
    cpu = {"environments": {"a": {"backend": "cpu", "ceilings": {"load": {"under_load": True}}}, "b": "broken"}}
    assert baseline_library(cpu) == "BLAS" and baseline_library({"environments": {"a": {}}}) == "cuBLAS"
    assert ceilings_under_load(cpu, "a") and not ceilings_under_load(cpu, "b") and not ceilings_under_load(None, "a")


def test_the_analytics_of_a_kernel_and_of_the_baseline():
    tiled = analytics_of(TILED, multiprocessors=132)
    assert tiled.cost is not None and tiled.flops == 2 * 1024**3
    assert (tiled.block, tiled.grid) == ("16×16×1", "64×64×1")
    baseline = analytics_of(baseline_config(Problem(1024, 1024, 1024), "float32"))
    assert baseline.cost is not None and baseline.cost.global_bytes == baseline.cost.compulsory_bytes
    assert (baseline.block, baseline.grid) == (None, None)


def test_a_row_takes_its_analytics_from_its_caller(monkeypatch):
    given = analytics_of(TILED)
    timing = Timing(2.0, 2.0, 2.0, 0.0, (2.0,))
    evaluation = Record("e", "s", "grid", 0, TILED, Measurement(Status.OK, timing=timing), "m", 0.0, "t")

    def asked(*args, **kwargs):
        raise AssertionError("a row asked the families")

    for module in (discovery, analytics, record):
        for name in ("get_family", "families", "cost", "launch"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, asked)
    made = row(evaluation, given, {"peaks": {"measured": {"float32_gflops": 2000.0}}})
    assert (made["block"], made["grid"], made["flops"]) == (given.block, given.grid, given.flops)
    assert made["gflops"] == pytest.approx(given.flops / 2e-3 / 1e9) == made["performance"]
    assert made["pct_flops_ceiling"] == pytest.approx(100 * made["gflops"] / 2000.0)
    bare = row(evaluation, Analytics(flops=None, cost=None))
    assert bare["gflops"] is None and bare["performance"] is None and bare["flops"] is None
