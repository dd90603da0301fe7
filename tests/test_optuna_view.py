"""Optuna's own tools show the real study: parameter values (not positions), each trial's own family's parameters,
the objective named with its unit, the studies named as the README names them and no others; the strategies
meanwhile search the index view. A folder written by an earlier version is refused, naming what changed. A sampler
object
works for every study; callbacks of Optuna's kind; a RunResult shows itself briefly."""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
from scripted_backend import ScriptedBackend

import tuner
from tests.patience import patient
from tuner import cli
from tuner.errors import TunerError
from tuner.results import table as results
from tuner.search.opening import earlier_format
from tuner.search.storage import close_storage, open_storage, own_storage_url

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"
STUDIES = ["fermi_like/4096x4096x4096/float32", "fermi_like/1024x1024x1024/float32",
           "fermi_like/1000x777x333/float32"]
"""The studies of fermi_like, as the README names them: <experiment>/<M>x<N>x<K>/<dtype>."""
EARLIER = ROOT / "tests" / "data" / "earlier_version_run"
"""A run folder of fermi_like (3 random configurations per study) written by an earlier version: its table and
records name the strategy ``sampler``, its studies hold positions, its run records sit in a study of their own."""
DASHBOARD_START_S = 60.0


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> tuple[Path, tuner.RunResult]:
    out = tmp_path_factory.mktemp("view") / "fermi"
    result = tuner.run(FERMI, backend="replay", strategy="random", trials=8, out=out, quiet=True, report=False)
    return out, result


def load(out: Path, name: str) -> tuple[optuna.storages.BaseStorage, optuna.Study]:
    storage = open_storage(own_storage_url(out))
    return storage, optuna.load_study(study_name=name, storage=storage)


def test_the_storage_holds_the_studies_alone_each_trial_with_its_familys_values(replayed):
    out, result = replayed
    storage = open_storage(own_storage_url(out))
    try:
        assert optuna.get_all_study_names(storage) == STUDIES
        for name in STUDIES:
            study = optuna.load_study(study_name=name, storage=storage)
            assert study.metric_names == ["speed [GFLOP/s]"]
            frame = study.trials_dataframe()
            rows = result.df[result.df["study"] == name].set_index("trial")
            assert len(frame) == len(rows) == 8
            for _, trial in frame.iterrows():
                row = rows.loc[trial["number"]]
                assert trial["params_family"] == row["family"]
                own = {f"params_{row['family']}.{k}": v for k, v in results.row_params(row).items()}
                assert {k: int(trial[k]) for k in own} == own  # the values, not their positions
                others = [c for c in frame.columns if c.startswith("params_") and c != "params_family" and c not in own]
                assert all(math.isnan(trial[c]) for c in others)  # another family's parameters: absent
                assert trial["value_speed [GFLOP/s]"] == pytest.approx(row["gflops"] if row["status"] == "ok" else 0)
    finally:
        close_storage(storage)


