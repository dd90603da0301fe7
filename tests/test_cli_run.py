"""``python -m tuner run``: the files it writes, the same table as the API, its exit codes and messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from scripted_backend import ScriptedBackend

import tuner
from tuner import cli
from tuner.experiment.schema import load_experiment
from tuner.results import table as results
from tuner.tuning import run as tuning

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"
TIME_COLUMNS = ["wall_offset_s", "measured_at"]


def tuner_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
def test_cli_replay_run_writes_the_folder_and_matches_the_api(recording, tmp_path, monkeypatch):
    out = tmp_path / "cli"
    done = tuner_cli("run", "experiments/fermi_like.yaml", "--backend", "replay", "--replay", str(recording),
                     "--out", str(out))
    assert done.returncode == 0, done.stderr
    for name in ("results.parquet", "results.csv", "metadata.json"):
        assert (out / name).is_file()
    assert f"results: {out}" in done.stdout
    assert "fermi_like/4096x4096x4096/float32" in done.stderr  # progress
    written, metadata = results.load(out)
    assert metadata["runs"][0]["backend"] == "replay" and metadata["runs"][0]["strategy"] == "tpe"

    api = tuner.run(load_experiment(FERMI), backend="replay", replay=recording, out=tmp_path / "api", quiet=True,
                    report=False)
    pd.testing.assert_frame_equal(api.df, results.load(tmp_path / "api")[0])
    pd.testing.assert_frame_equal(api.df.drop(columns=TIME_COLUMNS), written.drop(columns=TIME_COLUMNS))


def test_quiet_silences_the_progress_not_the_summary(recording, tmp_path, monkeypatch, capsys):
    code = cli.main(["run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--out",
                     str(tmp_path / "cli"), "--trials", "2", "--quiet", "--no-report"])
    assert code == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "GFLOP/s" in captured.out and f"results: {tmp_path / 'cli'}" in captured.out


@pytest.mark.slow
def test_a_broken_storage_url_exits_2_naming_it(recording, tmp_path):
    done = tuner_cli("run", "experiments/fermi_like.yaml", "--backend", "replay", "--replay", str(recording),
                     "--storage", "nosuchdb://here", "--out", str(tmp_path / "cli"))
    assert done.returncode == 2
    assert done.stderr.startswith("error: cannot open the Optuna storage 'nosuchdb://here'")
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_replay_without_a_recording_exits_2(tmp_path):
    experiment = tmp_path / "other.yaml"
    experiment.write_text(FERMI.read_text().replace("name: fermi_like", "name: other"))
    done = tuner_cli("run", str(experiment), "--backend", "replay", "--out", str(tmp_path / "cli"))
    assert done.returncode == 2
    assert "--backend replay needs --replay PATH" in done.stderr


def test_ctrl_c_saves_and_exits_130_with_the_command_that_continues(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tuning, "open_backends", lambda *args, **options: [ScriptedBackend(interrupt_at=4)])
    out = tmp_path / "cli"
    code = cli.main(["run", str(FERMI), "--strategy", "grid", "--out", str(out), "--quiet", "--no-report"])
    assert code == 130
    err = capsys.readouterr().err
    assert f"python -m tuner run {FERMI} --backend pycuda --strategy grid --out {out}" in err
    df, metadata = results.load(out)
    assert metadata["runs"][-1]["interrupted"] is True
    assert len(df[df["family"] != "baseline"]) == 3


def test_the_strategy_options_former_name_is_refused_naming_it(capsys):
    parser = cli.build_parser()
    assert parser.parse_args(["run", str(FERMI), "--strategy", "grid"]).strategy == "grid"
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["run", str(FERMI), "--sampler", "grid"])
    assert exited.value.code == 2 and "--sampler is called --strategy now" in capsys.readouterr().err
