"""tuner.run: the results folder, rows and derived columns, baselines, resume after an interruption, reports."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import signal
from pathlib import Path

import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState
from scripted_backend import ENVIRONMENT, ScriptedBackend, TimedCompileBackend, scripted_gflops, scripted_outcome

import tuner
from tuner.errors import TunerError
from tuner.experiment.schema import load_experiment
from tuner.optuna_attrs import RECORD_ATTR
from tuner.results import table as results
from tuner.results.metadata import metadata_id
from tuner.search.storage import close_storage, open_storage, own_storage_url
from tuner.search.study import ask_configuration, study_spaces
from tuner.tuning import run as tuning

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"
VALID_PER_PROBLEM = 18


@pytest.fixture(autouse=True)
def no_report(monkeypatch):
    """Reports are another module's work; here the writer is only called, never run."""
    calls: list[Path] = []
    monkeypatch.setattr("tuner.report.write_report", lambda out, quiet, jobs=1: calls.append(out))
    return calls


def sweep(out: Path, backend: ScriptedBackend | None = None, **options) -> tuner.RunResult:
    options = {"strategy": "grid", "trials": 100, "quiet": True, **options}
    return tuner.run(load_experiment(FERMI), backend=backend or ScriptedBackend(), out=out, **options)


@pytest.mark.slow
def test_run_writes_the_results_folder(tmp_path, no_report, capsys):
    result = sweep(tmp_path / "run", summary=True)
    out = tmp_path / "run"
    assert result.out == out
    assert {p.name for p in out.iterdir()} >= {"results.parquet", "results.csv", "metadata.json", "study.log"}
    saved, metadata = results.load(out)
    pd.testing.assert_frame_equal(result.df, saved)
    assert len(pd.read_csv(out / "results.csv")) == len(saved)
    assert metadata == json.loads(json.dumps(result.metadata, default=str))
    assert metadata["experiment"]["name"] == "fermi_like"
    assert metadata["experiment"]["source"] == FERMI.read_text()
    assert metadata["experiment"]["machine_models"] == [
        {"name": "Fermi-like", "peak_gflops": {"float32": 1000, "float64": 500}, "bandwidth_gbs": 150}]
    assert metadata["environments"] == {metadata_id(ENVIRONMENT): ENVIRONMENT}
    run, = metadata["runs"]
    assert run["backend"] == "scripted" and run["strategy"] == "grid" and run["trials"] == 100
    assert run["interrupted"] is False and run["evaluations"] == len(saved)
    assert run["wall_s"] > 0
    assert run["gpu_busy_fraction"] == pytest.approx(run["device_busy_s"] / run["wall_s"], rel=1e-2)
    assert no_report == [out]
    summary = capsys.readouterr().out
    assert "tiled TILE_WIDTH=32" in summary and f"results: {out}" in summary


@pytest.mark.slow
def test_rows_carry_the_schema_and_the_derived_columns(tmp_path):
    df = sweep(tmp_path / "run").df
    assert list(df.columns[:len(results.BASE_COLUMNS)]) == list(results.BASE_COLUMNS)
    assert set(results.MEASURE_COLUMNS) <= set(df.columns)
    kernels = df[df["family"] != "baseline"]
    assert len(kernels) == 3 * VALID_PER_PROBLEM
    assert kernels["config_key"].is_unique
    assert (kernels["metadata_id"] == metadata_id(ENVIRONMENT)).all()
    ok = kernels[kernels["status"] == "ok"]
    assert ok["gflops"].to_numpy() == pytest.approx((ok["flops"] / (ok["time_median_ms"] * 1e6)).to_numpy())
    assert ok["pct_flops_ceiling"].to_numpy() == pytest.approx((ok["gflops"] / 10).to_numpy())
    assert ok["bandwidth_gbs"].to_numpy() == pytest.approx((ok["bytes_model"] / (ok["time_median_ms"] * 1e6))
                                                           .to_numpy())
    assert ok["pct_bandwidth_ceiling"].to_numpy() == pytest.approx(ok["bandwidth_gbs"].to_numpy())
    row = ok[ok["config_key"] == "1000x777x333/tiled/float32/TILE_WIDTH=16"].iloc[0]
    assert row["gflops"] == pytest.approx(1600.0)
    assert (row["block"], row["grid"]) == ("16×16×1", "49×63×1")
    assert (row["spill_bytes"], row["spill_store_bytes"], row["spill_load_bytes"], row["registers"]) == (12, 4, 8, 32)
    assert json.loads(row["samples_ms"]) == list(scripted_outcome(_config(row)).timing.samples_ms)
    assert row["intensity"] == pytest.approx(row["flops"] / row["bytes_model"])
    assert row["device_s"] == pytest.approx(sum(json.loads(row["samples_ms"])) / 1e3)
    failed = kernels[kernels["status"] != "ok"]
    assert set(failed["status"]) == {"invalid", "compile_error", "wrong", "crashed"}
    assert failed["reason"].str.len().gt(0).all() and failed["gflops"].isna().all()