@pytest.mark.slow  # a server of its own
def test_optuna_dashboard_serves_the_real_study(replayed, tmp_path):
    out, result = replayed
    port, server = _dashboard(out / "study.log")
    try:
        studies = _get(port, "/api/studies", server)["study_summaries"]
        assert [s["study_name"] for s in studies] == STUDIES
        tiled = {}
        for summary in studies:
            detail = _get(port, f"/api/studies/{summary['study_id']}?after=0", server)
            assert detail["objective_names"] == ["speed [GFLOP/s]"]
            for trial in detail["trials"]:
                params = {p["name"]: p["param_external_value"] for p in trial["params"]}
                family = params.pop("family")
                assert {name.split(".")[0] for name in params} == {family}
                if family == "tiled":
                    tiled[params["tiled.TILE_WIDTH"]] = trial
        assert set(tiled) <= {"8", "16", "32"} and tiled
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.slow  # a server, and waits of seconds for it to read the study again
def test_optuna_dashboard_follows_a_run_while_it_goes(tmp_path):
    out = tmp_path / "live"
    tuner.run(FERMI, backend="replay", strategy="random", trials=2, out=out, quiet=True, report=False)
    port, server = _dashboard(out / "study.log")
    seen: list[int] = []

    def complete_trials() -> int:
        summary = _get(port, "/api/studies", server)["study_summaries"][0]
        trials = _get(port, f"/api/studies/{summary['study_id']}?after=0", server)["trials"]
        return sum(trial["state"] == "Complete" for trial in trials)

    def look(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if study.study_name == STUDIES[0]:  # the dashboard reads a small study again after 2 s
            deadline = time.monotonic() + patient(10)
            while (count := complete_trials()) < trial.number + 1 and time.monotonic() < deadline:
                time.sleep(0.25)
            seen.append(count)

    try:
        assert complete_trials() == 2
        tuner.run(FERMI, backend="replay", strategy="random", trials=5, out=out, quiet=True, report=False,
                  callbacks=[look])
    finally:
        server.terminate()
        server.wait(10)
    assert seen == [3, 4, 5]  # each trial of the continuing run, as it completes


def _dashboard(storage: Path) -> tuple[int, subprocess.Popen]:
    """optuna-dashboard serving ``storage`` on a free port of 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = Path(sys.executable).with_name("optuna-dashboard")
    if not command.is_file():
        pytest.skip("optuna-dashboard is not installed beside this Python (it comes with the 'test' extra)")
    return port, subprocess.Popen([str(command), str(storage), "--host", "127.0.0.1", "--port", str(port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _get(port: int, path: str, server: subprocess.Popen) -> Any:
    """The dashboard's JSON answer, waiting (a bounded time) for the server to start."""
    deadline = time.monotonic() + patient(DASHBOARD_START_S)
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=patient(10)) as answer:
                return json.loads(answer.read())
        except (urllib.error.URLError, ConnectionError) as exc:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"optuna-dashboard did not answer: {server.stderr.read().decode()[-2000:]}") \
                    from exc
            time.sleep(0.2)


class Watching(optuna.samplers.RandomSampler):
    """A random sampler that notes the completed trials' parameters as it sees them."""

    seen: list[dict[str, Any]] = []

    def sample_independent(self, study, trial, param_name, param_distribution):
        Watching.seen.extend(t.params for t in study.get_trials(deepcopy=False) if t.params)
        return super().sample_independent(study, trial, param_name, param_distribution)


def test_optunas_samplers_see_every_axis_as_positions(tmp_path):
    Watching.seen.clear()
    tuner.run(FERMI, backend="replay", strategy=Watching(seed=3), trials=5, out=tmp_path / "run", quiet=True,
              report=False)
    assert Watching.seen
    for params in Watching.seen:
        assert set(params) == {"family", "naive.BLOCK_X", "naive.BLOCK_Y", "tiled.TILE_WIDTH"}
        assert 0 <= params["tiled.TILE_WIDTH"] <= 2 and 0 <= params["naive.BLOCK_X"] <= 3


def test_a_sampler_object_works_for_every_study_and_is_seeded_by_its_own_seed(tmp_path):
    def picked(name: str, sampler: optuna.samplers.BaseSampler) -> list[str]:
        result = tuner.run(FERMI, backend="replay", strategy=sampler, trials=6, out=tmp_path / name, quiet=True,
                           report=False)
        kernels = result.df[result.df["family"] != "baseline"]
        assert kernels.groupby("study").size().to_dict() == dict.fromkeys(STUDIES, 6)
        return list(kernels["config_key"])

    first = picked("a", optuna.samplers.TPESampler(seed=1))
    assert picked("b", optuna.samplers.TPESampler(seed=1)) == first
    assert picked("c", optuna.samplers.TPESampler(seed=2)) != first


def test_a_sampler_that_cannot_be_copied_is_refused_before_anything_is_written(tmp_path):
    class Locked(optuna.samplers.RandomSampler):
        def __deepcopy__(self, memo):
            raise TypeError("cannot pickle '_thread.lock' object")

    with pytest.raises(TunerError, match="cannot be copied"):
        tuner.run(FERMI, backend="replay", strategy=Locked(), trials=2, out=tmp_path / "run", quiet=True)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("kept", "change"), [
    ((results.RESULTS_PARQUET, results.METADATA_JSON, "study.log"), "its column 'sampler' is called 'strategy' now"),
    (("study.log",), "it keeps the run records of experiment 'fermi_like' in a study 'fermi_like/runs'"),
])
def test_a_folder_written_by_an_earlier_version_is_refused_naming_the_change(tmp_path, capsys, kept, change):
    out = tmp_path / "run"
    out.mkdir()
    for name in kept:
        shutil.copy(EARLIER / name, out / name)
    before = {name: (out / name).read_bytes() for name in kept}
    args = ["run", str(FERMI), "--backend", "replay", "--trials", "5", "--out", str(out), "--quiet", "--no-report"]
    assert cli.main(args) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and error.count("\n") == 1 and "Traceback" not in error
    assert "written by an earlier version of the tuner" in error and change in error
    assert {name: (out / name).read_bytes() for name in kept} == before


