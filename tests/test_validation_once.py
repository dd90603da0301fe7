"""Reading an experiment resolves its families once and builds each kernel entry's space once; the run makes its
studies once over those very spaces, and no stage between the file and the search looks a family up by name
again."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from scripted_backend import ScriptedBackend

import tuner
from tuner.config import Problem
from tuner.kernels import discovery
from tuner.search.study_space import study_spaces
from tuner.space import entry_space

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"
CHECKING_STAGES = ("tuner.experiment.", "tuner.space.", "tuner.search.", "tuner.recorded.")
"""The stages that read, check and search an experiment: they use the families the reading resolved."""
PER_CONFIGURATION = {"tuner.kernels.model", "tuner.kernels.render", "tuner.results.analytics", "tuner.tuning.progress"}
"""Where a measured configuration, which names its family, has it looked up: its cost, launch, row and progress."""
RECORDED = ROOT / "experiments" / "recorded_gemm_a100.yaml"


@contextlib.contextmanager
def calls(*functions: Callable[..., Any]) -> Iterator[Counter[tuple[str, str]]]:
    """(function, calling module) -> how many calls, in every thread, while the block runs."""
    codes = {function.__code__: function.__name__ for function in functions}
    counted: Counter[tuple[str, str]] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes and frame.f_back is not None:
            counted[codes[frame.f_code], frame.f_back.f_globals.get("__name__", "?")] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield counted
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def total(counted: Counter[tuple[str, str]], name: str) -> int:
    return sum(n for (function, _), n in counted.items() if function == name)


def from_checking_stages(counted: Counter[tuple[str, str]], name: str) -> dict[str, int]:
    return {caller: n for (function, caller), n in counted.items()
            if function == name and caller.startswith(CHECKING_STAGES)}


WATCHED = (discovery.get_family, entry_space.entry_space, entry_space.build_entry_space, study_spaces)


@pytest.mark.parametrize("path", [FERMI, pytest.param(RECORDED, marks=pytest.mark.slow)], ids=["fermi", "recorded"])
def test_a_read_and_a_replayed_run_build_each_entry_space_once(tmp_path, path):
    with calls(*WATCHED) as reading:
        experiment = tuner.load_experiment(path)
    assert total(reading, "get_family") == 0  # the families are resolved once, for the whole reading
    assert total(reading, "build_entry_space") == len(experiment.kernels)
    with calls(*WATCHED) as running:
        tuner.run(experiment, backend="replay", trials=3, out=tmp_path / "run", quiet=True, report=False,
                  summary=False)
    assert total(running, "build_entry_space") == total(running, "entry_space") == 0
    assert total(running, "study_spaces") == 1  # checked against the recording, then searched
    callers = {caller for function, caller in running if function == "get_family"}
    assert callers <= PER_CONFIGURATION | {"tuner.kernels.discovery"}  # and the template's hash, by name
    searched = {id(entry) for space in study_spaces(experiment) for entry, _ in space.valid.segments}
    assert searched == {id(space) for space in experiment.spaces}


def test_an_experiment_built_in_python_is_checked_once_and_runs_on_the_spaces_its_check_built(tmp_path):
    built = tuner.Experiment("notebook", (Problem(256, 256, 256),),
                             (tuner.KernelSpec("tiled", {"TILE_WIDTH": (8, 16, 32)}, ("float32",)),
                              tuner.KernelSpec("naive", {"BLOCK_X": (8, 16), "BLOCK_Y": (4, 8)}, ("float32",))))
    assert built.spaces == ()
    with calls(*WATCHED) as running:
        tuner.run(built, backend=ScriptedBackend(), trials=3, out=tmp_path / "run", quiet=True, report=False)
    assert total(running, "build_entry_space") == 2
    assert from_checking_stages(running, "get_family") == {}


def test_an_experiment_whose_kernels_are_replaced_after_its_check_searches_its_new_kernels(tmp_path):
    experiment = tuner.load_experiment(FERMI)
    fewer = dataclasses.replace(experiment.kernels[1], values={"TILE_WIDTH": (16,)})
    changed = dataclasses.replace(experiment, kernels=(fewer,))
    assert changed.spaces is experiment.spaces  # carried over by the replacement, but no longer its entries'
    (entry,) = entry_space.entry_spaces(changed)
    assert entry.spec == fewer and entry.values == ((16,),)
    assert [len(space.valid) for space in study_spaces(changed)] == [1, 1, 1]
    with calls(*WATCHED) as running:
        df = tuner.run(changed, backend=ScriptedBackend(), out=tmp_path / "run", quiet=True, report=False).df
    assert total(running, "build_entry_space") == 1
    assert set(df.loc[df["family"] != "baseline", "config_key"].str.split("/").str[-1]) == {"TILE_WIDTH=16"}
