"""A line of progress on stderr that is rewritten as the work goes on, drawn by tqdm.

On a terminal it is tqdm's line, rewritten in place; in Jupyter tqdm's widget where ipywidgets is installed (else
tqdm's line, which Jupyter rewrites in place too); anywhere else (a log file, CI) a whole line every few seconds
and at the end, so that a log holds no carriage returns. The caller writes the text (fitted to :meth:`width`) and
says how far the work is; ``quiet`` shows nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import sys
import time
from typing import Any, TextIO

from tqdm import tqdm

PLAIN_INTERVAL_S = 5.0
"""Where the line cannot be rewritten: the least time between two lines."""
NARROWEST = 20
"""The fewest columns a line is fitted to, whatever the terminal says."""
UNTRIMMED = 100_000
"""tqdm's width for a line not fitted to a terminal, and its height (tqdm cuts a line at its width, and hides
a line past its height)."""


def duration(seconds: float) -> str:
    """``1:05`` or ``2:00:05``."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def in_jupyter() -> bool:
    """Whether this process is a Jupyter kernel (whose stderr is shown in the notebook, not a terminal)."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    kernel = get() if get is not None else None
    return kernel is not None and "IPKernelApp" in getattr(kernel, "config", {})


def _bar_class(stream: TextIO) -> type[tqdm] | None:
    """tqdm's class that draws on ``stream``, or None where the line cannot be rewritten."""
    if in_jupyter():
        if importlib.util.find_spec("ipywidgets") is not None:
            from tqdm.notebook import tqdm as notebook_bar

            return notebook_bar
        return tqdm
    return tqdm if bool(getattr(stream, "isatty", lambda: False)()) else None


class LiveLine:
    """One line of progress: :meth:`show` rewrites it, :meth:`note` puts a line of its own above it, :meth:`close`
    leaves its last text."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None, every_s: float = PLAIN_INTERVAL_S):
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self._bar_class = None if quiet else _bar_class(self.stream)
        self._bar: tqdm | None = None
        self._last_plain = 0.0
        self._text = ""

    def width(self) -> int | None:
        """The columns a line may take on a terminal (one short of its width, so that it never wraps: a wrapped
        line would leave a cut-off copy per update); None where lines are not rewritten or not on a terminal."""
        if self._bar_class is not tqdm or in_jupyter():
            return None
        return max(NARROWEST, shutil.get_terminal_size((80, 24)).columns - 1)

    def start(self, total: int | None, done: int = 0) -> None:
        """A new piece of work: ``total`` steps (None: unknown), ``done`` of them already done."""
        self.close_bar()
        self._last_plain = 0.0
        if self._bar_class is not None:
            width = self.width()  # tqdm would trim to the size a terminal reports, 0 for some pseudo-terminals
            size = {"ncols": UNTRIMMED if width is None else width + 1, "nrows": UNTRIMMED} \
                if self._bar_class is tqdm else {}  # the widget's ncols would be its width in pixels
            self._bar = self._bar_class(total=total, initial=done, file=self.stream, bar_format="{desc}",
                                        leave=True, mininterval=0.0, **size)

    def show(self, text: str, done: int, force: bool = False) -> None:
        """The line now reads ``text``, with ``done`` steps done (printed where lines are not rewritten when the
        last was printed ``every_s`` ago, or ``force``)."""
        self._text = text
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.n = done
            self._bar.set_description_str(text, refresh=True)
        elif force or time.monotonic() - self._last_plain >= self.every_s:
            self._last_plain = time.monotonic()
            self._write(f"{text}\n")

    def close(self, text: str) -> None:
        """The work is over: the line reads ``text`` and stays."""
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.set_description_str(text, refresh=True)
            self.close_bar()
        else:
            self._write(f"{text}\n")

    def close_bar(self) -> None:
        if self._bar is not None:
            with contextlib.suppress(Exception):  # a notebook's widget may be gone with its output
                self._bar.close()
            self._bar = None

    def note(self, text: str) -> None:
        """A line of its own, above the progress line where one is shown."""
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.clear()
            self._write(f"{text}\n")
            self._bar.refresh()
        else:
            self._write(f"{text}\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def __enter__(self) -> LiveLine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close_bar()
