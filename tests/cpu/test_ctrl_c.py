"""Ctrl-C in a terminal reaches every process of its group: a CPU run then stops with one message, the command
that continues, and no traceback from its measuring process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tests.cpu.test_killed_run import KILLED_RUN, stored_keys
from tests.test_lifetime import ROOT, wait_until_gone

pytestmark = pytest.mark.slow

START_S = 300.0
"""How long the run may take to record its first evaluation on a busy machine."""


def test_ctrl_c_stops_a_cpu_run_with_one_message_and_no_traceback(cpu_cache, quick_ceilings, tmp_path):
    experiment, folder, cache = tmp_path / "killed_run.yaml", tmp_path / "run", tmp_path / "cache"
    experiment.write_text(KILLED_RUN)
    cache.mkdir()
    for ceilings in cpu_cache.glob("cpu-*.json"):
        shutil.copy(ceilings, cache)
    marker = f"ctrl-c-{uuid.uuid4()}"
    env = {**os.environ, "TUNER_TEST_MARKER": marker, "TUNER_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tuner", "run", str(experiment), "--out", str(folder), "--no-report"]
    with (tmp_path / "stderr.txt").open("w") as stderr:
        run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
                               start_new_session=True)  # a group of its own, as a terminal's foreground job
        deadline = time.monotonic() + START_S
        while run.poll() is None and time.monotonic() < deadline and not (
                (folder / "study.log").exists() and stored_keys(folder)):
            time.sleep(0.1)
        assert run.poll() is None, "the run ended before it could be interrupted"
        os.killpg(run.pid, signal.SIGINT)
        code = run.wait(timeout=120)
    text = (tmp_path / "stderr.txt").read_text()
    assert code == 130, text[-2000:]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
    said = [line for line in text.splitlines() if line.startswith("interrupted")]
    assert len(said) == 1 and "rows are saved in" in said[0], text[-2000:]
    assert f"python -m tuner run {experiment}" in text
    assert wait_until_gone(marker) == []
