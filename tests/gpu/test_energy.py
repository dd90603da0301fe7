"""Energy on the GPU: NVML's counter read around energy windows, for a kernel, for cuBLAS and through a run."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

import tuner
from tests.gpu.support import QUICK
from tuner.config import Config, Problem
from tuner.energy.window import MIN_UPDATES
from tuner.experiment.schema import parse_experiment
from tuner.measure.measurement import Status

pytestmark = pytest.mark.gpu

ENERGY = replace(QUICK, energy=True)
PROBLEM = Problem(2048, 2048, 2048)
EXPERIMENT = """\
name: energy_on_the_gpu
problems: [{M: 1024, N: 1024, K: 1024}]
kernels: [{template: tiled, parameters: {TILE_WIDTH: [16, 32]}}]
"""


@pytest.fixture(scope="module")
def measuring() -> Iterator:
    from tuner.backends.pycuda.backend import PycudaBackend

    with PycudaBackend(ENERGY) as backend:
        yield backend


def plausible(energy, limit_w: float) -> None:
    """The energy window's own arithmetic, and a power a board can draw under its limit."""
    assert energy is not None and energy.source == "nvml"
    assert energy.updates >= MIN_UPDATES and 0 < energy.counted_s <= energy.window_s
    assert energy.joules == pytest.approx(energy.power_w * energy.window_s / energy.launches)
    assert 0 < energy.power_w <= 1.5 * limit_w
    assert energy.sm_clock_mhz and energy.sm_clock_mhz > 0
    assert energy.power_limit_w == pytest.approx(limit_w, rel=0.01)


def test_the_environment_names_the_counter_and_reads_the_power_limit(measuring):
    energy = measuring.metadata()["energy"]
    assert energy["available"] is True, energy["reason"]
    assert "nvmlDeviceGetTotalEnergyConsumption" in energy["counter"] and energy["power_limit_w"] > 0
    assert measuring.energy_unavailable() is None


def test_a_kernel_is_measured_with_its_energy_per_launch(measuring):
    config = Config.make(PROBLEM, "tiled", "float32", {"TILE_WIDTH": 32})
    result = measuring.evaluate(config)
    assert result.status is Status.OK, result.reason
    plausible(result.energy, measuring.metadata()["energy"]["power_limit_w"])


def test_cublas_is_measured_with_its_energy_too(measuring):
    result = measuring.baseline(PROBLEM, "float32")
    assert result is not None and result.status is Status.OK, result and result.reason
    plausible(result.energy, measuring.metadata()["energy"]["power_limit_w"])


def test_a_run_for_energy_records_it_in_every_ok_row(tmp_path):
    experiment = replace(parse_experiment(EXPERIMENT, "energy_on_the_gpu.yaml"), measure=QUICK)
    result = tuner.run(experiment, backend="pycuda", objective="energy", strategy="grid", trials=2,
                       out=tmp_path / "run", quiet=True, report=False)
    ok = result.df[result.df["status"] == "ok"]
    assert len(ok) == 3, result.df[["config_key", "status", "reason"]]  # two kernels and cuBLAS
    assert (ok["energy_j"] > 0).all() and (ok["power_w"] > 0).all() and (ok["gflops_per_watt"] > 0).all()
    assert set(ok["energy_source"]) == {"nvml"} and (ok["power_limit_w"] > 0).all()
    environment, = result.metadata["environments"].values()
    assert environment["measure"]["energy"] is True and environment["energy"]["available"] is True
    assert result.metadata["runs"][-1]["objective"] == ["energy"]
