"""What Optuna's tools show of a trial. Its time is its measurement's: a search asks ahead of the device, and
Optuna's clock of a trial (``datetime_start``, what ``duration`` and optuna-dashboard's timeline show) starts when
the device starts on it, not when it was queued. What users sort and filter by (outcome, time, performance, load)
are scalar attributes, and the nested record holds no empty entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest

import tuner
from tuner.results import table as results
from tuner.search.storage import close_storage, open_storage, own_storage_url

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> tuple[Path, tuner.RunResult]:
    out = tmp_path_factory.mktemp("trials") / "fermi"
    result = tuner.run(ROOT / "experiments" / "fermi_like.yaml", backend="replay", strategy="random", trials=8,
                       out=out, quiet=True, report=False)
    return out, result


def test_a_trial_starts_when_the_device_starts_on_it(replayed):
    out, _ = replayed
    storage = open_storage(own_storage_url(out))
    try:
        for summary in optuna.get_all_study_summaries(storage):
            trials = sorted(optuna.load_study(study_name=summary.study_name, storage=storage).trials,
                            key=lambda t: t.number)
            assert len(trials) == 8
            # The device measures one trial at a time, in the order asked, and each result is told while the
            # device measures the next: so a trial is told before the one after the next starts.
            for earlier, later in zip(trials, trials[2:], strict=False):
                assert earlier.datetime_complete <= later.datetime_start, (earlier.number, later.number)
    finally:
        close_storage(storage)


def _nones(value: Any) -> int:
    if isinstance(value, dict):
        return sum(1 for item in value.values() if item is None) + sum(_nones(item) for item in value.values())
    return sum(_nones(item) for item in value) if isinstance(value, list) else 0


def test_a_trial_shows_its_outcome_time_and_performance_as_columns(replayed):
    out, result = replayed
    storage = open_storage(own_storage_url(out))
    try:
        for summary in optuna.get_all_study_summaries(storage):
            study = optuna.load_study(study_name=summary.study_name, storage=storage)
            frame = study.trials_dataframe().set_index("number")
            rows = result.df[result.df["study"] == summary.study_name].set_index("trial")
            assert (frame["user_attrs_status"] == rows["status"].reindex(frame.index)).all()
            ok = rows[rows["status"] == "ok"]
            assert frame.loc[ok.index, "user_attrs_time_ms"].tolist() == pytest.approx(ok["time_median_ms"].tolist())
            assert frame.loc[ok.index, "user_attrs_performance"].tolist() == pytest.approx(
                results.performance(ok).tolist())
            assert all(_nones(trial.user_attrs["record"]) == 0 for trial in study.trials)
    finally:
        close_storage(storage)
