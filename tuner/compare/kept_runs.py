"""The runs of a comparison kept in its output folder cell by cell, so that an interrupted comparison goes on where
it stopped.

A cell is one set of runs (:class:`tuner.compare.schedule.RunSet`): a strategy on a space under a convention, with
a budget of evaluations or a time limit. When its last run ends, its runs are written to ``runs/<digest>.npz`` in
the output folder: numpy arrays only, read back without pickle. The digest covers what the runs depend on: the
space's recorded configurations, statuses, times and costs, the convention, the strategy, the budget or time
limit, the number of runs and their seed, and the code that makes them (the strategies' and the harness' sources,
Optuna's and Kernel Tuner's versions), so that a changed strategy runs again. A later comparison into the same folder
takes the cells it asks for from there and runs the others; a file that cannot be read, or holds other runs, is run
again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from tuner import atomic_file
from tuner.compare.harness import BestSoFar
from tuner.compare.schedule import RunSet
from tuner.recorded import RecordedSpace

FOLDER = "runs"
FIELDS = ("best_ms", "cost_s", "candidates", "elapsed_s")
PACKAGE = Path(__file__).resolve().parent.parent
CODE = ("strategies", "compare/harness.py", "compare/schedule.py", "compare/kernel_tuner_peer.py",
        "compare/kernel_tuner_bound.py")
"""The package's sources a run depends on (folders: every module in them), under ``tuner/``."""


def code_digest() -> str:
    """A digest of the code that makes the runs: the sources CODE names, Optuna's and Kernel Tuner's versions."""
    digest = hashlib.sha256()
    for name in CODE:
        place = PACKAGE / name
        for path in sorted(place.rglob("*.py")) if place.is_dir() else [place]:
            digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    for package in ("optuna", "kernel_tuner"):
        with contextlib.suppress(PackageNotFoundError):
            digest.update(f"{package} {version(package)}".encode())
    return digest.hexdigest()


def space_digest(space: RecordedSpace) -> str:
    """A digest of what a strategy's runs on ``space`` depend on."""
    digest = hashlib.sha256(json.dumps([space.names, [list(map(repr, v)) for v in space.values]]).encode())
    for array in (space.indices, space.time_ms, space.cost_s):
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update("\0".join(map(str, space.status)).encode())
    return digest.hexdigest()


class KeptRuns:
    """The cells kept in ``out``/runs for the spaces of one comparison."""

    def __init__(self, out: Path, spaces: dict[str, RecordedSpace]):
        self.folder = out / FOLDER
        self.spaces = {name: space_digest(space) for name, space in spaces.items()}
        self.code = code_digest()
        self.reused = 0
        """The cells taken from the folder."""
        self.kept = 0
        """The cells written to it."""

    def path(self, chosen: RunSet) -> Path:
        key = [self.code, self.spaces[chosen.space], chosen.convention.value, chosen.strategy, chosen.budget,
               chosen.time_limit_s, chosen.runs, chosen.seed]
        return self.folder / f"{hashlib.sha256(json.dumps(key).encode()).hexdigest()[:24]}.npz"

    def get(self, chosen: RunSet) -> list[BestSoFar] | None:
        """The cell's runs, when the folder keeps them."""
        path = self.path(chosen)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as stored:
                runs = _unpacked({name: stored[name] for name in (*FIELDS, "lengths", "cut")})
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            return None
        if len(runs) != chosen.runs:
            return None
        self.reused += 1
        return runs

    def keep(self, chosen: RunSet, runs: list[BestSoFar]) -> None:
        """Write the cell's runs (a folder that cannot be written keeps nothing, and the comparison goes on)."""
        arrays = {name: np.concatenate([getattr(run, name) for run in runs]) if runs else np.zeros(0)
                  for name in FIELDS}
        arrays["lengths"] = np.array([run.evaluations for run in runs], dtype=np.int64)
        arrays["cut"] = np.array([run.cut for run in runs], dtype=str)
        try:
            self.folder.mkdir(exist_ok=True)
            atomic_file.replace_with(self.path(chosen), lambda partial: _save(partial, arrays))
        except OSError:
            return
        self.kept += 1


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with path.open("wb") as stream:
        np.savez(stream, **arrays)  # type: ignore[arg-type]


def _unpacked(stored: dict[str, np.ndarray]) -> list[BestSoFar]:
    ends = np.cumsum(stored["lengths"])
    if ends.size and any(len(stored[name]) != ends[-1] for name in FIELDS):
        raise ValueError("the arrays do not match the runs' lengths")
    starts = ends - stored["lengths"]
    return [BestSoFar(best_ms=stored["best_ms"][start:end], cost_s=stored["cost_s"][start:end],
                      candidates=stored["candidates"][start:end], elapsed_s=stored["elapsed_s"][start:end],
                      cut=str(cut))
            for start, end, cut in zip(starts, ends, stored["cut"], strict=True)]
