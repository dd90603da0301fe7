"""Text drawn as it is written.

Matplotlib reads text between two ``$`` as mathematics: a name holding them (an experiment called ``$x^$``, a
machine model, a recorded device or parameter value) would be drawn as a formula, or stop the figure from being
drawn at all. Every text a figure holds is drawn literally, except what the numeric tick formatters write
(``10³`` on a log axis is mathematics on purpose); the tick labels of any other formatter (the values of a parameter,
given as text) have their ``$`` escaped.
"""

from __future__ import annotations

from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import Formatter, FuncFormatter, LogFormatter, NullFormatter, ScalarFormatter


def escaped(text: str) -> str:
    """``text`` with every ``$`` escaped, so that it is never read as mathematics."""
    return str(text).replace("$", r"\$")


def _escaping(formatter: Formatter) -> Formatter:
    return FuncFormatter(lambda value, position: escaped(formatter(value, position)))


def _numeric_texts(axis: Axis) -> set[int]:
    """The tick labels and offset text of the axis, whose formatters write numbers: matplotlib's own numeric
    formatters may write mathematics; any other formatter's labels get their ``$`` escaped."""
    for which in ("major", "minor"):
        formatter = getattr(axis, f"get_{which}_formatter")()
        if not isinstance(formatter, ScalarFormatter | LogFormatter | NullFormatter):
            getattr(axis, f"set_{which}_formatter")(_escaping(formatter))
    ticks = [*axis.get_major_ticks(), *axis.get_minor_ticks()]
    return {id(text) for tick in ticks for text in (tick.label1, tick.label2)} | {id(axis.get_offset_text())}


def as_written(figure: Figure) -> Figure:
    """Make every text of ``figure`` but the numeric tick labels draw literally; the figure, for chaining."""
    formatted: set[int] = set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatted |= _numeric_texts(axis)
    for text in figure.findobj(Text):
        if id(text) not in formatted:
            text.set_parse_math(False)
    return figure
