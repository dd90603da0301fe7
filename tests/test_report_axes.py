"""Log axes label at least three ticks whatever their range: decades, the 2 and 5 ticks, every tick of the decade,
or evenly spaced ticks over a range narrower than a step between those."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from tuner.report.axes import log_log  # noqa: E402


def _labels(low: float, high: float) -> list[str]:
    """The labels the x axis shows over [low, high], minor ticks' included."""
    figure = Figure()
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    log_log(ax, (low, high), (1, 1000))
    figure.canvas.draw()
    ticks = [*ax.xaxis.get_major_ticks(), *ax.xaxis.get_minor_ticks()]
    return [t.label1.get_text() for t in ticks
            if t.label1.get_visible() and t.label1.get_text() and low <= t.get_loc() <= high]


@pytest.mark.parametrize(("low", "high"), [(1.9, 2.2), (1.52, 1.75), (0.65, 2.5), (0.021, 0.026), (3000, 3400)])
def test_a_narrow_range_gets_at_least_three_labels(low, high):
    labels = _labels(low, high)
    assert len(labels) >= 3, labels
    assert len(set(labels)) == len(labels)  # as many distinct numbers as ticks: enough digits


def test_a_wide_range_keeps_its_decades():
    labels = _labels(0.1, 10_000)
    assert {"0.1", "1", "10", "100", "1,000", "10,000"} <= set(labels)
