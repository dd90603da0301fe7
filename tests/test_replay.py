"""The replay backend: recorded statuses and numbers come back exactly; what was not recorded is an error."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from scripted_backend import ENVIRONMENT, ScriptedBackend, scripted_outcome

import tuner
from tuner.backends.replay.backend import ReplayBackend, default_recording
from tuner.backends.replay.later_parameters import completed
from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.experiment.schema import load_experiment
from tuner.results import table as results
from tuner.results.metadata import metadata_id
from tuner.search.study import study_spaces

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"
SHIPPED = ROOT / "experiments" / "data" / "fermi_like_h100"
MEASUREMENT_COLUMNS = ["status", "reason", "verify_error", "time_median_ms", "time_mean_ms", "time_min_ms",
                       "time_stdev_ms", "samples", "samples_ms", "throttled_samples", "sm_clock_mhz_before",
                       "sm_clock_mhz_after", "gflops", "pct_flops_ceiling", "compile_time_s", "registers",
                       "spill_bytes", "device_s", "metadata_id"]


@pytest.fixture(autouse=True)
def no_report(monkeypatch):
    monkeypatch.setattr("tuner.report.write_report", lambda out, quiet, jobs=1: [])


def valid_configs() -> list[Config]:
    return [c for space in study_spaces(load_experiment(FERMI)) for c in space.valid]


def test_replay_answers_every_recorded_configuration_exactly(recording):
    replay = ReplayBackend(recording)
    for config in valid_configs():
        assert replay.evaluate(config) == scripted_outcome(config)
    assert replay.metadata() == ENVIRONMENT
    assert replay.environment_id(valid_configs()[0]) == metadata_id(ENVIRONMENT)


def test_replay_reads_a_results_parquet_file_too(recording):
    config = valid_configs()[3]
    assert ReplayBackend(recording / "results.parquet").evaluate(config) == scripted_outcome(config)


def test_replay_adds_the_recorded_device_time(recording):
    df, _ = results.load(recording)
    replay = ReplayBackend(recording)
    configs = valid_configs()[:5]
    for config in configs:
        replay.evaluate(config)
    recorded = df.set_index("config_key").loc[[c.key for c in configs], "device_s"].fillna(0).sum()
    assert replay.busy_seconds == pytest.approx(recorded)


def test_replay_answers_recorded_baselines_and_none_where_there_is_none(recording):
    replay = ReplayBackend(recording)
    baseline = replay.baseline(Problem(1024, 1024, 1024), "float32")
    assert baseline == ScriptedBackend().baseline(Problem(1024, 1024, 1024), "float32")
    assert replay.baseline(Problem(1024, 1024, 1024), "float64") is None


def test_a_configuration_missing_from_the_recording_is_named(recording):
    missing = Config.make(Problem(64, 64, 64), "tiled", "float32", {"TILE_WIDTH": 16})
    with pytest.raises(TunerError) as error:
        ReplayBackend(recording).evaluate(missing)
    assert missing.key in str(error.value) and str(recording) in str(error.value)


def test_a_replayed_run_reproduces_the_recorded_rows(recording, tmp_path):
    result = tuner.run(load_experiment(FERMI), backend="replay", replay=recording, strategy="random", trials=8,
                       out=tmp_path / "replayed", quiet=True)
    recorded = results.load(recording)[0].set_index("config_key")
    replayed = result.df.set_index("config_key")
    assert len(replayed) == 3 * 8 + 3
    never_measured = replayed[~replayed.index.isin(recorded.index)]  # statically invalid: no backend saw them
    assert (never_measured["status"] == "invalid").all()
    assert never_measured["reason"].eq("threads per block ≤ 1024").all()
    replayed = replayed[replayed.index.isin(recorded.index)]
    pd.testing.assert_frame_equal(replayed[MEASUREMENT_COLUMNS], recorded.loc[replayed.index, MEASUREMENT_COLUMNS])
    assert result.metadata["environments"] == {metadata_id(ENVIRONMENT): ENVIRONMENT}
    run = result.metadata["runs"][-1]
    assert run["backend"] == "replay" and run["recording"] == str(recording)
    assert run["gpu_busy_fraction"] is None
    assert run["device_busy_s"] == pytest.approx(replayed["device_s"].fillna(0).sum(), abs=1e-3)


def test_a_recording_that_cannot_be_read_is_explained(tmp_path):
    with pytest.raises(TunerError, match="no such recording"):
        ReplayBackend(tmp_path / "nowhere")
    (tmp_path / "results.parquet").write_text("not parquet")
    with pytest.raises(TunerError, match="cannot be read"):
        ReplayBackend(tmp_path)


def test_a_recording_without_its_environment_is_refused(recording, tmp_path):
    df, _ = results.load(recording)
    df.to_parquet(tmp_path / "results.parquet")
    with pytest.raises(TunerError, match="has no metadata.json"):
        ReplayBackend(tmp_path).metadata()


def test_fermi_like_replays_its_shipped_recording_by_default():
    assert default_recording("fermi_like") == SHIPPED
    assert default_recording("another") is None


def test_a_missing_default_recording_is_named(tmp_path, monkeypatch):
    from tuner.backends.replay import backend as replay

    monkeypatch.setitem(replay.DEFAULT_RECORDINGS, "fermi_like", tmp_path / "fermi_like_h100")
    with pytest.raises(TunerError, match="fermi_like_h100: no such recording"):
        tuner.run(load_experiment(FERMI), backend="replay", out=tmp_path / "run", quiet=True)


def test_the_shipped_recording_replays_end_to_end(tmp_path):
    result = tuner.run(load_experiment(FERMI), backend="replay", strategy="tpe", out=tmp_path / "run", quiet=True)
    recorded, metadata = results.load(SHIPPED)
    recorded = recorded.set_index("config_key")
    replayed = result.df.set_index("config_key")
    replayed = replayed[replayed.index.isin(recorded.index)]  # statically invalid rows never reach a backend
    columns = [c for c in MEASUREMENT_COLUMNS if c in recorded.columns]
    pd.testing.assert_frame_equal(replayed[columns], recorded.loc[replayed.index, columns], check_dtype=False)
    assert set(result.metadata["environments"]) <= set(metadata["environments"])
    assert not result.best.empty
    assert (result.best["status"] == "ok").all()
    assert json.loads(replayed["samples_ms"].dropna().iloc[0])


WGMMA_EXPERIMENT = ROOT / "experiments" / "h100_wgmma_exhaustive.yaml"
WGMMA_RECORDING = ROOT / "experiments" / "data" / "h100_wgmma_exhaustive"


def test_rows_recorded_before_a_parameter_existed_answer_its_default_value():
    """The wgmma recording predates SPLIT_K, REDUCE, STREAM_K and A_BOX: its rows answer the configurations with
    SPLIT_K = 1, REDUCE = serial, STREAM_K = 0 and A_BOX = 0 (the one defaults), asked with or without the later of
    them, and a parameter with several defaults (BN) stands for no value."""
    replay = ReplayBackend(WGMMA_RECORDING)
    recorded = results.load(WGMMA_RECORDING)[0]
    row = recorded[(recorded["status"] == "ok") & (recorded["family"] == "wgmma")].iloc[0]
    old = results.config_of_row(row)
    assert "SPLIT_K" not in old.param_dict
    now = Config.make(old.problem, old.family, old.dtype, {**old.param_dict, "SPLIT_K": 1})
    assert replay.evaluate(now) == replay.evaluate(old) == results.measurement_from_row(row.to_dict())
    assert replay.environment_id(now) == row["metadata_id"]
    assert all(c.param_dict.get("SPLIT_K") == 1 for c in replay.recorded_configs() if c.family == "wgmma")
    with pytest.raises(TunerError, match="has no measurement"):
        replay.evaluate(Config.make(old.problem, old.family, old.dtype, {**old.param_dict, "SPLIT_K": 2}))
    no_bn = {k: v for k, v in old.param_dict.items() if k != "BN"}
    assert completed(Config.make(old.problem, "wgmma", old.dtype, no_bn)).param_dict == {
        **no_bn, "SPLIT_K": 1, "REDUCE": "serial", "STREAM_K": 0, "A_BOX": 0}


def test_a_recording_older_than_a_parameter_replays_its_experiment(tmp_path):
    result = tuner.run(load_experiment(WGMMA_EXPERIMENT), backend="replay", replay=WGMMA_RECORDING,
                       strategy="random", trials=6, out=tmp_path / "replayed", quiet=True)
    recorded = results.load(WGMMA_RECORDING)[0].set_index("config_key")
    tuned = result.df[result.df["family"] == "wgmma"]
    assert len(tuned) >= 6 and (tuned["p_SPLIT_K"] == 1).all()
    for _, row in tuned.iterrows():
        old_key = row["config_key"].replace("A_BOX=0,", "").replace(",REDUCE=serial", "").replace(",SPLIT_K=1", "")
        old_key = old_key.replace(",STREAM_K=0", "")
        assert row["status"] == recorded.loc[old_key, "status"]
        if row["status"] == "ok":
            assert row["time_median_ms"] == recorded.loc[old_key, "time_median_ms"]


def test_the_counters_of_rows_recorded_before_a_parameter_answer_its_default_value():
    stored = pd.read_parquet(WGMMA_RECORDING / "counters.parquet").iloc[0]
    recorded = results.load(WGMMA_RECORDING)[0].set_index("config_key")
    now = completed(results.config_of_row(recorded.loc[stored["config_key"]].to_dict()))
    assert now.param_dict["SPLIT_K"] == 1
    counted = ReplayBackend(WGMMA_RECORDING).counters().count([now])
    assert [row["config_key"] for row in counted.rows] == [now.key] and not counted.reasons
    assert counted.rows[0]["dram_bytes"] == stored["dram_bytes"]
