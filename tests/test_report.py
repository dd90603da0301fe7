"""Reports of a run folder: figures checked for their content (axes, points, ceilings, bounds), and the HTML page.

Two run folders are checked the same way: the shipped brute-force recording (experiments/data/fermi_like_h100)
and a small fixture folder built here. The fixture's times are invented for testing
the report logic only; everything else in it (rates, bytes, intensity, launch geometry, rejected configurations)
is derived from those times with tuner's own model, so its rows are consistent the way a real run's are.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import optuna
import pytest
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from space_listing import kernel_space

from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.experiment.schema import parse_experiment
from tuner.kernels import matmul
from tuner.kernels.discovery import get_family, template_hash
from tuner.kernels.model import cost
from tuner.measure.measurement import Measurement, Resources, Status, Timing
from tuner.optuna_attrs import RECORD_ATTR
from tuner.report import write_report
from tuner.report.bounds import class_bounds
from tuner.report.convergence import TRIAL_LABEL, convergence_figure
from tuner.report.importances import BARS_UP_TO, Importances, importances_figure, param_importances, study_trials
from tuner.report.parameters import parameter_figure
from tuner.report.roofline import INTENSITY_LABEL, roofline_figure
from tuner.report.run_folder import load_run
from tuner.results import table as results
from tuner.results.record import Record
from tuner.search.study import FAMILY_PARAM, StudySpace, study_spaces
from tuner.space.entry_space import KernelSpec

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "experiments/data/fermi_like_h100"

FIXTURE_EXPERIMENT = """\
name: report_fixture
description: Naive versus tiled, float32, on two problem sizes (a fixture of the report tests).
problems:
  - {M: 1024, N: 1024, K: 1024}
  - {M: 1000, N: 777, K: 333}
kernels:
  - template: naive
    parameters: {BLOCK_X: [8, 16, 32, 64], BLOCK_Y: [4, 8, 16, 32], dtype: [float32]}
  - template: tiled
    parameters: {TILE_WIDTH: [8, 16, 32], dtype: [float32]}
machine_models:
  - name: Fermi-like
    peak_gflops: {float32: 1000, float64: 500}
    bandwidth_gbs: 150
