"""Errors a user can fix: the CLI prints them as one paragraph and exits with status 2."""

from __future__ import annotations


class TunerError(Exception):
    """A problem with the user's input or environment, told as one paragraph."""


class ExperimentError(TunerError):
    """A mistake in an experiment file, naming the file, the field path and (when known) the line."""

    def __init__(self, file: str, field: str, message: str, line: int | None = None):
        self.file, self.field, self.line = file, field, line
        where = f"{file}, line {line}" if line else file
        at = f"field '{field}'" if field else "the document"
        super().__init__(f"{where}: {at}: {message}")
