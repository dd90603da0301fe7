"""Recordings and options that ``compare`` cannot score are one paragraph naming the file, with exit status 2:
never a ZeroDivisionError, a scikit-learn traceback, silently merged configurations or inf/NaN scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tuner.errors import TunerError
from tuner.recorded import load_recorded


def _cache(values: list, times: list[float], costs: list[float] | None = None) -> dict:
    records = {}
    for value, time, cost in zip(values, times, costs or [100.0] * len(values), strict=True):
        records[json.dumps(value)] = {"A": value, "time": time, "times": [time], "compile_time": cost}
    return {"device_name": "X", "kernel_name": "k", "problem_size": [8, 8, 8], "tune_params_keys": ["A"],
            "tune_params": {"A": values}, "cache": records}


GRADED = list(range(40)), [1.0 + (v - 7) ** 2 for v in range(40)]


def _without_costs(document: dict) -> dict:
    for record in document["cache"].values():
        del record["times"], record["compile_time"]
    return document


CASES = [
    ("a recorded time of 0", _cache([1, 2, 4], [0.0, 1.0, 2.0]),
     "field 'cache.1': field 'time' is 0.0 ms; a time must be finite"),
    ("1 and true", _cache([1, True, 2], [1.0, 2.0, 3.0]), "the values 1 and true are listed apart"),
    ("1 and 1.0", _cache([1, 1.0, 2], [1.0, 2.0, 3.0]), "the values 1 and 1.0 are listed apart"),
    ("an integer past 64 bits", _cache([1, 2**63], [1.0, 2.0]), f"the value {2**63} is beyond the 64-bit"),
    ("one configuration", _cache([1], [1.0]), "too few or too alike to score"),
    ("all alike", _cache(list(range(20)), [1.0] * 20), "too few or too alike to score"),
    ("no recorded cost", _without_costs(_cache(*GRADED)), "records no compile or benchmark time"),
]


@pytest.mark.slow
def test_a_space_whose_time_axis_holds_too_few_evaluations_is_compared_without_p(tmp_path):
    path = tmp_path / "space.json"
    path.write_text(json.dumps(_cache([1, 2], [1.0, 2.0])))
    done = run_cli("compare", str(path), "--repeats", "3", "--budgets", "2", "--jobs", "1", "--out",
                   str(tmp_path / "cmp"), timeout=120)
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "cmp" / "comparison.txt").read_text()
    assert "P not scored (a run has fewer than two evaluations inside the time axis)" in table


@pytest.mark.parametrize(("document", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.slow
def test_a_recording_compare_cannot_score_is_refused(tmp_path, document, words):
    path = tmp_path / "space.json"
    path.write_text(json.dumps(document))
    done = run_cli("compare", str(path), "--repeats", "3", "--budgets", "5", "--jobs", "1", "--out",
                   str(tmp_path / "cmp"), timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: ") and words in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_merged_values_are_refused_as_the_recording_is_read(tmp_path):
    path = tmp_path / "space.json"
    path.write_text(json.dumps(_cache([1, True, 2], [1.0, 2.0, 3.0])))
    with pytest.raises(TunerError, match="parameter 'A'"):
        load_recorded(path)


@pytest.mark.slow
def test_a_negative_seed_is_refused(tmp_path):
    path = tmp_path / "space.json"
    path.write_text(json.dumps(_cache(*GRADED)))
    done = run_cli("compare", str(path), "--seed", "-5", "--out", str(tmp_path / "cmp"), timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: --seed must be a whole number ≥ 0, not -5"]


@pytest.mark.slow
def test_a_small_space_that_can_be_scored_is_scored(tmp_path):
    path = tmp_path / "space.json"
    path.write_text(json.dumps(_cache(*GRADED)))
    out = tmp_path / "cmp"
    done = run_cli("compare", str(path), "--repeats", "3", "--budgets", "5,10", "--jobs", "1", "--strategies",
                   "ils", "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    text = (out / "comparison.txt").read_text()
    assert "nan" not in text and "inf" not in text


def _json_nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.slow
def test_a_recording_nested_too_deeply_is_refused(tmp_path: Path):
    path = tmp_path / "deep.json"
    path.write_text(_json_nested(100_000))
    done = run_cli("compare", str(path), "--out", str(tmp_path / "cmp"), timeout=60)
    assert done.returncode == 2 and "nests too deeply" in done.stderr and "Traceback" not in done.stderr