def _config(row):
    problem = tuner.config.Problem(int(row["M"]), int(row["N"]), int(row["K"]))
    params = {c[2:]: int(row[c]) for c in row.index if c.startswith("p_") and pd.notna(row[c])}
    return tuner.config.Config.make(problem, row["family"], row["dtype"], params)


@pytest.mark.slow
def test_cublas_baselines_are_rows_measured_once_per_problem(tmp_path):
    backend = ScriptedBackend()
    result = sweep(tmp_path / "run", backend)
    baselines = result.df[result.df["family"] == "baseline"]
    assert backend.baselines == [("4096x4096x4096", "float32"), ("1024x1024x1024", "float32"),
                                 ("1000x777x333", "float32")]
    assert list(baselines["study"].unique()) == ["baseline"] and list(baselines["strategy"].unique()) == ["baseline"]
    assert (baselines["trial"] == -1).all() and baselines["gflops"].tolist() == pytest.approx([5000.0] * 3)
    assert baselines["config_key"].tolist() == [f"{p}/baseline/float32/" for p, _ in backend.baselines]
    again = ScriptedBackend()
    sweep(tmp_path / "run", again)
    assert again.baselines == [] and again.calls == []


@pytest.mark.slow
def test_best_is_the_fastest_ok_row_per_problem(tmp_path):
    best = sweep(tmp_path / "run").best
    assert best["config_key"].tolist() == [f"{p}/tiled/float32/TILE_WIDTH=32"
                                           for p in ("1000x777x333", "1024x1024x1024", "4096x4096x4096")]


@pytest.mark.slow
def test_the_table_is_rebuilt_from_the_storage(tmp_path):
    first = sweep(tmp_path / "run", trials=8).df
    for name in ("results.parquet", "results.csv", "metadata.json"):
        (tmp_path / "run" / name).unlink()
    backend = ScriptedBackend()
    second = sweep(tmp_path / "run", backend, trials=8).df
    assert backend.calls == []
    pd.testing.assert_frame_equal(first, second)


@pytest.mark.slow
def test_an_interrupted_run_continues_without_measuring_twice_or_losing_anything(tmp_path, capsys):
    out = tmp_path / "run"
    interrupted = ScriptedBackend(interrupt_at=7)
    with pytest.raises(KeyboardInterrupt):
        sweep(out, interrupted)
    saved, metadata = results.load(out)
    assert metadata["runs"][-1]["interrupted"] is True
    measured_first = set(interrupted.calls[:-1])
    assert set(saved.loc[saved["family"] != "baseline", "config_key"]) == measured_first
    message = capsys.readouterr().err
    assert "to continue, run:" in message
    assert f"python -m tuner run {FERMI} --trials 100 --strategy grid --out {out}" in message

    resumed = ScriptedBackend()
    result = sweep(out, resumed)
    assert not measured_first & set(resumed.calls)
    assert interrupted.calls[-1] == resumed.calls[0]  # the abandoned evaluation is retried first
    kernels = result.df[result.df["family"] != "baseline"]
    assert kernels["config_key"].is_unique and len(kernels) == 3 * VALID_PER_PROBLEM
    assert set(saved["config_key"]) <= set(result.df["config_key"])
    assert [r["interrupted"] for r in result.metadata["runs"]] == [True, False]
    assert len(resumed.baselines) == 2  # the first problem's was measured before the interruption


def _leave_running(out):
    """A swept run folder whose first study holds one more trial, asked for valid[10] and left RUNNING."""
    sweep(out, trials=3)
    space = study_spaces(load_experiment(FERMI))[0]
    storage = open_storage(own_storage_url(out))
    study = optuna.load_study(study_name=space.name, storage=storage)
    config = space.valid[10]
    study.enqueue_trial(space.params(config))
    trial = ask_configuration(study, space)
    return space, config, trial, storage


@pytest.mark.slow
def test_a_trial_left_running_by_a_dead_process_is_measured_first(tmp_path):
    out = tmp_path / "run"
    space, left, dead, storage = _leave_running(out)
    close_storage(storage)

    backend = ScriptedBackend()
    result = sweep(out, backend, trials=4)
    assert backend.calls[0] == left.key
    trials = {t.number: t for t in optuna.load_study(study_name=space.name, storage=open_storage(own_storage_url(out)))
              .get_trials()}
    assert trials[dead.number].state == TrialState.COMPLETE
    assert left.key in set(result.df["config_key"])


@pytest.mark.slow
def test_a_measured_trial_left_running_is_kept_not_measured_again(tmp_path):
    out = tmp_path / "run"
    space, measured, trial, storage = _leave_running(out)
    record = results.Record("fermi_like", space.name, "grid", trial.number, measured, scripted_outcome(measured),
                            metadata_id(ENVIRONMENT), 1.0, "2000-01-01T00:00:01+00:00", 0.5)
    trial.set_user_attr(RECORD_ATTR, record.attrs())
    close_storage(storage)

    backend = ScriptedBackend()
    df = sweep(out, backend, trials=4).df
    assert measured.key not in backend.calls
    row = df[df["config_key"] == measured.key].iloc[0]
    assert row["gflops"] == pytest.approx(scripted_gflops(measured)) and row["trial"] == trial.number


