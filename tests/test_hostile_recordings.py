"""Recordings are hostile data: a small file that would take unbounded memory, keys that would collide, and rows
that would replay an impossible number as ok all end in one paragraph naming the file and the record (exit 2) or
in a correct run."""

from __future__ import annotations

import gzip
import json
import math
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT, run_cli
from tuner.backends.replay.backend import ReplayBackend
from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.recorded import load_recorded
from tuner.recorded.limits import MAX_RUNS_PER_CONFIGURATION
from tuner.recorded.run_folder import load_run_folder

FERMI_RECORDING = ROOT / "experiments" / "data" / "fermi_like_h100"


def _record(values: dict, time: float = 1.0) -> dict:
    return {**values, "time": time, "times": [time, time], "compile_time": 10.0}


def _cache(a_values: list, b_values: list) -> dict:
    cache = {}
    for i, a in enumerate(a_values):
        for j, b in enumerate(b_values):
            cache[f"{a},{b}"] = _record({"A": a, "B": b}, 1.0 + (i - 1) ** 2 + (j - 2) ** 2)
    return {"device_name": "X", "kernel_name": "k", "problem_size": [8, 8, 8], "tune_params_keys": ["A", "B"],
            "tune_params": {"A": a_values, "B": b_values}, "cache": cache}


def _graded(side: int = 6) -> dict:
    return _cache(list(range(side)), list(range(side)))


