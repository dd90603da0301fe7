"""Runs killed with SIGKILL and started again reach the end an uninterrupted run reaches; several processes
sharing one study never measure a configuration twice. Real processes of the command line, on the replay
backend."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from optuna.trial import TrialState

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"
SGEMM = ROOT / "experiments" / "h100_sgemm.yaml"
SGEMM_RECORDING = ROOT / "experiments" / "data" / "h100_sgemm_h100"
JOURNAL_SET_TRIAL_STATE = 6
"""The journal's operation code of a trial's state (optuna.storages.journal)."""


def command(experiment: Path, out: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "tuner", "run", str(experiment), "--backend", "replay", "--out", str(out),
            "--quiet", "--no-report", *options]


def completed(storage: Path) -> int:
    """Trials of every study told an evaluation, by the SQLite file (``.db``) or journal that holds them (0 while
    it is not there yet)."""
    if not storage.exists():
        return 0
    if storage.suffix == ".db":
        try:
            with sqlite3.connect(f"file:{storage}?mode=ro", uri=True, timeout=5) as connection:
                return connection.execute("SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0]
        except sqlite3.OperationalError:  # the tables are being created
            return 0
    told = 0
    for line in storage.read_bytes().splitlines(keepends=True):
        if line.endswith(b"\n"):  # a line being written is not counted yet
            change = json.loads(line)
            told += change["op_code"] == JOURNAL_SET_TRIAL_STATE and change["state"] == TrialState.COMPLETE.value
    return told


def run_killed_after(args: list[str], storage: Path, evaluations: int) -> None:
    """Start the command and kill it (SIGKILL) once the storage holds ``evaluations`` completed trials."""
    process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while process.poll() is None and completed(storage) < evaluations and time.monotonic() < deadline:
        time.sleep(0.02)
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run ended before it could be killed"


def run_to_end(args: list[str]) -> None:
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def evaluations(out: Path) -> pd.DataFrame:
    df = pd.read_parquet(out / "results.parquet")
    df = df[df["study"] != "baseline"]
    return df.sort_values(["study", "trial"])[["study", "trial", "config_key", "status", "time_median_ms"]] \
        .reset_index(drop=True)


@pytest.mark.parametrize(("experiment", "options", "kills"), [
    (SGEMM, ("--replay", str(SGEMM_RECORDING), "--trials", "6"), (3, 14, 15)),
    (FERMI, ("--strategy", "ils", "--trials", "9"), (2, 10, 20)),
], ids=["h100_sgemm-tpe", "fermi_like-ils"])
def test_a_run_killed_again_and_again_ends_as_an_uninterrupted_one(tmp_path, experiment, options, kills):
    whole = tmp_path / "whole"
    run_to_end(command(experiment, whole, *options))

    resumed = tmp_path / "resumed"
    args = command(experiment, resumed, *options)
    for after in kills:
        run_killed_after(args, resumed / "study.log", after)
    run_to_end(args)

    pd.testing.assert_frame_equal(evaluations(resumed), evaluations(whole))


def test_two_processes_sharing_one_study_never_measure_a_configuration_twice(tmp_path):
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    args = [command(FERMI, tmp_path / name, "--storage", storage, "--trials", "100", "--strategy", sampler)
            for name, sampler in (("first", "ils"), ("second", "random"))]
    processes = [subprocess.Popen(a, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for a in args]
    for process in processes:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
    first, second = evaluations(tmp_path / "first"), evaluations(tmp_path / "second")
    assert first["config_key"].is_unique and second["config_key"].is_unique
    both = pd.concat([first, second]).drop_duplicates(["study", "trial"])
    assert both["config_key"].is_unique and len(both) == 3 * 18  # each folder holds the study as it was at its end
    with sqlite3.connect(tmp_path / "shared.db") as connection:
        workers = connection.execute("SELECT COUNT(DISTINCT value_json) FROM trial_user_attributes "
                                     "WHERE key = 'worker'").fetchone()[0]
        measured = connection.execute("SELECT COUNT(*), COUNT(DISTINCT a.value_json) FROM trials t JOIN "
                                      "trial_user_attributes a ON a.trial_id = t.trial_id WHERE t.state = 'COMPLETE' "
                                      "AND a.key = 'config_key'").fetchone()
    assert workers == 2 and tuple(measured) == (3 * 18, 3 * 18)


def test_a_killed_workers_trials_are_measured_by_another(tmp_path):
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    run_killed_after(command(FERMI, tmp_path / "dead", "--storage", storage, "--trials", "100", "--strategy", "ils"),
                     tmp_path / "shared.db", 5)
    run_to_end(command(FERMI, tmp_path / "alive", "--storage", storage, "--trials", "100", "--strategy", "ils"))
    table = evaluations(tmp_path / "alive")
    assert table["config_key"].is_unique and len(table) == 3 * 18
