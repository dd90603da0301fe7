"""Energy on this CPU: measured through RAPL where the machine exposes it, else said to be not available here
(and an energy objective refused before anything is written)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.cpu.conftest import QUICK
from tuner import cli
from tuner.backends.cpu.backend import CpuBackend
from tuner.config import Config, Problem
from tuner.energy.cpu import CpuEnergy
from tuner.measure.measurement import Status

CONFIG = Config.make(Problem(64, 48, 80), "cpu_reorder", "float64", {"PARALLEL": 0})


@pytest.fixture(scope="module")
def measuring(quick_ceilings):
    with CpuBackend(replace(QUICK, energy=True)) as backend:
        yield backend


def test_a_call_is_measured_with_its_energy_where_rapl_is_readable(measuring):
    result = measuring.evaluate(CONFIG)
    assert result.status is Status.OK, result.reason
    described = measuring.metadata()["energy"]
    if CpuEnergy().unavailable is None:
        assert described["available"] is True and measuring.energy_unavailable() is None
        assert result.energy is not None and result.energy.source == "rapl" and result.energy.joules > 0
    else:
        assert described["available"] is False and "not available here" in described["reason"]
        assert "not available here" in measuring.energy_unavailable()
        assert result.energy is None


def test_an_energy_objective_without_rapl_is_refused_before_anything_is_written(quick_ceilings, tmp_path, capsys):
    if CpuEnergy().unavailable is None:
        pytest.skip("this machine exposes RAPL: the refusal cannot happen here")
    experiment = tmp_path / "cpu.yaml"
    experiment.write_text("name: cpu\nproblems: [{M: 64, N: 48, K: 80}]\n"
                          "kernels: [{template: cpu_reorder, parameters: {PARALLEL: [0], dtype: [float64]}}]\n")
    assert cli.main(["run", str(experiment), "--objective", "energy", "--out", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "needs energy per launch, but RAPL energy is not available here" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_an_energy_objective_without_rapl_is_refused_before_the_cpus_ceilings_are_measured(cpu_cache, tmp_path,
                                                                                           monkeypatch, capfd):
    if CpuEnergy().unavailable is None:
        pytest.skip("this machine exposes RAPL: the refusal cannot happen here")
    fresh = tmp_path / "cache"
    fresh.mkdir()
    monkeypatch.setenv("TUNER_CACHE_DIR", str(fresh))  # no ceilings cached: a run would measure them first
    experiment = tmp_path / "cpu.yaml"
    experiment.write_text("name: cpu\nproblems: [{M: 64, N: 48, K: 80}]\n"
                          "kernels: [{template: cpu_reorder, parameters: {PARALLEL: [0], dtype: [float64]}}]\n")
    assert cli.main(["run", str(experiment), "--objective", "energy", "--out", str(tmp_path / "run")]) == 2
    err = capfd.readouterr().err  # the measuring process's words too
    assert "needs energy per launch, but RAPL energy is not available here" in err
    assert "measuring" not in err and "ceilings" not in err
