"""Parameter figures with hundreds of values: a heatmap of a thousand block shapes, a parameter of many numeric
values, and one of many named values. The rows are the report tests' fixture rows (invented times, see
tests/test_report.py) given other parameter values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import QuadMesh
from test_report import _add_records, build_run_folder

from tuner.config import Config, Problem
from tuner.report.parameters import MAX_BARS, MAX_TICKS, parameter_figure
from tuner.report.run_folder import load_run
from tuner.results import table as results

PROBLEM = Problem(1024, 1024, 1024)


@pytest.fixture(scope="module")
def block_shapes(tmp_path_factory) -> Path:
    """The fixture run and 600 naive block shapes of BLOCK_X 1-40 × BLOCK_Y 1-25 on one problem."""
    folder = build_run_folder(tmp_path_factory.mktemp("shapes"))
    rng = np.random.default_rng(3)
    shapes = [(x, y) for x in range(1, 41) for y in range(1, 26)]
    chosen = [shapes[i] for i in rng.choice(len(shapes), 600, replace=False)]
    _add_records(folder, [Config.make(PROBLEM, "naive", "float32", {"BLOCK_X": x, "BLOCK_Y": y}) for x, y in chosen])
    return folder


def test_a_heatmap_of_a_thousand_block_shapes_stays_readable(block_shapes):
    run = load_run(block_shapes)
    naive = run.kernels[(run.kernels["family"] == "naive") & (run.kernels["problem"] == PROBLEM.label)]
    xs, ys = ({p[name] for p in naive["params"]} for name in ("BLOCK_X", "BLOCK_Y"))
    fig = parameter_figure(run, "naive")
    ax = next(ax for ax in fig.axes if ax.get_title() == "1024x1024x1024, float32")
    (image,) = ax.get_images()
    assert image.get_array().shape == (len(ys), len(xs)) and len(xs) > 40
    assert not [t for t in ax.texts if t.get_gid() == "cell"]  # the colour bar reads the cells
    for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
        assert 5 <= len(labels) <= MAX_TICKS
    assert ax.get_xticklabels()[0].get_text() == "1"
    assert np.nanmax(image.get_array().filled(np.nan)) == pytest.approx(naive["gflops"].max())
    # Shapes evaluated but never ok are grey cells, not numbers.
    cells = naive.assign(x=[p["BLOCK_X"] for p in naive["params"]], y=[p["BLOCK_Y"] for p in naive["params"]])
    never_ok = (cells.groupby(["x", "y"])["status"].agg(lambda s: (s != "ok").all())).sum()
    (failed,) = [c for c in ax.collections if isinstance(c, QuadMesh) and c.get_gid() == "failed"]
    assert failed.get_array().count() == never_ok > 0


def _one_parameter_family(folder: Path, values: list, name: str = "WIDTH") -> None:
    """The fixture's tiled rows again as the family ``wide`` with one parameter of the given values."""
    df, metadata = results.load(folder)
    tiled = df[(df["family"] == "tiled") & (df["status"] == "ok")].reset_index(drop=True)
    rows = pd.concat([tiled] * (len(values) // len(tiled) + 1), ignore_index=True).head(len(values)).copy()
    rows["family"] = "wide"
    rows["p_TILE_WIDTH"] = pd.NA
    rows[f"p_{name}"] = pd.Series(values, dtype=object)
    rows["gflops"] = rows["performance"] = np.linspace(100.0, 900.0, len(values))
    rows["config_key"] = [f"{p}/wide/float32/{name}={v}" for p, v in zip(rows["problem"], values, strict=True)]
    df[f"p_{name}"] = pd.Series([None] * len(df), dtype=object)
    results.save(pd.concat([df, rows], ignore_index=True), metadata, folder)


def test_a_parameter_of_many_numbers_is_a_line_over_its_values(tmp_path):
    folder = build_run_folder(tmp_path)
    _one_parameter_family(folder, list(range(1, 61)))
    run = load_run(folder)
    (ax,) = [ax for ax in parameter_figure(run, "wide").axes if ax.get_xlabel()]
    assert ax.get_xlabel() == "WIDTH (60 values; a cross: never ok)"
    lines = [line for line in ax.get_lines() if line.get_gid() == "bars"]
    assert sum(len(line.get_xdata()) for line in lines) == 60
    assert max(float(np.nanmax(line.get_ydata())) for line in lines) == pytest.approx(900.0)


def test_a_parameter_of_many_names_shows_its_best_values(tmp_path):
    folder = build_run_folder(tmp_path)
    names = [f"order{i:02d}" for i in range(30)]
    _one_parameter_family(folder, names, "ORDER")
    run = load_run(folder)
    (ax,) = [ax for ax in parameter_figure(run, "wide").axes if ax.get_xlabel()]
    assert ax.get_xlabel() == f"ORDER (the {MAX_BARS} values with the highest best, of 30)"
    shown = [t.get_text() for t in ax.get_xticklabels()]
    assert len(shown) <= MAX_TICKS and shown[0] == "order06"  # the rates rise with the index: 6 to 29 are shown
    heights = [p.get_height() for c in ax.containers for p in c if p.get_height() > 0]
    assert len(heights) == MAX_BARS and min(heights) > 100.0 + 800.0 * 5 / 29


def test_a_parameter_of_one_value_gets_a_bar_of_a_third_of_its_panel(tmp_path):
    import shutil

    from tuner.report.parameters import MIN_SLOTS

    folder = tmp_path / "one_value"
    shutil.copytree(Path(__file__).resolve().parent.parent / "experiments/data/fermi_like_h100", folder)
    df = pd.read_parquet(folder / results.RESULTS_PARQUET)
    df = df[(df["family"] != "tiled") | (df["p_TILE_WIDTH"] == 16)]
    df.to_parquet(folder / results.RESULTS_PARQUET)
    fig = parameter_figure(load_run(folder), "tiled")
    (ax,) = fig.axes
    low, high = ax.get_xlim()
    bars = [patch for patch in ax.patches if patch.get_gid() == "bars"]
    assert bars and high - low >= MIN_SLOTS - 1e-9
    assert all(patch.get_width() / (high - low) <= 1 / MIN_SLOTS for patch in bars)