search: {strategy: tpe, trials: 12, seed: 0}
"""
FIXTURE_ENVIRONMENT = {
    "backend": "pycuda",
    "device": {"name": "Fixture GPU", "compute_capability": "9.0", "sm_count": 132,
               "clocks": {"sm_mhz": 1980, "memory_mhz": 2619}, "memory": {"total_bytes": 85520809984},
               "l2": {"bytes": 52428800}},
    "peaks": {"theoretical": {"float32_gflops": 66900.0, "float64_gflops": 33500.0, "int32_gflops": 33500.0,
                              "bandwidth_gbs": 3350.0},
              "measured": {"float32_gflops": 51200.0, "bandwidth_gbs": 2950.0}},
    "versions": {"python": "3.12.3", "cuda_driver": "13.0", "nvcc": "13.0.48", "pycuda": "2025.1"},
    "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": False},
    "measure": {"cold_caches": True, "warmup": 2, "min_samples": 10, "max_samples": 200},
    "compile": {"arch": "sm_90", "options": ["-O3"]},
    "templates": {"naive": template_hash("naive"), "tiled": template_hash("tiled")},
    "created_utc": "2025-01-01T00:00:00+00:00",
}
# Invented achieved rates (GFLOP/s) from which the fixture's times follow.
FIXTURE_TILED_RATES = {8: 2600.0, 16: 4300.0, 32: 5700.0}
FIXTURE_CUBLAS_RATES = {"1024x1024x1024": 31000.0, "1000x777x333": 17500.0}
FAILURES = {  # (problem, family, params) -> (status, reason, verify_error)
    ("1000x777x333", "naive", (("BLOCK_X", 8), ("BLOCK_Y", 4))): ("wrong", "verification: relative error 0.31", 0.31),
    ("1000x777x333", "naive", (("BLOCK_X", 64), ("BLOCK_Y", 16))): ("crashed", "unspecified launch failure", None),
    ("1000x777x333", "tiled", (("TILE_WIDTH", 32),)): ("compile_error", "ptxas error: too many resources", None),
}


def _fixture_rate(config: Config) -> float:
    if config.family == "tiled":
        rate = FIXTURE_TILED_RATES[int(config["TILE_WIDTH"])]
    else:
        rate = 700.0 + 35.0 * int(config["BLOCK_X"]) + 8.0 * int(config["BLOCK_Y"])
    return rate * (0.8 if config.problem.M == 1000 else 1.0)


def _timed(flops: int, rate: float, rng: np.random.Generator) -> Timing:
    median_ms = flops / (rate * 1e9) * 1e3
    samples = median_ms * (1 + 0.01 * rng.standard_normal(10))
    return Timing(median_ms=float(np.median(samples)), mean_ms=float(samples.mean()), min_ms=float(samples.min()),
                  stdev_ms=float(samples.std(ddof=1)), samples_ms=tuple(float(s) for s in samples),
                  sm_clock_mhz_before=1980.0, sm_clock_mhz_after=1980.0)


def _measurement(config: Config, rejected: str | None, rng: np.random.Generator) -> Measurement:
    if rejected:
        return Measurement(Status.INVALID, rejected)
    failure = FAILURES.get((config.problem.label, config.family, config.params))
    resources = Resources(registers=32 if config.family == "naive" else 40, local_bytes=0, spill_store_bytes=0,
                          spill_load_bytes=0,
                          shared_bytes=get_family(config.family).shared_bytes(config.param_dict, 4))
    if failure:
        status, reason, error = failure
        return Measurement(Status(status), reason, error=error, compile_time_s=0.9, resources=resources)
    return Measurement(Status.OK, timing=_timed(matmul.flops(config.problem), _fixture_rate(config), rng), error=1e-7,
                       compile_time_s=0.9, resources=resources)


def _record(config: Config, measurement: Measurement, study: str, sampler: str, trial: int, clock: float) -> Record:
    return Record(experiment="report_fixture", study=study, strategy=sampler, trial=trial, config=config,
                  measurement=measurement, metadata_id="env-0", wall_offset_s=clock,
                  measured_at=f"2025-01-01T00:{int(clock) // 60:02d}:{int(clock) % 60:02d}+00:00", device_s=0.3)


def _record_trials(storage: str, space: StudySpace, records: list[Record]) -> None:
    """The study as tuner.search.study keeps it: parameters ``family`` and the family's ``<family>.<PARAM>`` (by value),
    the GFLOP/s (0 for a failure) as value and the evaluation's Record in the user attribute
    ``record``."""
    distributions = space.distributions()
    study = optuna.create_study(study_name=space.name, storage=storage, direction="maximize")
    for record in records:
        params = space.params(record.config)
        study.add_trial(optuna.trial.create_trial(
            params=params, distributions={k: distributions[k] for k in params},
            value=results.objective_of(record.config, record.measurement) or 0.0,
            user_attrs={RECORD_ATTR: record.attrs()}))


def build_run_folder(folder: Path) -> Path:
    """A run folder as `python -m tuner run` leaves it: results (every status), metadata, Optuna storage.

    The 1024³ study is searched by tpe, then continued by random (8 configurations each, 3 left unexplored);
    the odd problem's study is brute force. Each problem has a cuBLAS baseline."""
    experiment = parse_experiment(FIXTURE_EXPERIMENT, "report_fixture.yaml")
    rng = np.random.default_rng(0)
    rows: list[dict] = []
    clock = 0.0
    storage = f"sqlite:///{folder / 'study.db'}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    folder.mkdir(parents=True, exist_ok=True)
    for space in study_spaces(experiment):
        candidates = [(c, None) for c in space.valid] + [
            (Config.make(space.problem, family, space.dtype, dict(zip(values, combo, strict=True))), why)
            for family, values in space.choices.items()
            for combo in itertools.product(*values.values())
            if (why := space.rejected.get(Config.make(space.problem, family, space.dtype,
                                                      dict(zip(values, combo, strict=True))).key))]
        if space.problem.M == 1024:
            order = rng.permutation(len(candidates))
            plan = [("tpe", order[:8]), ("random", order[8:16])]
        else:
            plan = [("bruteforce", np.arange(len(candidates)))]
        records = []
        for sampler, indices in plan:
            for index in indices:
                clock += 1.1
                config, rejected = candidates[index]
                records.append(_record(config, _measurement(config, rejected, rng), space.name, sampler,
                                       len(records), clock))
        rows += [results.row(r, results.analytics_of(r.config), FIXTURE_ENVIRONMENT) for r in records]
        _record_trials(storage, space, records)
        rate = FIXTURE_CUBLAS_RATES[space.problem.label]
        baseline = Measurement(Status.OK, timing=_timed(matmul.flops(space.problem), rate, rng))
        record = _record(results.baseline_config(space.problem, space.dtype), baseline, results.BASELINE,
                         results.BASELINE, -1, clock)
        rows.append(results.row(record, results.analytics_of(record.config), FIXTURE_ENVIRONMENT))
    metadata = {
        "experiment": {"name": experiment.name, "path": "report_fixture.yaml", "source": FIXTURE_EXPERIMENT,
                       "machine_models": [{"name": m.name, "peak_gflops": m.peak_gflops,
                                           "bandwidth_gbs": m.bandwidth_gbs} for m in experiment.machine_models]},
        "environments": {"env-0": FIXTURE_ENVIRONMENT},
        "runs": [{"started_utc": "2025-01-01T00:00:00+00:00", "finished_utc": "2025-01-01T00:00:30+00:00",
                  "backend": "pycuda", "strategy": "tpe", "trials": 8, "gpu_busy_fraction": 0.41, "wall_s": 30.0,
                  "evaluations": 8, "interrupted": False},
                 {"started_utc": "2025-01-01T00:00:30+00:00", "finished_utc": "2025-01-01T00:01:10+00:00",
                  "backend": "pycuda", "strategy": "random", "trials": 16, "gpu_busy_fraction": 0.38,
                  "wall_s": 40.0, "evaluations": 27, "interrupted": False}],
    }
    results.save(results.to_frame(rows), metadata, folder)
    return folder


