"""Errors a user can fix: the CLI prints them as one paragraph and exits with status 2; a misspelt name in one gets
the closest known name (:func:`did_you_mean`).

An error names a setting as its caller does: :func:`parameter_name` for ``tuner.run``'s parameters (``trials``,
``backend='replay'``), :func:`option_name` for the command line's options (``--trials``, ``--backend replay``).

Ctrl-C is told once and truly: a command that knows more than its name tells (how many rows a run saved, which
cells of a comparison are kept) says it itself and raises :class:`Interrupted`, and the command line adds nothing;
otherwise the command line prints :func:`interrupted_text`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, Protocol


class Naming(Protocol):
    """How a caller names a setting, given the parameter's name and, where the message shows one, its value (a
    value in capitals, such as PATH, stands for one and is written as it is)."""

    def __call__(self, name: str, value: str | None = None) -> str: ...


def parameter_name(name: str, value: str | None = None) -> str:
    """``tuner.run``'s naming: the parameter's own name (``replay_pace``), with a value as Python writes it
    (``backend='replay'``, ``replay=PATH``)."""
    if value is None:
        return name
    return f"{name}={value}" if value.isupper() else f"{name}={value!r}"


def option_name(name: str, value: str | None = None) -> str:
    """The command line's naming: ``--replay-pace``, with a value as the shell takes it (``--backend replay``)."""
    option = "--" + name.replace("_", "-")
    return option if value is None else f"{option} {value}"


class TunerError(Exception):
    """A problem with the user's input or environment, told as one paragraph."""


class ExperimentError(TunerError):
    """A mistake in an experiment file, naming the file, the field path and (when known) the line."""

    def __init__(self, file: str, field: str, message: str, line: int | None = None):
        self.file, self.field, self.line = file, field, line
        where = f"{file}, line {line}" if line else file
        at = f"field '{field}'" if field else "the document"
        super().__init__(f"{where}: {at}: {message}")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C after the command has said what it kept and how to continue."""


def interrupted_text(command: str | None, folder: str | None = None) -> str:
    """What is true after Ctrl-C in the command line's ``command`` (``folder``: the run folder it was given), where
    the command did not say it itself (:class:`Interrupted`)."""
    texts = {
        "space": "nothing was written; with --compile the kernels compiled so far are cached, so running it again "
                 "compiles only the others",
        "run": "what the run recorded in its output folder is kept; run the same command again to continue",
        "report": f"the report in {folder} may be incomplete; the results there are untouched; run the same "
                  f"command again to write the whole report",
        "profile": f"the counters {folder} held before this command are kept, this command's may be lost; run the "
                   f"same command again to read the others",
        "compare": "the cells finished so far are kept in the output folder; run the same command again to go on",
        "export": "the files written so far are whole (each is written at once), others are missing; run the "
                  "same command again to write all of them",
        "device": "the ceilings measured so far are lost and nothing was cached; run the same command again",
    }
    return f"interrupted: {texts.get(command or '', 'run the same command again')}"


SUGGESTION_CUTOFF = 0.6
"""How alike (difflib's ratio) a known name must be to a misspelt one to be suggested."""


def did_you_mean(given: Any, known: Iterable[str]) -> str:
    """" (did you mean 'TILE_WIDTH'?)" for the known name closest to ``given``, or "" where none is close (or
    ``given`` is not text); the case of the letters counts for little."""
    if not isinstance(given, str) or not given:
        return ""
    names = [str(name) for name in known]
    by_case = {name.casefold(): name for name in names}
    close = difflib.get_close_matches(given.casefold(), list(by_case), n=1, cutoff=SUGGESTION_CUTOFF)
    return f" (did you mean '{by_case[close[0]]}'?)" if close and by_case[close[0]] != given else ""
