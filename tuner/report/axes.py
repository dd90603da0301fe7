"""Log axes that stay readable: decade ticks in plain numbers, the 2 and 5 ticks over short ranges, every tick of
the decade over ranges where those would be fewer than three, and evenly spaced ticks over a range narrower than the
step between two of those."""

from __future__ import annotations

import math

from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator


def _tick(value: float, _position: float) -> str:
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


MIN_LABELS = 3
"""The fewest labelled ticks an axis gets: with fewer, a reader cannot tell the scale."""


def _within(low: float, high: float, leading: tuple[int, ...]) -> int:
    """How many of the values ``leading``·10^k lie in [low, high]."""
    decades = range(math.floor(math.log10(low)), math.floor(math.log10(high)) + 1)
    return sum(1 for k in decades for digit in leading if low <= digit * 10.0 ** k <= high)


def _precise(value: float, _position: float) -> str:
    return f"{value:,.4g}"


def log_axis(axis: Axis, low: float, high: float) -> None:
    """Decade ticks labelled in plain numbers; over less than two decades every minor tick is drawn and the 2 and
    5 ticks are labelled, over more only the 2 and 5 ticks are drawn (each tick costs drawing time). Where that
    labels fewer than MIN_LABELS ticks, every tick of the decade (1, 2, ..., 9) is labelled, and where even those
    are too few, evenly spaced ticks are."""
    if _within(low, high, tuple(range(1, 10))) < MIN_LABELS:
        axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10], min_n_ticks=MIN_LABELS))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FuncFormatter(_precise))
        axis.set_minor_formatter(NullFormatter())
        return
    if _within(low, high, (1, 2, 5)) < MIN_LABELS:
        axis.set_major_locator(LogLocator(base=10, subs=tuple(range(1, 10)), numticks=30))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FuncFormatter(_tick))
        axis.set_minor_formatter(NullFormatter())
        return
    short = high / low < 100
    axis.set_major_locator(LogLocator(base=10, numticks=20))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10)) if short else (2, 5), numticks=20))
    axis.set_major_formatter(FuncFormatter(_tick))
    if short:
        axis.set_minor_formatter(FuncFormatter(lambda v, p: _tick(v, p) if round(v / 10 ** math.floor(
            math.log10(v) + 1e-9)) in (2, 5) else ""))
    else:
        axis.set_minor_formatter(NullFormatter())


def log_log(ax: Axes, xlim: tuple[float, float], ylim: tuple[float, float]) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    log_axis(ax.xaxis, *xlim)
    log_axis(ax.yaxis, *ylim)
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)
