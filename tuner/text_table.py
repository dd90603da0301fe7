"""Tables and notes printed on a terminal: aligned columns, and text wrapped to the terminal's width."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence

MIN_WIDTH = 80
MAX_WIDTH = 120


def terminal_width() -> int:
    """The terminal's width (COLUMNS, or 100 when the output is not a terminal), kept within 80–120 columns."""
    return max(MIN_WIDTH, min(MAX_WIDTH, shutil.get_terminal_size((100, 24)).columns))


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[int] = (),
                 indent: str = "  ") -> str:
    """Columns aligned on their widest cell; the columns numbered in ``right`` are right-aligned."""
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append(indent + "  ".join(parts).rstrip())
    return "\n".join(lines)


def stacked_table(header: Sequence[str], rows: Sequence[Sequence[object]], width: int, keep: int = 1,
                  indent: str = "") -> str:
    """Columns aligned as :func:`format_table` aligns them (all but the first ``keep`` right-aligned) within
    ``width`` columns: the columns that do not fit go on in a further block below, a blank line apart, each block
    starting with the first ``keep`` columns again."""
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    kept = len(indent) + sum(widths[:keep]) + 2 * keep
    blocks: list[list[int]] = []
    for i in range(keep, len(header)):
        used = kept + sum(widths[j] + 2 for j in blocks[-1]) if blocks else width + 1
        if used + widths[i] > width:
            blocks.append([])
        blocks[-1].append(i)
    return "\n\n".join(
        format_table([header[j] for j in (*range(keep), *block)],
                     [[row[j] for j in (*range(keep), *block)] for row in rows],
                     right=range(keep, keep + len(block)), indent=indent)
        for block in blocks or [[]])


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def wrapped(text: str, width: int, indent: str = "", hanging: str = "    ") -> str:
    """``text`` wrapped to ``width`` columns, its first line indented by ``indent``, the others by ``hanging``."""
    return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent + hanging,
                         break_on_hyphens=False)