def test_a_study_written_by_an_earlier_version_is_told_by_its_attributes():
    current = {"axes": {"naive.BLOCK_X": [8, 16]}, "params": "values", "strategy": "tpe"}
    assert earlier_format(current, True) is None
    assert earlier_format({}, False) is None  # a study just created
    assert "representation since replaced" in earlier_format({}, True)
    assert "position in its list" in earlier_format({"axes": current["axes"]}, True)
    assert "'sampler', which is called 'strategy' now" in earlier_format({**current, "sampler": "tpe"}, True)


def test_run_records_kept_in_a_study_of_their_own_are_refused(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    storage = open_storage(own_storage_url(out))
    try:
        optuna.create_study(storage=storage, study_name="fermi_like/runs").set_user_attr("first_started_utc", "x")
    finally:
        close_storage(storage)
    before = (out / "study.log").read_bytes()
    args = ["run", str(FERMI), "--backend", "replay", "--trials", "5", "--out", str(out), "--quiet", "--no-report"]
    assert cli.main(args) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "keeps the run records of experiment 'fermi_like' in a study 'fermi_like/runs'" \
        in error
    assert (out / "study.log").read_bytes() == before


def test_a_different_sampler_into_an_existing_folder_is_refused_with_the_reason(tmp_path, capsys):
    out = tmp_path / "run"
    common = ["run", str(FERMI), "--backend", "replay", "--trials", "2", "--out", str(out), "--quiet", "--no-report"]
    assert cli.main([*common, "--strategy", "random"]) == 0
    before = (out / "study.log").read_bytes()
    assert cli.main([*common, "--strategy", "tpe"]) == 2
    error = capsys.readouterr().err
    assert "searched with the strategy 'random', not 'tpe'" in error and "--strategy random" in error
    assert (out / "study.log").read_bytes() == before


def test_callbacks_of_optunas_kind_get_the_study_and_the_completed_trial(tmp_path):
    seen: list[tuple[str, dict[str, Any], list[float], dict[str, Any]]] = []
    evaluations: list[tuner.Evaluation] = []

    def optuna_kind(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        seen.append((study.study_name, trial.params, trial.values, trial.user_attrs["record"]["measurement"]))

    tuner.run(FERMI, backend=ScriptedBackend(), strategy="random", trials=3, out=tmp_path / "run", quiet=True,
              report=False, callbacks=[optuna_kind, evaluations.append])
    assert len(seen) == len(evaluations) == 9
    for (name, params, values, measurement), evaluation in zip(seen, evaluations, strict=True):
        assert name == evaluation.study
        assert params == {"family": evaluation.config.family,
                          **{f"{evaluation.config.family}.{k}": v for k, v in evaluation.config.params}}
        assert values == [evaluation.value or 0.0] and measurement["status"] == evaluation.measurement.status.value


def test_a_callback_of_neither_kind_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(TunerError, match="neither one argument"):
        tuner.run(FERMI, backend=ScriptedBackend(), trials=2, out=tmp_path / "run", quiet=True,
                  callbacks=[lambda a, b, c: None])
    assert not (tmp_path / "run").exists()


def test_a_run_result_shows_itself_in_a_line_and_as_a_table(replayed):
    out, result = replayed
    text = repr(result)
    assert text.startswith("RunResult(fermi_like: 3 studies, 24 evaluations") and "\n" not in text
    assert f"out={str(out)!r}" in text and len(text) < 300
    page = result._repr_html_()
    assert page.count("<tr>") == 3 and "4096x4096x4096" in page and "cuBLAS GFLOP/s" in page
    assert np.isfinite(result.best["gflops"]).all()
