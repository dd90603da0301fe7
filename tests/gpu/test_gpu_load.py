"""Other work on the GPU during a measurement: NVML names it, the measurement is flagged under load, and ceilings
measured beside it are not cached. A second process (started and ended here) launches a spinning kernel back to
back on the same GPU while the backend measures; without it the same measurements are not under load."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT
from tests.gpu.support import float32_config
from tuner.measure.measurement import Status

pytestmark = pytest.mark.gpu

SPIN_SECONDS = 240
SPINNER = """
import sys, time
import numpy as np
import pycuda.driver as cuda
from tuner.backends.pycuda.modules import compiled_function
from tuner.backends.pycuda.device import describe, require_gpu
from tuner.backends.pycuda.timing import _HOLD_SOURCE

require_gpu()
hold = compiled_function(_HOLD_SOURCE, describe()["arch"], "hold")
hold.prepare("Q")
print("spinning", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    hold.prepared_call((1, 1, 1), (1, 1, 1), np.uint64(20_000_000))
    cuda.Context.synchronize()
"""


@pytest.fixture
def nvml() -> None:
    pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed, so other processes on the GPU are not seen")


@pytest.fixture
def spinner(nvml) -> Iterator[subprocess.Popen]:
    process = subprocess.Popen([sys.executable, "-c", SPINNER, str(SPIN_SECONDS)], cwd=ROOT, stdout=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "spinning"
        time.sleep(1.0)  # NVML samples each process's utilisation every fraction of a second
        yield process
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_an_evaluation_alone_on_the_gpu_is_not_under_load(backend, nvml):
    result = backend.evaluate(float32_config())
    assert result.status is Status.OK, result.reason
    assert result.load is not None
    assert result.load.under_load is False, result.load
    assert result.load.other_gpu_processes == 0, result.load


def test_an_evaluation_beside_another_process_is_under_load(backend, spinner):
    result = backend.evaluate(float32_config())
    assert result.status is Status.OK, result.reason
    assert result.load is not None and result.load.under_load is True, result.load
    assert result.load.other_gpu_processes >= 1, result.load
    baseline = backend.baseline(float32_config().problem, "float32")
    assert baseline is not None and baseline.load is not None and baseline.load.under_load is True, baseline


def _device_command(cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuner", "device", "--remeasure"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "TUNER_CACHE_DIR": str(cache)})


def test_ceilings_measured_beside_another_process_are_not_cached(tmp_path, spinner):
    done = _device_command(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "the GPU's ceilings were measured while" in done.stderr and "not cached" in done.stderr
    assert not list(tmp_path.glob("device-*.json"))


def test_ceilings_measured_without_work_beside_them_are_cached_with_their_load(tmp_path, nvml):
    import json

    done = _device_command(tmp_path)
    assert done.returncode == 0, done.stderr
    (cached,) = tmp_path.glob("device-*.json")
    load = json.loads(cached.read_text())["ceilings"]["load"]
    # The test session's own GPU measuring process may hold an idle context on the device meanwhile: seen, but no load.
    assert load["under_load"] is False, load


def test_a_run_beside_another_process_is_flagged(tmp_path, spinner):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "tuner", "run", str(ROOT / "experiments" / "fermi_like.yaml"),
                           "--trials", "3", "--strategy", "grid", "--no-report", "--quiet", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "TUNER_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert "* measured while other processes used the GPU" in done.stdout
    table = pd.read_parquet(out / "results.parquet")
    ok = table[table["status"] == "ok"]
    assert ok["under_load"].fillna(False).all(), ok[["config_key", "under_load", "other_gpu_processes"]]