@pytest.fixture(scope="module")
def fixture_folder(tmp_path_factory) -> Path:
    return build_run_folder(tmp_path_factory.mktemp("fixture_run"))


def _folder(which: str, tmp_path_factory, fixture_folder) -> Path:
    """The fixture folder, or a copy of the shipped recording (reports write into the folder)."""
    if which == "fixture":
        return fixture_folder
    copy = tmp_path_factory.mktemp("shipped_run") / SHIPPED.name
    shutil.copytree(SHIPPED, copy)
    return copy


@pytest.fixture(scope="module", params=["fixture", "shipped"])
def run_folder(request, tmp_path_factory, fixture_folder) -> Path:
    """Each folder, for the figures and tables drawn from it."""
    return _folder(request.param, tmp_path_factory, fixture_folder)


@pytest.fixture(scope="module", params=["fixture", pytest.param("shipped", marks=pytest.mark.slow)])
def reported_folder(request, tmp_path_factory, fixture_folder) -> Path:
    """Each folder, for its written report; the shipped recording's report (15 figures drawn and saved) runs
    with the slow tests, the fixture folder's checks the same page in the fast lane."""
    return _folder(request.param, tmp_path_factory, fixture_folder)


@pytest.fixture(scope="module")
def written(reported_folder) -> list[Path]:
    return write_report(reported_folder)


# --- helpers that read a Figure back ----------------------------------------------------------------------------

def _points(fig: Figure, gid: str) -> int:
    return sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections
               if isinstance(c, PathCollection) and c.get_gid() == gid)


def _line_labels(fig: Figure) -> list[str]:
    return [line.get_label() for ax in fig.axes for line in ax.get_lines()]


def _texts(fig: Figure, gid_prefix: str) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts if (t.get_gid() or "").startswith(gid_prefix)]


def _bound_markers(fig: Figure, model: str, group: str) -> list[tuple[float, float]]:
    return [(float(line.get_xdata()[0]), float(line.get_ydata()[0])) for ax in fig.axes for line in ax.get_lines()
            if line.get_gid() == f"bound-{model}-{group}"]


def _bound_for(run, model: str, family: str, key: tuple = ()) -> list:
    return [b for b in class_bounds(run) if b.group.family == family and b.group.key == key]


# --- the roofline -------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_report_files_are_written(reported_folder, written):
    names = {p.name for p in written}
    assert {"roofline.png", "convergence.png", "report.html"} <= names
    assert any(n.startswith("params_") for n in names)
    for path in written:
        assert path.parent == reported_folder and path.stat().st_size > 0
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_roofline_axes_are_log_and_say_the_model(run_folder):
    run = load_run(run_folder)
    fig = roofline_figure(run)
    for ax in fig.axes:
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert ax.get_xlabel() == INTENSITY_LABEL
        assert "no-cache" in ax.get_xlabel() and "FLOP/byte" in ax.get_xlabel()
        assert "GFLOP/s" in ax.get_ylabel() or "GOP/s" in ax.get_ylabel()
        labelled = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
        assert len(labelled) >= 4


def test_roofline_plots_one_point_per_ok_evaluation(run_folder):
    run = load_run(run_folder)
    kernels_ok = run.df[(run.df["family"] != "baseline") & (run.df["status"] == "ok")]
    assert len(kernels_ok) > 0
    assert _points(roofline_figure(run), "evaluations") == len(kernels_ok)
    for dtype, problem in run.slices():
        expected = ((kernels_ok["dtype"] == dtype) & (kernels_ok["problem"] == problem)).sum()
        assert _points(roofline_figure(run, dtype, problem), "evaluations") == expected
    assert _points(roofline_figure(run), "best") == len(run.slices())


def test_roofline_draws_the_ceilings_with_their_labels(run_folder):
    run = load_run(run_folder)
    labels = _line_labels(roofline_figure(run))
    assert "Fermi-like model: 1,000 GFLOP/s, 150 GB/s, ridge 6.67 FLOP/B" in labels
    peaks = run.environment(run.kernels).peaks
    for kind in peaks:
        if peaks[kind].get("float32_gflops"):
            assert any(f", {kind}: " in label and "GFLOP/s" in label for label in labels), kind
    fig = roofline_figure(run)
    assert _texts(fig, "model-label-Fermi-like") == ["Fermi-like model"]
    (ridge,) = [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == "ridge-Fermi-like"]
    assert (ridge.get_xdata()[0], ridge.get_ydata()[0]) == pytest.approx((1000 / 150, 1000))


def test_roofline_shows_the_seeds_bounds_next_to_the_achieved(run_folder):
    run = load_run(run_folder)
    dtype, problem = run.slices()[0]  # the largest problem
    fig = roofline_figure(run, dtype, problem)
    assert _texts(fig, "bound-label-Fermi-like-naive") == ["37.5"]
    (tile16,) = _texts(fig, "bound-label-Fermi-like-tiled TILE_WIDTH=16")
    assert float(tile16.replace(",", "")) == pytest.approx(600, rel=0.01)
    (naive_marker,) = _bound_markers(fig, "Fermi-like", "naive")
    assert naive_marker[1] == pytest.approx(37.5, rel=1e-3)
    (tile_marker,) = _bound_markers(fig, "Fermi-like", "tiled TILE_WIDTH=16")
    assert tile_marker == pytest.approx((4.0, 600.0), rel=0.01)
    # the dotted line from each class's bound up to the best it achieved
    gaps = [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == "bound-gap"]
    best_naive = run.ok[(run.ok["family"] == "naive") & (run.ok["problem"] == problem)]["gflops"].max()
    assert any(max(line.get_ydata()) == pytest.approx(best_naive) for line in gaps)


