"""A run killed with SIGKILL while its C compiler pool is busy: nothing of it outlives it, and its rerun
measures every configuration once, keeping what was measured before the kill."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

from tests.patience import patient
from tests.test_lifetime import ROOT, command_line, processes_with, wait_until_gone
from tuner.search.storage import open_storage, own_storage_url
from tuner.tuning.folder import stored_records

pytestmark = pytest.mark.slow

KILLED_RUN = """\
name: killed_run
problems:
  - {M: 48, N: 40, K: 24}
kernels:
  - template: cpu_packed
    parameters:
      MC: [48, 96]
      NC: [768]
      KC: [128, 256]
      MR: [4, 8]
      NR: [4, 8]
      KU: [1, 4]
      PARALLEL: [0]
      dtype: [float64]
search:
  strategy: random
  trials: 32
  seed: 0
measure:
  warmup: 1
  min_samples: 3
  max_samples: 5
  max_time_s: 0.05
"""


def stored_keys(folder: Path) -> dict[str, str]:
    """Config key -> when it was measured, for every evaluation the folder's storage holds."""
    storage = open_storage(own_storage_url(folder))
    return {r.config.key: str(r.measured_at) for r in stored_records(storage, "killed_run") if r.trial >= 0}


def test_a_killed_run_leaves_nothing_running_and_its_rerun_loses_and_repeats_nothing(cpu_cache, quick_ceilings,
                                                                                      tmp_path):
    experiment, folder, cache = tmp_path / "killed_run.yaml", tmp_path / "run", tmp_path / "cache"
    experiment.write_text(KILLED_RUN)
    cache.mkdir()
    for ceilings in cpu_cache.glob("cpu-*.json"):  # the CPU's ceilings, measured once; no kernel compiled yet
        shutil.copy(ceilings, cache)
    marker = f"lifetime-{uuid.uuid4()}"
    env = {**os.environ, "TUNER_TEST_MARKER": marker, "TUNER_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tuner", "run", str(experiment), "--out", str(folder), "--no-report"]
    run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    busy = False
    while time.monotonic() < deadline and not busy and run.poll() is None:
        compilers = [pid for pid in processes_with(marker) if pid != run.pid
                     and any(name in command_line(pid) for name in (b"cc1", b"-march=native"))]
        busy = bool(compilers) and (folder / "study.log").exists() and bool(stored_keys(folder))
        time.sleep(0.1)
    assert busy, "the run never measured while its compile pool was busy"
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert wait_until_gone(marker) == []
    before = stored_keys(folder)

    rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=patient(300))
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    table = pd.read_parquet(folder / "results.parquet")
    evaluations = table[table["trial"] >= 0]
    assert not evaluations["config_key"].duplicated().any()
    kept = dict(zip(evaluations["config_key"], evaluations["measured_at"].astype(str), strict=True))
    assert {key: kept.get(key) for key in before} == before
