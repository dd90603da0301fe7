"""The catalog is the door to every backend: each opens through it, serves the experiments it is the default of,
and names its device."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.cpu.conftest import QUICK
from tests.gpu.conftest import gpu_missing
from tuner.backends import catalog
from tuner.backends.protocol import Opening
from tuner.errors import TunerError
from tuner.experiment.schema import Experiment, load_experiment

ROOT = Path(__file__).resolve().parents[2]
SERVED = {"pycuda": "fermi_like.yaml", "cpu": "cpu_blocking.yaml", "replay": "recorded_gemm_a100.yaml"}
"""An experiment each backend is the default of."""


def served(name: str) -> Experiment:
    experiment = load_experiment(ROOT / "experiments" / SERVED[name])
    return replace(experiment, measure=QUICK) if name == "cpu" else experiment


def test_each_backend_is_the_default_of_its_experiments_only():
    assert set(SERVED) == set(catalog.NAMES)
    for name in catalog.NAMES:
        experiment = served(name)
        assert catalog.default_for(experiment) == name
        assert [other for other in catalog.NAMES if catalog.backend_class(other).serves(experiment)] == [name]


@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.gpu] if name == "pycuda" else [])
                                  for name in catalog.NAMES])
def test_every_backend_opens_through_the_catalog(name, quick_ceilings):
    if name == "pycuda" and gpu_missing():
        pytest.skip(gpu_missing())
    backend = catalog.open_backend(name, served(name), Opening())
    try:
        assert backend.name == name
    finally:
        backend.close()


def test_the_shipped_recording_opens_by_the_experiments_name():
    backend = catalog.open_backend("replay", load_experiment(ROOT / "experiments" / "fermi_like.yaml"))
    assert type(backend).__name__ == "ReplayBackend" and backend.recording() is not None


def test_an_unknown_backend_or_one_without_gpus_is_refused_by_name():
    experiment = served("cpu")
    with pytest.raises(TunerError, match="^unknown backend 'opencl'; choose one of pycuda, cpu, replay$"):
        catalog.open_backend("opencl", experiment)
    with pytest.raises(TunerError, match="^--gpus measures on GPUs: it is used with --backend pycuda or replay, "
                                         "not 'cpu'$"):
        catalog.open_on_gpus("cpu", experiment, "all")


def test_the_devices_are_the_summaries_of_their_folders():
    assert catalog.device("cpu").__name__ == "tuner.backends.cpu.summary"
    assert catalog.device("pycuda").__name__ == "tuner.backends.pycuda.summary"
    with pytest.raises(TunerError, match="measures on no device"):
        catalog.device("replay")


def test_a_backend_whose_module_cannot_be_imported_is_named_in_one_paragraph(monkeypatch):
    monkeypatch.setitem(catalog.BACKENDS, "broken", ("tuner.backends.no_such_folder.backend:Broken", "missing"))
    with pytest.raises(TunerError, match=r"^the broken backend cannot be loaded \(ModuleNotFoundError: .*\); "
                                         r"reinstall the package"):
        catalog.open_backend("broken", served("cpu"))