def test_roofline_marks_best_and_cublas(run_folder):
    run = load_run(run_folder)
    dtype, problem = run.slices()[0]
    fig = roofline_figure(run, dtype, problem)
    best = run.ok[(run.ok["problem"] == problem) & (run.ok["dtype"] == dtype)]["gflops"].max()
    (ring,) = [c for ax in fig.axes for c in ax.collections if c.get_gid() == "best"]
    assert ring.get_offsets()[0][1] == pytest.approx(best)
    assert any(t.startswith("best: ") for t in _texts(fig, "best-label"))
    baselines = run.baselines[(run.baselines["problem"] == problem) & (run.baselines["dtype"] == dtype)]
    assert _points(fig, "baseline") == len(baselines)


def test_per_problem_rooflines_exist_when_several(reported_folder, written):
    run = load_run(reported_folder)
    names = {p.name for p in written}
    if len(run.slices()) > 1:
        for dtype, problem in run.slices():
            assert f"roofline_{dtype}_{problem}.png" in names


def test_seeds_bounds_in_the_table_of_bounds(run_folder):
    run = load_run(run_folder)
    largest = run.slices()[0][1]
    (naive,) = [b for b in _bound_for(run, "Fermi-like", "naive") if b.problem == largest]
    assert dict(naive.model_bounds)["Fermi-like"] == pytest.approx(37.5, rel=1e-3)
    (tile,) = [b for b in _bound_for(run, "Fermi-like", "tiled", (("TILE_WIDTH", 16),)) if b.problem == largest]
    assert tile.intensity == pytest.approx(4.0, rel=0.01)
    assert dict(tile.model_bounds)["Fermi-like"] == pytest.approx(600, rel=0.01)
    assert tile.best_gflops is not None and tile.best_gflops > 0


# --- convergence and parameters -----------------------------------------------------------------------------------

def test_convergence_is_monotone_per_study(run_folder):
    run = load_run(run_folder)
    fig = convergence_figure(run)
    lines = [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == "best-so-far"]
    searched = run.kernels[run.kernels["trial"] >= 0]
    assert len(lines) == 2 * len(searched.groupby(["study", "strategy"]))  # by trial and by wall time
    for line in lines:
        y = np.asarray(line.get_ydata(), dtype=float)
        y = y[np.isfinite(y)]
        assert len(y) > 0 and np.all(np.diff(y) >= 0)
    xlabels = {ax.get_xlabel() for ax in fig.axes}
    assert {TRIAL_LABEL, "wall time since the run started (s)"} <= xlabels
    overall = run.ok.groupby(["study", "strategy"])["gflops"].max()
    finals = sorted(float(np.nanmax(line.get_ydata())) for line in lines)
    assert sorted(overall.tolist() * 2) == pytest.approx(finals)


def test_convergence_has_one_line_per_sampler(fixture_folder):
    fig = convergence_figure(load_run(fixture_folder))
    first_row = fig.axes[0]
    labels = [line.get_label() for line in first_row.get_lines() if line.get_gid() == "best-so-far"]
    assert sorted(labels) == ["random", "tpe"]


def test_naive_heatmap_and_tile_bars(run_folder):
    run = load_run(run_folder)
    heat = parameter_figure(run, "naive")
    images = [im for ax in heat.axes for im in ax.get_images()]
    assert len(images) == len([s for s in run.slices() if (run.kernels["problem"] == s[1]).any()])
    naive_values = run.kernels[run.kernels["family"] == "naive"]["params"]
    assert images[0].get_array().shape == (len({p["BLOCK_Y"] for p in naive_values}),
                                           len({p["BLOCK_X"] for p in naive_values}))
    ax = heat.axes[0]
    assert ax.get_xlabel() == "BLOCK_X" and ax.get_ylabel() == "BLOCK_Y"
    dtype, problem = run.slices()[0]
    best = run.ok[(run.ok["family"] == "naive") & (run.ok["problem"] == problem)]["gflops"].max()
    assert np.nanmax(images[0].get_array().filled(np.nan)) == pytest.approx(best)

    bars = parameter_figure(run, "tiled")
    ax = bars.axes[0]
    assert ax.get_xlabel() == "TILE_WIDTH"
    heights = [p.get_height() for c in ax.containers for p in c]
    tiled_best = run.ok[run.ok["family"] == "tiled"].groupby(["problem", "p_TILE_WIDTH"])["gflops"].max()
    assert sorted(h for h in heights if h > 0) == pytest.approx(sorted(tiled_best))
    # One legend for the figure, naming each problem once, beside the panels rather than over their bars.
    assert all(ax.get_legend() is None for ax in bars.axes)
    assert len(bars.legends) == 1
    problems = set(tiled_best.index.get_level_values(0))
    assert sorted(t.get_text() for t in bars.legends[0].get_texts()) == sorted(problems)


