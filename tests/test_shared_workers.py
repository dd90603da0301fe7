"""Four worker processes on one shared storage, one killed with SIGKILL mid-run: nothing is measured twice,
nothing is lost, and what the killed worker had claimed is measured by another. On a real PostgreSQL server
and on a journal file; the workers are real `python -m tuner run` processes replaying the shipped H100
recording of fermi_like at five times its recorded pace, so that the kill lands while they measure."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState

from tuner.optuna_attrs import RECORD_ATTR
from tuner.search.storage import close_storage, open_storage

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"
RECORDING = ROOT / "experiments" / "data" / "fermi_like_h100"
WORKERS = 4
DEADLINE_S = 120


def start_worker(storage: str, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tuner", "run", str(FERMI), "--backend", "replay", "--replay", str(RECORDING),
         "--replay-pace", "5", "--trials", "100", "--storage", storage, "--out", str(out), "--strategy", "random",
         "--heartbeat", "1", "--quiet", "--no-report"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def trials_by_worker(storage: optuna.storages.BaseStorage, prefix: str) -> list[optuna.trial.FrozenTrial]:
    found = []
    for study in storage.get_all_studies():
        if study.study_name.count("/") == 2 and "dtype" in study.user_attrs:
            found += [t for t in storage.get_all_trials(study._study_id, deepcopy=False)
                      if str(t.user_attrs.get("worker", "")).startswith(prefix)]
    return found


def evaluations(storage: optuna.storages.BaseStorage) -> pd.DataFrame:
    rows = []
    for study in storage.get_all_studies():
        if "dtype" not in study.user_attrs:
            continue
        for trial in storage.get_all_trials(study._study_id, deepcopy=False):
            record = trial.user_attrs.get(RECORD_ATTR)
            rows.append({"study": study.study_name, "number": trial.number, "state": trial.state.name,
                         "key": record["config_key"] if record else None, "claim": trial.user_attrs.get("config_key"),
                         "worker": trial.user_attrs.get("worker"),
                         "dead_worker": trial.user_attrs.get("dead_worker")})
    return pd.DataFrame(rows)


def kill_one_mid_run(storage_url: str, tmp_path: Path) -> tuple[pd.DataFrame, str, list[Path]]:
    """Start the first worker and, once it has claimed trials, the others; SIGKILL the first once it holds a
    claimed, unmeasured trial beside a measured one; let the others finish. The others start after the first has
    claimed, so that on a slow machine they cannot have taken all the work before it starts."""
    outs = [tmp_path / f"host{i}" for i in range(WORKERS)]
    victim = start_worker(storage_url, outs[0])
    workers = [victim]
    prefix = f"{socket.gethostname()}/{victim.pid}/"
    started = time.monotonic()

    def victim_holds(*states: TrialState) -> bool:
        assert victim.poll() is None, f"the worker ended before it could be killed: {victim.stderr.read()}"
        held = {t.state for t in trials_by_worker(store, prefix)}
        return all(state in held for state in states)

    try:
        store = open_storage(storage_url)
        try:
            while not victim_holds(TrialState.RUNNING) and time.monotonic() - started < DEADLINE_S:
                time.sleep(0.2)
            workers += [start_worker(storage_url, out) for out in outs[1:]]
            while not victim_holds(TrialState.RUNNING, TrialState.COMPLETE) and time.monotonic() - started < DEADLINE_S:
                time.sleep(0.2)
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            for worker in workers[1:]:
                _, err = worker.communicate(timeout=DEADLINE_S)
                assert worker.returncode == 0, err
            table = evaluations(store)
        finally:
            close_storage(store)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    return table, prefix, outs


def check_nothing_lost_or_repeated(table: pd.DataFrame, prefix: str, outs: list[Path]) -> None:
    recorded = pd.read_parquet(RECORDING / "results.parquet")
    # the statically rejected configurations are never asked
    valid = recorded[(recorded["study"] != "baseline") & (recorded["status"] != "invalid")]
    expected = valid.groupby("study")["config_key"].apply(set)
    complete = table[table["state"] == "COMPLETE"]
    assert not complete.duplicated(["study", "key"]).any(), "a configuration was measured twice"
    assert complete.groupby("study")["key"].apply(set).to_dict() == expected.to_dict(), "an evaluation is lost"
    killed = table[(table["state"] == "FAIL") & table["dead_worker"].fillna("").str.startswith(prefix)]
    assert not killed.empty, "the killed worker left no claimed trial behind"
    for study, number, key in zip(killed["study"], killed["number"], killed["claim"], strict=True):
        rerun = complete[(complete["study"] == study) & (complete["key"] == key)]
        assert len(rerun) == 1, f"the configuration of trial {number} of {study} was not measured"
        assert not str(rerun["worker"].iloc[0]).startswith(prefix)
    tables = [pd.read_parquet(out / "results.parquet") for out in outs[1:]]
    assert max(len(t[t["study"] != "baseline"]) for t in tables) == sum(len(keys) for keys in expected)


@pytest.mark.parametrize("kind", ["postgresql", "journal"])
def test_a_worker_killed_mid_run_loses_nothing_and_its_claims_are_measured_by_another(kind, tmp_path, request):
    if kind == "postgresql":
        url = request.getfixturevalue("postgres_url")
    else:
        url = f"journal://{tmp_path / 'shared' / 'study.log'}"
        (tmp_path / "shared").mkdir()
    table, prefix, outs = kill_one_mid_run(url, tmp_path)
    check_nothing_lost_or_repeated(table, prefix, outs)
