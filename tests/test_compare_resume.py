"""Ctrl-C in ``tuner compare``: the cells (a strategy's runs on a space with a budget) finished before it are kept in
the output folder, the message says so, and the same command goes on from them, running only the others."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from tests.test_compare_command import A100, toy_space
from tuner import cli
from tuner.compare import schedule
from tuner.compare.harness import BestSoFar, Convention
from tuner.compare.kept_runs import FOLDER, KeptRuns
from tuner.compare.schedule import RunSet

COMMAND = ["compare", str(A100), "--strategies", "random,ils", "--repeats", "3", "--budgets", "10,20",
           "--convention", "a", "--jobs", "1", "--quiet"]


class CountedRuns:
    """``schedule.run_one`` counted, raising KeyboardInterrupt on call number ``interrupt_at``."""

    def __init__(self, interrupt_at: int | None = None):
        self.calls, self.interrupt_at = 0, interrupt_at
        self.run_one = schedule.run_one

    def __call__(self, *args):
        self.calls += 1
        if self.calls == self.interrupt_at:
            raise KeyboardInterrupt
        return self.run_one(*args)


def fractions(out: Path) -> dict[tuple[str, str], str]:
    """The mean fraction of the optimum of each strategy at each budget (the runs of a budget are seeded)."""
    with (out / "comparison.csv").open() as stream:
        return {(row["strategy"], row["budget"]): row["mean"] for row in csv.DictReader(stream)}


@pytest.mark.slow  # whole comparisons, each writing its figures and page
def test_an_interrupted_comparison_keeps_its_finished_cells_and_goes_on_from_them(tmp_path, monkeypatch, capsys):
    whole, out = tmp_path / "whole", tmp_path / "resumed"
    counted = CountedRuns()
    monkeypatch.setattr(schedule, "run_one", counted)
    assert cli.main([*COMMAND, "--out", str(whole)]) == 0
    every = counted.calls  # two strategies: 3 runs of the largest budget and 3 for the methodology score each
    assert every == 12 and len(list((whole / FOLDER).glob("*.npz"))) == 4

    monkeypatch.setattr(schedule, "run_one", CountedRuns(interrupt_at=8))
    assert cli.main([*COMMAND, "--out", str(out)]) == 130
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert said == [f"interrupted: 2 finished cell(s) (a strategy's runs on a space with a budget) are kept in "
                    f"{out / FOLDER}; run the same command again to go on from them"]
    assert not (out / "comparison.csv").exists()

    resumed = CountedRuns()
    monkeypatch.setattr(schedule, "run_one", resumed)
    assert cli.main([*COMMAND, "--out", str(out)]) == 0
    assert resumed.calls == every - 6
    assert fractions(out) == fractions(whole)

    again = CountedRuns()
    monkeypatch.setattr(schedule, "run_one", again)
    assert cli.main([*COMMAND, "--out", str(out), "--seed", "1"]) == 0
    assert again.calls == every  # other runs: nothing kept is theirs


@pytest.mark.slow  # whole comparisons, each writing its figures and page
def test_a_damaged_kept_cell_is_run_again(tmp_path, monkeypatch):
    out = tmp_path / "cmp"
    assert cli.main([*COMMAND, "--out", str(out)]) == 0
    damaged = sorted((out / FOLDER).glob("*.npz"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])
    counted = CountedRuns()
    monkeypatch.setattr(schedule, "run_one", counted)
    assert cli.main([*COMMAND, "--out", str(out)]) == 0
    assert counted.calls == 3


@pytest.mark.parametrize("command", ["report", "export", "device"])
def test_ctrl_c_in_another_command_says_what_is_true_for_it(command, tmp_path, capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    parser = cli.build_parser()
    argv = {"report": ["report", str(tmp_path)], "export": ["export", str(tmp_path), "--format", "t4"],
            "device": ["device", "--cpu"]}[command]
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    subparsers = next(a for a in parser._actions if a.dest == "command")
    subparsers.choices[command].set_defaults(handler=interrupted)
    assert cli.main(argv) == 130
    said = capsys.readouterr().err.strip()
    assert said.startswith("interrupted: ") and "\n" not in said
    assert "run the same command again to continue" not in said
    expected = {"report": "results there are untouched", "export": "files written so far are whole",
                "device": "nothing was cached"}[command]
    assert expected in said


@pytest.mark.slow  # whole comparisons, each writing its figures and page
def test_a_changed_strategy_runs_its_cells_again(tmp_path, monkeypatch):
    from tuner.compare import kept_runs

    package = tmp_path / "package"
    (package / "strategies").mkdir(parents=True)
    source = package / "strategies" / "uniform.py"
    source.write_text("# one version\n")
    monkeypatch.setattr(kept_runs, "PACKAGE", package)
    monkeypatch.setattr(kept_runs, "CODE", ("strategies",))
    out = tmp_path / "cmp"
    assert cli.main([*COMMAND, "--out", str(out)]) == 0
    for text, expected in (("# one version\n", 0), ("# another version\n", 12)):
        source.write_text(text)
        counted = CountedRuns()
        monkeypatch.setattr(schedule, "run_one", counted)
        assert cli.main([*COMMAND, "--out", str(out)]) == 0
        assert counted.calls == expected


def test_a_kept_cell_reads_back_as_its_runs_and_only_for_its_own_settings(tmp_path):
    kept = KeptRuns(tmp_path, {"toy": toy_space()})
    cell = RunSet("toy", Convention.VALID, "random", 4, None, 2, seed=7)
    runs = [BestSoFar(np.array([3.0, 2.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([5, 9, 1]),
                      np.array([1.1, 2.2, 3.3])),
            BestSoFar(np.array([np.inf]), np.array([1.0]), np.array([4]), np.array([1.0]), cut="stalled")]
    assert kept.get(cell) is None
    kept.keep(cell, runs)
    again = KeptRuns(tmp_path, {"toy": toy_space()}).get(cell)
    assert again is not None and [r.cut for r in again] == ["", "stalled"]
    for before, after in zip(runs, again, strict=True):
        for field in ("best_ms", "cost_s", "candidates", "elapsed_s"):
            assert np.array_equal(getattr(before, field), getattr(after, field))
    for other in (dataclasses.replace(cell, seed=8), dataclasses.replace(cell, budget=5),
                  dataclasses.replace(cell, strategy="ils"), dataclasses.replace(cell, convention=Convention.PRODUCT)):
        assert kept.get(other) is None