def test_failed_cells_name_their_status(fixture_folder):
    fig = parameter_figure(load_run(fixture_folder), "naive")
    cells = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "cell"]
    assert {"invalid", "wrong", "crashed"} <= set(cells)


@pytest.mark.slow
def test_generic_parameter_figure_for_a_family_of_many_parameters(tmp_path):
    """A family of more than two parameters gets bars of the best rate per value of each parameter it varied."""
    family = get_family("regblock")
    spec = KernelSpec("regblock", {p.name: p.default for p in family.parameters}, ("float32",))
    problem = Problem(1024, 1024, 1024)
    valid = kernel_space(spec, problem).valid
    configs = valid[::max(1, len(valid) // 8)][:8]
    assert len({(c["BM"], c["BN"]) for c in configs}) > 1, "configurations with different block tiles"
    folder = build_run_folder(tmp_path)
    df, metadata = results.load(folder)
    rng = np.random.default_rng(1)
    study = "report_fixture/1024x1024x1024/float32/regblock"
    extra = [results.row(_record(c, Measurement(Status.OK, timing=_timed(matmul.flops(problem), 9000.0 + 400 * i, rng)),
                                 study, "tpe", i, 100.0 + i), results.analytics_of(c), FIXTURE_ENVIRONMENT)
             for i, c in enumerate(configs)]
    results.save(results.to_frame(df.to_dict("records") + extra), metadata, folder)
    run = load_run(folder)
    varied = sorted(n for n in family.parameter_names if len({c[n] for c in configs}) > 1)
    fig = parameter_figure(run, "regblock")
    assert sorted(ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()) == varied
    for ax in fig.axes:
        if ax.get_xlabel():
            heights = [p.get_height() for c in ax.containers for p in c]
            assert max(heights) == pytest.approx(run.ok[run.ok["family"] == "regblock"]["gflops"].max())
    labels = [h.get_label() for ax in roofline_figure(run).axes for h in ax.get_legend().legend_handles]
    assert any(label.startswith("regblock BM=") for label in labels)
    assert _points(roofline_figure(run), "evaluations") == len(run.ok)


def test_importances_per_family_subset(fixture_folder):
    found, notes = param_importances(load_run(fixture_folder))
    odd = "report_fixture/1000x777x333/float32"
    assert {(i.study, i.subset) for i in found} >= {(odd, "family naive"), ("report_fixture/1024x1024x1024/float32",
                                                                             "family naive")}
    naive = [i for i in found if i.study == odd and i.subset == "family naive"][0]
    assert set(naive.values) == {"naive.BLOCK_X", "naive.BLOCK_Y"}
    assert naive.trials == 16  # every naive combination, the invalid one included (told 0 GFLOP/s)
    assert naive.top_trials == 8  # not the top decile's 2 trials: at least 10, at most half of them
    assert sum(naive.values.values()) == pytest.approx(1.0)
    assert any(f"{odd}, family tiled: only tiled.TILE_WIDTH varied" in n for n in notes)


def test_importances_of_trials_that_all_failed_are_a_note(tmp_path, fixture_folder):
    df, metadata = results.load(fixture_folder)
    failed = df[(df["family"] == "naive") & (df["problem"] == "1000x777x333")].assign(status="crashed", gflops=None)
    results.save(failed, metadata, tmp_path)
    found, notes = param_importances(load_run(tmp_path))
    assert found == []
    assert notes == ["study report_fixture/1000x777x333/float32, all completed trials: every trial has the same value "
                     "(0 GFLOP/s; a failure counts as 0), so there is nothing to rank"]


def test_many_importances_are_one_table_of_cells():
    entries = [Importances(f"exp/{n}x{n}x{n}/float32", "all completed trials", 100, {"naive.BLOCK_X": 0.7,
                                                                                  "naive.BLOCK_Y": 0.3}, 10)
               for n in range(64, 64 * (BARS_UP_TO + 3), 64)]
    fig = importances_figure(entries)
    (image,) = [im for ax in fig.axes for im in ax.get_images()]
    assert image.get_array().shape == (len(entries), 2)
    ax = image.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["naive.BLOCK_X", "naive.BLOCK_Y"]
    assert ax.get_yticklabels()[0].get_text() == "64x64x64/float32, all completed trials (100 trials, best 10)"
    assert sorted(t.get_text() for t in ax.texts) == ["0.30"] * len(entries) + ["0.70"] * len(entries)
    assert "(exp)" in fig.get_suptitle()


def test_importances_are_the_studies_trials(fixture_folder):
    """The trials rebuilt from the results table are the study's: the same configurations (named by their values,
    where the study holds positions), the same values told."""
    run = load_run(fixture_folder)
    storage = optuna.storages.RDBStorage(f"sqlite:///{fixture_folder / 'study.db'}", skip_table_creation=True)
    for name in optuna.get_all_study_names(storage):
        stored = optuna.load_study(study_name=name, storage=storage).get_trials()
        rebuilt = study_trials(run.kernels[run.kernels["study"] == name].sort_values("trial"))
        several = FAMILY_PARAM in rebuilt[0].params
        assert [(t.params, t.value) for t in rebuilt] == [(_named(t, several), t.value) for t in stored]


def _named(trial, several: bool) -> dict:
    """A stored trial's configuration as the report names its parameters."""
    config = trial.user_attrs[RECORD_ATTR]["config"]
    params = {f"{config['family']}.{k}": v for k, v in config["params"].items()}
    return {FAMILY_PARAM: config["family"], **params} if several else params


@pytest.mark.slow
def test_importances_need_no_storage_and_stop_at_their_deadline(tmp_path, fixture_folder):
    for name in (results.RESULTS_PARQUET, results.METADATA_JSON):
        shutil.copy(fixture_folder / name, tmp_path / name)
    assert "importances.png" in {p.name for p in write_report(tmp_path, quiet=True, importances_deadline_s=math.inf)}
    found, notes = param_importances(load_run(tmp_path), deadline_s=0.0)
    assert found == [] and notes[-1].startswith("importances left out after 0 s, the time the report gives them: ")
    assert "report_fixture/1000x777x333/float32 (family naive)" in notes[-1]


def test_too_few_trials_for_importances_is_a_note(tmp_path, fixture_folder):
    df, metadata = results.load(fixture_folder)
    naive = df[(df["family"] == "naive") & (df["status"] == "ok") & (df["problem"] == "1024x1024x1024")]
    results.save(naive.head(3), metadata, tmp_path)
    found, notes = param_importances(load_run(tmp_path))
    assert found == []
    assert notes == ["study report_fixture/1024x1024x1024/float32, all completed trials: 3 completed trial(s); "
                     "importances need at least 5"]


# --- the HTML page ------------------------------------------------------------------------------------------------

def test_html_is_self_contained_and_embeds_every_figure(reported_folder, written):
    page = (reported_folder / "report.html").read_text()
    pngs = sorted(p.name for p in written if p.suffix == ".png")
    images = re.findall(r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == len(pngs)
    for encoded in images:
        assert base64.b64decode(encoded)[:8] == b"\x89PNG\r\n\x1a\n"
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert 'name="viewport"' in page and "max-width" in page


def test_html_sections_and_content(reported_folder, written):
    run = load_run(reported_folder)
    page = (reported_folder / "report.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    for heading in ("Summary", "Device and environment", "Ceilings", "Roofline", "Convergence",
                    "Parameter effects", "Top configurations", "Outcomes", "Predicted and achieved",
                    "Best kernel"):
        assert re.search(rf"<h2[^>]*>[^<]*{heading}", page), heading
    assert run.experiment_name in text
    for status in run.df["status"].unique():
        assert status in text
    for _, problem in run.slices():
        assert problem in text
    assert "37.5" in text and "Fermi-like" in text


def test_html_shows_the_best_kernel_source_and_launch(reported_folder, written):
    run = load_run(reported_folder)
    page = (reported_folder / "report.html").read_text()
    text = html.unescape(page)
    best = run.ok.loc[run.ok["gflops"].idxmax()]
    assert 'extern "C" __global__' in text and "matmul(" in text
    assert f"dtype={best['dtype']}" in text
    assert f"block {best['block']}" in text.replace("<code>", "").replace("</code>", "")
    assert "&lt;" in page or "<" not in re.search(r"<pre[^>]*>(.*?)</pre>", page, re.S).group(1)


@pytest.mark.slow
def test_html_escapes_recorded_text(tmp_path, fixture_folder):
    for name in (results.RESULTS_PARQUET, results.METADATA_JSON):
        shutil.copy(fixture_folder / name, tmp_path / name)
    df, metadata = results.load(tmp_path)
    hostile = "<script>alert('x')</script>"
    df.loc[df["status"] == "crashed", "reason"] = hostile
    metadata["environments"]["env-0"]["device"]["name"] = "<b>GPU</b>"
    results.save(df, metadata, tmp_path)
    write_report(tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert hostile not in page and "&lt;script&gt;" in page
    assert "<b>GPU</b>" not in page and "&lt;b&gt;GPU&lt;/b&gt;" in page


# --- tolerance and errors -------------------------------------------------------------------------------------------

def test_folder_without_results_is_a_tuner_error(tmp_path):
    with pytest.raises(TunerError, match=r"results\.parquet") as info:
        write_report(tmp_path)
    assert str(tmp_path) in str(info.value)
    with pytest.raises(TunerError, match="no such run folder"):
        write_report(tmp_path / "missing")


@pytest.mark.slow
def test_cli_report_prints_the_paths(fixture_folder):
    from conftest import run_cli

    done = run_cli("report", str(fixture_folder))
    assert done.returncode == 0, done.stderr
    printed = [Path(line) for line in done.stdout.splitlines()]
    assert fixture_folder / "report.html" in printed and fixture_folder / "roofline.png" in printed
    missing = run_cli("report", str(fixture_folder / "nothing-here"))
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and "Traceback" not in missing.stderr


@pytest.mark.slow
def test_minimal_metadata_and_no_baseline(tmp_path, fixture_folder):
    """No cuBLAS rows, no measured ceilings, no machine models, int32 only: a report all the same."""
    df, metadata = results.load(fixture_folder)
    df = df[df["family"] != "baseline"].copy()
    df["dtype"] = "int32"
    df["config_key"] = df["config_key"].str.replace("float32", "int32")
    env = json.loads(json.dumps(FIXTURE_ENVIRONMENT))
    env["peaks"] = {"theoretical": {"int32_gflops": 33500.0, "bandwidth_gbs": 3350.0}}
    results.save(df, {"environments": {"env-0": env}}, tmp_path)
    written = write_report(tmp_path)
    run = load_run(tmp_path)
    assert run.machine_models == () and run.baselines.empty
    fig = roofline_figure(run)
    labels = _line_labels(fig)
    assert any("theoretical" in label for label in labels) and not any("measured" in label for label in labels)
    assert _points(fig, "evaluations") == (df["status"] == "ok").sum()
    assert "GOP/s" in fig.axes[0].get_ylabel()
    page = (tmp_path / "report.html").read_text()
    assert "machine models" in page and "roofline.png" in {p.name for p in written}


@pytest.mark.slow
def test_results_without_metadata(tmp_path, fixture_folder):
    shutil.copy(fixture_folder / results.RESULTS_PARQUET, tmp_path / results.RESULTS_PARQUET)
    written = write_report(tmp_path)
    assert "report.html" in {p.name for p in written}
    assert "metadata.json is missing" in html.unescape((tmp_path / "report.html").read_text())


def test_recorded_intensity_matches_the_model(run_folder):
    run = load_run(run_folder)
    for _, row in run.ok.head(20).iterrows():
        config = Config.make(Problem(int(row["M"]), int(row["N"]), int(row["K"])), row["family"], row["dtype"],
                             row["params"])
        assert row["intensity"] == pytest.approx(cost(config).intensity)
        assert row["gflops"] == pytest.approx(row["flops"] / (row["time_median_ms"] * 1e-3) / 1e9, rel=1e-6)
        assert math.isfinite(row["bandwidth_gbs"])


def _add_records(folder: Path, configs: list[Config], sampler: str = "tpe") -> None:
    """Append successful evaluations of ``configs`` (each its own study and dtype as configured) to the folder."""
    df, metadata = results.load(folder)
    rng = np.random.default_rng(2)
    records = [_record(c, _measurement(c, None, rng), f"report_fixture/{c.problem.label}/{c.dtype}", sampler, i,
                       200.0 + i) for i, c in enumerate(configs)]
    rows = [results.row(r, results.analytics_of(r.config), FIXTURE_ENVIRONMENT) for r in records]
    results.save(results.to_frame(df.to_dict("records") + rows), metadata, folder)


@pytest.mark.slow
def test_two_dtypes_get_a_panel_each_and_their_own_ceilings(tmp_path):
    folder = build_run_folder(tmp_path)
    problem = Problem(1024, 1024, 1024)
    _add_records(folder, [Config.make(problem, "tiled", "float64", {"TILE_WIDTH": w}) for w in (8, 16, 32)])
    run = load_run(folder)
    assert ("float64", "1024x1024x1024") in run.slices()
    overview = roofline_figure(run)
    assert [ax.get_title().split(": ")[1] for ax in overview.axes] == ["float32, all problems",
                                                                        "float64, 1024x1024x1024"]
    float64 = overview.axes[1]
    assert sum(len(c.get_offsets()) for c in float64.collections if c.get_gid() == "evaluations") == 3
    labels = [line.get_label() for line in float64.get_lines()]
    assert "Fermi-like model: 500 GFLOP/s, 150 GB/s, ridge 3.33 FLOP/B" in labels
    assert any(label.startswith("Fixture GPU, theoretical: 33,500 GFLOP/s") for label in labels)
    assert "Fixture GPU, measured: 2,950 GB/s" in labels  # no float64 peak was measured: the bandwidth alone
    (tile16,) = _texts(roofline_figure(run, "float64", "1024x1024x1024"), "bound-label-Fermi-like-tiled TILE_WIDTH=16")
    assert float(tile16) == pytest.approx(300, rel=0.01)  # 2 FLOP/B in float64 on 150 GB/s
    written = {p.name for p in write_report(folder, quiet=True)}
    assert "roofline_float64_1024x1024x1024.png" in written


@pytest.mark.slow
def test_a_run_without_any_success(tmp_path, fixture_folder):
    df, metadata = results.load(fixture_folder)
    df = df[(df["family"] != "baseline") & (df["status"] != "ok")]
    results.save(df, metadata, tmp_path)
    written = write_report(tmp_path, quiet=True)
    run = load_run(tmp_path)
    fig = roofline_figure(run)
    assert _points(fig, "evaluations") == 0
    assert "no successful evaluation" in [t.get_text() for ax in fig.axes for t in ax.texts]
    page = html.unescape((tmp_path / "report.html").read_text())
    assert "No successful evaluation, so no best kernel." in page
    assert "report.html" in {p.name for p in written}


@pytest.mark.slow
def test_a_changed_template_is_noted_beside_the_source(tmp_path, fixture_folder):
    for name in (results.RESULTS_PARQUET, results.METADATA_JSON):
        shutil.copy(fixture_folder / name, tmp_path / name)
    df, metadata = results.load(tmp_path)
    metadata["environments"]["env-0"]["templates"]["tiled"] = "feedfacefeedface"
    results.save(df, metadata, tmp_path)
    write_report(tmp_path, quiet=True)
    page = html.unescape((tmp_path / "report.html").read_text())
    assert "the template of 'tiled' changed since this run (recorded hash feedfacefeedface" in page


@pytest.mark.slow
def test_the_report_of_a_folder_that_tuner_run_wrote(tmp_path, capsys):
    """tuner.run writes the report at its end; it reads the folder exactly as the run left it."""
    from scripted_backend import ScriptedBackend

    import tuner
    from tuner.experiment.schema import load_experiment

    out = tmp_path / "run"
    tuner.run(load_experiment(ROOT / "experiments/fermi_like.yaml"), backend=ScriptedBackend(), out=out,
              strategy="tpe", trials=6, quiet=True)
    names = {p.name for p in out.iterdir()}
    assert {"report.html", "roofline.png", "convergence.png", "params_naive.png", "params_tiled.png"} <= names
    run = load_run(out)
    assert _points(roofline_figure(run), "evaluations") == len(run.ok) > 0
    assert _texts(roofline_figure(run, "float32", "4096x4096x4096"), "bound-label-Fermi-like-naive") == ["37.5"]
    page = html.unescape((out / "report.html").read_text())
    assert "scripted stand-in (test double)" in page and "<h3>4096x4096x4096, float32</h3>" in page


def test_top_configurations_show_the_register_tile_shared_memory_intensity():
    import pandas as pd

    from tuner.report.tables import intensities_text

    params = {"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "WARP_N": 4, "A_T": 1, "PAD": 4, "VECTOR": 1,
              "ASYNC": 1, "STAGES": 2, "UNROLL": 32, "MIN_BLOCKS": 1}
    row = pd.Series({"M": 4096, "N": 4096, "K": 4096, "family": "regblock", "dtype": "float32", "intensity": 31.5,
                     **{f"p_{k}": v for k, v in params.items()}})
    assert intensities_text(row) == "global 31.5 · shared 2 · block 32"
    baseline = pd.Series({"M": 8, "N": 8, "K": 8, "family": "baseline", "dtype": "float32", "params": {},
                          "intensity": 1.0})
    assert intensities_text(baseline) == "global 1"


def test_best_so_far_by_wall_time_follows_the_clock_not_the_trial_numbers():
    import pandas as pd

    from tuner.report.convergence import best_so_far

    # Trials asked ahead finish out of trial order: trial 2 was measured before trial 1.
    rows = pd.DataFrame({"trial": [0, 1, 2], "wall_offset_s": [1.0, 3.0, 2.0], "status": ["ok"] * 3,
                         "performance": [10.0, 30.0, 20.0]})
    by_wall = best_so_far(rows, "wall_offset_s")
    assert list(by_wall["wall_offset_s"]) == [1.0, 2.0, 3.0] and list(by_wall["best"]) == [10.0, 20.0, 30.0]
    assert list(best_so_far(rows)["best"]) == [10.0, 30.0, 30.0]


@pytest.mark.slow
def test_figures_drawn_by_several_processes_are_the_same_report(tmp_path):
    alone, parallel = tmp_path / "alone", tmp_path / "parallel"
    shutil.copytree(SHIPPED, alone)
    shutil.copytree(SHIPPED, parallel)
    # No deadline for the importances: on a busy machine one process would reach fewer of them than the other.
    one = write_report(alone, quiet=True, jobs=1, importances_deadline_s=math.inf)
    several = write_report(parallel, quiet=True, jobs=3, importances_deadline_s=math.inf)
    assert [p.name for p in several] == [p.name for p in one]
    for path in several[:-1]:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png_size(path) == png_size(alone / path.name)
    page = several[-1].read_text()
    assert page.count("data:image/png;base64,") == len(several) - 1


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG file's header chunk."""
    header = path.read_bytes()[16:24]
    return int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")


def test_wide_tables_show_their_key_ratio_columns_first(reported_folder, written):
    from tuner.report.tables import predicted_vs_achieved, top_configurations

    run = load_run(reported_folder)
    _, top = top_configurations(run)[0]
    assert top.columns[:7] == ["#", "family", "parameters", "GFLOP/s", "% compute peak", "% bandwidth peak",
                               "median ms"]
    assert {top.columns[i] for i in top.numeric} >= {"#", "GFLOP/s", "median ms", "registers"}
    assert "parameters" not in {top.columns[i] for i in top.numeric}
    bounds = predicted_vs_achieved(run)
    assert bounds.columns[:5] == ["problem", "dtype", "class", "best achieved", "achieved / Fermi-like"]
    first = bounds.rows[0]
    assert first[4].endswith(" %") and float(first[3].replace(",", "")) > 0
    page = (reported_folder / "report.html").read_text()
    assert "th { background: #eef0f3; }" in page  # headers wrap instead of widening the table