@pytest.mark.slow
def test_the_device_measures_the_next_study_while_the_last_configurations_of_a_study_compile(tmp_path,
                                                                                           monkeypatch):
    """The last four configurations of each problem to be handed to the compilers take twelve ticks of the device
    to compile: once a study has asked its last, the next study's compiled ones are measured meanwhile, each
    recorded in its own study, and the progress of a study counts only its own. Only the last study's end
    waits for its compiles."""
    shown: list[tuple[str, int]] = []
    monkeypatch.setattr(tuner.tuning.progress.Progress, "study_started",
                        lambda self, name, budget, timeout_s: shown.append((name, -1)))
    monkeypatch.setattr(tuner.tuning.progress.Progress, "evaluated",
                        lambda self, done, new, best: shown.append((shown[-1][0], done)))
    slow = 12
    backend = TimedCompileBackend(lambda config, n: slow if n > VALID_PER_PROBLEM - 4 else 0)
    df = sweep(tmp_path / "run", backend).df
    spaces = study_spaces(load_experiment(FERMI))
    study_of = {config.key: space.name for space in spaces for config in space.valid}
    order = [key for event, key in backend.log if event == "submit"]
    assert len(order) == len(set(order)) == len(study_of)
    positions = {name: [i for i, key in enumerate(order) if study_of[key] == name] for name in study_of.values()}
    for this, following in zip(spaces, spaces[1:], strict=False):
        assert min(positions[following.name]) < max(positions[this.name])
    kernels = df[df["study"] != results.BASELINE]
    assert list(kernels["config_key"].map(study_of)) == list(kernels["study"])
    assert kernels.groupby("study").size().to_dict() == {s.name: VALID_PER_PROBLEM for s in spaces}
    for name in study_of.values():
        counts = [done for shown_name, done in shown if shown_name == name]
        assert counts == sorted(counts) and counts[-1] == VALID_PER_PROBLEM
    assert backend.idle_ticks <= slow


def test_a_failing_report_is_a_warning_and_the_results_stay(tmp_path, monkeypatch, capsys):
    def broken(out, quiet, jobs=1):
        raise RuntimeError("no figures today")

    monkeypatch.setattr("tuner.report.write_report", broken)
    result = sweep(tmp_path / "run", trials=2)
    assert "warning: the report could not be written (RuntimeError: no figures today)" in capsys.readouterr().err
    pd.testing.assert_frame_equal(results.load(tmp_path / "run")[0], result.df)


@pytest.mark.parametrize(("options", "message"), [
    ({"trials": 0}, "^trials must be an integer ≥ 1, not 0"),
    ({"timeout": -1.0}, "^timeout must be a positive number of seconds"),
    ({"strategy": "anealing"}, "unknown strategy 'anealing'"),
    ({"seed": -3}, "^seed must be an integer ≥ 0"),
    ({"backend": "opencl"}, "unknown backend 'opencl'"),
    ({"backend": "pycuda", "replay": "somewhere"}, "^replay is only used with backend='replay'"),
    ({"storage": "notadb://x"}, "cannot open the Optuna storage 'notadb://x'"),
    ({"timeout": float("inf")}, "^timeout must be a positive number of seconds, not inf"),
    ({"timeout": float("nan")}, "^timeout must be a positive number of seconds, not nan"),
    ({"out": ""}, "^out is empty"),
    ({"out": "a\0b"}, "^out may not hold a NUL character"),
    ({"storage": "sqlite:///:memory:"}, "in-memory SQLite database.*or no storage, for the output folder's own"),
    ({"gpus": "0,0", "backend": "replay"}, "^gpus='0,0' names a GPU twice"),
    ({"replay_pace": -1.0, "backend": "replay"}, "^replay_pace takes a factor ≥ 0 and is only used with "
                                                 "backend='replay'"),
])
def test_bad_options_are_explained(tmp_path, options, message):
    with pytest.raises(TunerError, match=message):
        tuner.run(load_experiment(FERMI), **{"backend": ScriptedBackend(), "out": tmp_path / "run", **options})


@pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None, reason="PyCUDA is installed here")
def test_the_pycuda_backend_without_pycuda_is_explained(tmp_path):
    with pytest.raises(TunerError, match="the pycuda backend"):
        tuner.run(load_experiment(FERMI), backend="pycuda", out=tmp_path / "run")


def test_two_runs_cannot_write_one_folder(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    held = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(TunerError, match="another run is writing to this output folder.*with out$"):
            sweep(out)
    finally:
        os.close(held)
    sweep(out, trials=1)


class TerminatedBackend(ScriptedBackend):
    """Receives SIGTERM (as from ``timeout``) while evaluating its third configuration."""

    def evaluate(self, config):
        if len(self.calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return super().evaluate(config)


def test_sigterm_stops_the_run_cleanly_like_ctrl_c(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        sweep(tmp_path / "run", TerminatedBackend())
    df, metadata = results.load(tmp_path / "run")
    assert metadata["runs"][-1]["interrupted"] is True
    assert len(df[df["family"] != "baseline"]) == 2
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_tuner_run_is_the_tuning_run():
    assert tuner.run is tuning.run