def test_a_small_cache_with_a_million_runs_in_one_record_is_refused_within_bounded_memory(tmp_path):
    document = _graded(45)
    document["cache"]["0,0"]["times"] = [1.0] * 10**6
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    assert path.stat().st_size < 64 * 2**10
    tracemalloc.start()
    try:
        with pytest.raises(TunerError) as caught:
            load_recorded(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(caught.value) == (f"{path}: field 'cache.0,0.times' holds 1,000,000 timed runs, more than the "
                                 f"{MAX_RUNS_PER_CONFIGURATION:,} a recording may hold per configuration")
    assert peak < 512 * 2**20  # a matrix of every configuration × the longest list would take 15 GiB


@pytest.mark.slow
def test_compare_refuses_the_memory_bomb_at_once(tmp_path):
    document = _graded(45)
    document["cache"]["0,0"]["times"] = [1.0] * 10**6
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    done = run_cli("compare", str(path), "--out", str(tmp_path / "cmp"), timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "1,000,000 timed runs" in done.stderr


# --- keys that cannot collide -------------------------------------------------------------------------------

def test_configuration_keys_of_text_holding_commas_and_equals_signs_do_not_collide():
    problem = Problem(8, 8, 8)
    one = Config.make(problem, "k", "float32", {"A": "x,B=y", "B": "z"})
    other = Config.make(problem, "k", "float32", {"A": "x", "B": "y,B=z"})
    assert one.key != other.key
    assert Config.make(problem, "k", "float32", {"A": "1"}).key != Config.make(problem, "k", "float32", {"A": 1}).key
    assert Config.make(problem, "k", "float32", {"A": "True"}).key != \
        Config.make(problem, "k", "float32", {"A": True}).key
    assert Config.make(problem, "tiled", "float32", {"TILE": 16, "LAYOUT": "row_major"}).key == \
        "8x8x8/tiled/float32/LAYOUT=row_major,TILE=16"  # plain words and numbers keep the keys of earlier folders


@pytest.mark.slow
def test_a_recording_whose_values_hold_commas_and_equals_signs_runs_to_its_end(tmp_path):
    document = _cache(["x", "x,B=y"], ["y,B=z", "z", "="])
    (tmp_path / "collide.json").write_text(json.dumps(document))
    experiment = tmp_path / "exp.yaml"
    experiment.write_text("name: collide\nproblems: [{M: 8, N: 8, K: 8}]\nkernels:\n  - recorded: collide.json\n")
    done = run_cli("run", str(experiment), "--backend", "replay", "--out", str(tmp_path / "out"), "--quiet",
                   "--no-report", timeout=120)
    assert done.returncode == 0, done.stderr
    table = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert len(table) == 6 and table["config_key"].is_unique and set(table["status"]) == {"ok"}


# --- poisoned rows of a cache -------------------------------------------------------------------------------

POISONED = [
    ("NaN time", {"time": math.nan}, "field 'time' is nan ms; a time must be finite and at least 1e-06 ms"),
    ("negative time", {"time": -1.0}, "field 'time' is -1.0 ms; a time must be finite"),
    ("impossibly short time", {"time": 1e-35}, "field 'time' is 1e-35 ms; a time must be finite"),
    ("negative cost", {"compile_time": -5.0}, "field 'compile_time' is -5.0; a recorded duration must be a "
                                               "finite number, not negative"),
    ("unreadable runs", {"times": [1.0, "fast"]}, "field 'cache.2,2.times': run 1 is 'fast', not a time in ms"),
    ("key against values", {"A": 3, "B": 3}, "the key disagrees with the record's values, whose key is '3,3'"),
]


@pytest.mark.parametrize(("change", "words"), [c[1:] for c in POISONED], ids=[c[0] for c in POISONED])
def test_a_poisoned_cache_record_is_refused_naming_its_key(tmp_path, change, words):
    document = _graded()
    document["cache"]["2,2"].update(change)
    path = tmp_path / "poisoned.json"
    path.write_text(json.dumps(document))
    with pytest.raises(TunerError) as caught:
        load_recorded(path)
    assert str(caught.value).startswith(f"{path}: field 'cache.2,2") and words in str(caught.value)


def test_a_poisoned_t4_evaluation_is_refused_naming_it(tmp_path):
    results = [{"configuration": {"A": a}, "invalidity": "correct", "correctness": 1,
                "times": {"compilation": 1.0, "runtimes": [1.0]},
                "measurements": [{"name": "time", "value": -2.0 if a == 3 else 1.0 + a, "unit": "ms"}]}
               for a in range(5)]
    path = tmp_path / "t4.json"
    path.write_text(json.dumps({"schema_version": "1.0.0", "metadata": {"timeunit": "ms"}, "results": results}))
    with pytest.raises(TunerError, match=r"field 'results\[3\]'\.measurements: the time is -2\.0 ms"):
        load_recorded(path)


# --- poisoned rows of a recorded results table -------------------------------------------------------------

TABLE_POISONS = [
    ("NaN median", "time_median_ms", math.nan, "it is ok but its median time is None, not a time in ms"),
    ("negative median", "time_median_ms", -1.0, "it is ok but its median time is -1.0 ms"),
    ("unknown status", "status", "fine", "the status 'fine' is none of compile_error, crashed, invalid, ok, wrong"),
    ("unreadable samples", "samples_ms", "[1.0, oops", "column 'samples_ms' holds '[1.0, oops', not a JSON list"),
    ("negative compile time", "compile_time_s", -3.0, "column 'compile_time_s' is -3.0; a recorded duration"),
]


def _poisoned_folder(tmp_path: Path, column: str, value: object) -> Path:
    folder = tmp_path / "recording"
    folder.mkdir()
    table = pd.read_parquet(FERMI_RECORDING / "results.parquet")
    row = int(table.index[(table["status"] == "ok") & (table["family"] != "baseline")][0])
    table[column] = table[column].astype(object)
    table.at[row, column] = value
    table.to_parquet(folder / "results.parquet")
    (folder / "metadata.json").write_text((FERMI_RECORDING / "metadata.json").read_text())
    return folder


@pytest.mark.parametrize(("column", "value", "words"), [c[1:] for c in TABLE_POISONS],
                         ids=[c[0] for c in TABLE_POISONS])
def test_a_poisoned_row_of_a_recorded_table_is_never_replayed(tmp_path, column, value, words):
    folder = _poisoned_folder(tmp_path, column, value)
    for read in (ReplayBackend, load_run_folder):
        with pytest.raises(TunerError) as caught:
            read(folder)
        message = str(caught.value)
        assert message.startswith(f"{folder}: row ") and words in message, message
        assert "(configuration '" in message and "\n" not in message


def test_a_parameter_value_of_a_megabyte_of_text_is_refused(tmp_path):
    document = _cache(["x" * 2**20, "y"], [1, 2])
    path = tmp_path / "long.json"
    path.write_text(json.dumps(document))
    with pytest.raises(TunerError, match=r"parameter 'A': the text 'x{40}…' has 1,048,576 characters, more than the "
                                         r"256 a parameter's name or value may have"):
        load_recorded(path)
