"""The PNGs explain themselves: every mark on a roofline has one meaning (its own shape, named in the legend) and
the convergence plot's y tick labels show the ticks as they are (2.5 as 2.5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

import tuner
from tuner.report.convergence import TickLabels
from tuner.report.roofline import BEST_MARKER, BOUND_MARKER, PROBLEM_MARKERS, RIDGE_MARKER, roofline_figure
from tuner.report.run_folder import load_run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("marks") / "fermi"
    tuner.run(ROOT / "experiments" / "fermi_like.yaml", backend="replay", strategy="random", trials=6, out=out,
              quiet=True, report=False)
    return load_run(out)


def _marker(artist) -> str:
    return artist.get_marker() if isinstance(artist, Line2D) else ""


def test_each_roofline_mark_has_a_shape_of_its_own(run):
    fig: Figure = roofline_figure(run)
    lines = [line for ax in fig.axes for line in ax.get_lines()]
    ridges = {_marker(line) for line in lines if str(line.get_gid()).startswith("ridge-")}
    bounds = {_marker(line) for line in lines
              if str(line.get_gid()).startswith("bound-") and line.get_gid() != "bound-gap"}
    assert ridges == {RIDGE_MARKER} and bounds == {BOUND_MARKER}
    shapes = {RIDGE_MARKER, BOUND_MARKER, BEST_MARKER, "*"}
    assert len(shapes) == 4 and not shapes & set(PROBLEM_MARKERS)  # no shape shared with the evaluations
    legend = fig.axes[0].get_legend()
    handles = {text.get_text(): handle for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)}
    assert _marker(handles["best configuration"]) == BEST_MARKER
    assert _marker(handles["bound of each class on the model (GFLOP/s)"]) == BOUND_MARKER
    assert _marker(handles["ridge point (where a roof's slope meets its peak)"]) == RIDGE_MARKER
    assert isinstance(handles["naive"], Patch)  # a class is a colour, not a circle
    assert sum(_marker(h) == "o" for h in handles.values()) == 1  # the first problem's evaluations alone


@pytest.mark.parametrize(("ticks", "labels"), [
    ([0, 0.5, 1.0, 1.5, 2.0, 2.5], ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5"]),
    ([0, 0.25, 0.5], ["0.00", "0.25", "0.50"]),
    ([0, 2000, 4000], ["0", "2,000", "4,000"]),
])
def test_convergence_tick_labels_keep_the_decimals_the_ticks_need(ticks, labels):
    formatter = TickLabels()
    formatter.set_locs(ticks)
    assert [formatter(t) for t in ticks] == labels
