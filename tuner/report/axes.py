"""Log axes that stay readable: decade ticks in plain numbers, and the 2 and 5 ticks over short ranges."""

from __future__ import annotations

import math

from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter


def _tick(value: float, _position: float) -> str:
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def log_axis(axis: Axis, low: float, high: float) -> None:
    """Decade ticks labelled in plain numbers; over less than two decades every minor tick is drawn and the 2 and
    5 ticks are labelled, over more only the 2 and 5 ticks are drawn (each tick costs drawing time)."""
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
