"""Restrictions as data: checked expressions, evaluated without eval, applied to recordings; the benchmark_hub
spaces with their T1 restrictions."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from tuner.errors import TunerError
from tuner.kernels.restrictions import parse_restriction, satisfied
from tuner.recorded import load_recorded
from tuner.recorded.t1 import read_t1, t1_parameters, t1_restrictions, with_restrictions

RECORDED = Path(__file__).resolve().parents[1] / "experiments" / "data" / "recorded"
HUB_SPACES = [f"{kernel}_{gpu}" for kernel in ("convolution", "dedispersion") for gpu in ("A100", "A4000", "MI250X")]
NAMES = ("a", "b", "c")
GRID = np.array(list(itertools.product((-3, 0, 1, 2, 5), repeat=3)), dtype=float)


def python_truth(text: str, row: np.ndarray) -> bool:
    """What Python makes of the expression (the test's own literals), a division by zero breaking it."""
    try:
        return bool(eval(text, {"__builtins__": {}}, dict(zip(NAMES, row.tolist(), strict=True))))
    except ZeroDivisionError:
        return False


@pytest.mark.parametrize("text", [
    "a * b <= 4", "32 <= a * b <= 1024", "-a < b < c", "not a", "(a or b) and not c", "a ** 2 + b > c or c",
    "b == 0 or a % b == 0", "b != 0 and a // b > 1", "a / b > 1 or c", "1 < a / b < c", "a % 32 != 0",
    "use == 0 or (a * 2 + 14) * (b + 14) < 12 * 1024".replace("use", "c"),
])
def test_an_expression_holds_where_python_says_it_does(text):
    restriction = parse_restriction(text, NAMES, "test")
    columns = {name: GRID[:, j] for j, name in enumerate(NAMES)}
    assert restriction.holds(columns).tolist() == [python_truth(text, row) for row in GRID]


@pytest.mark.parametrize("text, what", [
    ("__import__('os').system('true')", "a call"), ("a.real > 1", "an attribute"), ("[a][0]", "a subscript"),
    ("a if b else c", "a conditional expression"), ("d > 1", "the name 'd'"), ("a ** b", "a power"),
    ("a ** 65", "a power"), ("'x' == a", "the constant 'x'"), ("a in (1, 2)", "the comparison 'in'"),
    ("a << 2", "the operator '<<'"), ("(lambda: 1)()", "a call"), ("a := 3", "not a Python expression"),
])
def test_anything_but_arithmetic_comparisons_and_logic_is_refused(text, what):
    with pytest.raises(TunerError, match="f.json: field 'restrictions\\[0\\]'") as error:
        parse_restriction(text, NAMES, "f.json: field 'restrictions[0]'")
    assert what in str(error.value)


def toy_cache(restrictions: object) -> dict:
    cache = {}
    for a, b in itertools.product((1, 2, 4), (8, 16)):
        cache[f"{a},{b}"] = {"a": a, "b": b, "time": float(a * b), "times": [float(a * b)], "compile_time": 1.0}
    return {"device_name": "Toy", "kernel_name": "toy", "problem_size": [1], "tune_params_keys": ["a", "b"],
            "tune_params": {"a": [1, 2, 4], "b": [8, 16]}, "restrictions": restrictions, "cache": cache}


def test_a_recording_keeps_only_the_configurations_its_restrictions_allow(tmp_path):
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(toy_cache(["a * b <= 32", "a != 2 or b == 8"])))
    space = load_recorded(path)
    assert space.restrictions == ("a * b <= 32", "a != 2 or b == 8")
    kept = {tuple(space.params_of(row).values()) for row in range(len(space))}
    assert kept == {(1, 8), (1, 16), (2, 8), (4, 8)}
    assert space.optimum_ms == 8.0


@pytest.mark.parametrize("restrictions, message", [
    ("a > 1", "field 'restrictions' must list"),
    (["a > 1", "open('x')"], "field 'restrictions[1]': 'open('x')' holds a call"),
    (["a > = 1"], "field 'restrictions[0]': 'a > = 1' is not a Python expression"),
    ([3], "field 'restrictions[0]' must be an expression in text"),
])
def test_a_bad_restriction_is_named_by_file_and_field(tmp_path, restrictions, message):
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(toy_cache(restrictions)))
    with pytest.raises(TunerError, match="toy.json") as error:
        load_recorded(path)
    assert message in str(error.value)


def test_t1_conditions_become_a_recordings_restrictions():
    t1 = read_t1(RECORDED / "dedispersion_milo_T1.json")
    assert t1_restrictions(t1, "t1")[0] == "32 <= block_size_x * block_size_y <= 1024"
    cache = json.loads(gzip.decompress((RECORDED / "dedispersion_A100.json.gz").read_bytes()))
    assert list(with_restrictions(cache, t1, "t1"))[-2:] == ["restrictions", "cache"]
    t1["ConfigurationSpace"]["TuningParameters"][0]["Values"] = "[1, 2]"
    with pytest.raises(TunerError, match="parameters and values are not those of the recording"):
        with_restrictions(cache, t1, "t1")


@pytest.mark.parametrize("name", [
    # the dedispersion spaces, 11,130 configurations each, run with the slow tests; the convolution ones check the
    # same in the fast lane
    pytest.param(name, marks=pytest.mark.slow) if name.startswith("dedispersion") else name for name in HUB_SPACES])
def test_each_benchmark_hub_space_records_exactly_the_configurations_its_t1_restrictions_allow(name):
    space = load_recorded(RECORDED / f"{name}.json.gz")
    t1 = read_t1(RECORDED / f"{name.split('_')[0]}_milo_T1.json")
    assert list(space.restrictions) == t1_restrictions(t1, "t1")
    assert {n: list(v) for n, v in zip(space.names, space.values, strict=True)} == t1_parameters(t1, "t1")
    everything = np.array(list(itertools.product(*space.values)), dtype=float)
    allowed = satisfied([parse_restriction(r, space.names, "t1") for r in space.restrictions],
                        {n: everything[:, j] for j, n in enumerate(space.names)})
    assert np.array_equal(np.sort(space.keys), np.flatnonzero(allowed))  # keys count in product order
    assert len(space) == {"convolution": 4362, "dedispersion": 11130}[name.split("_")[0]]
    assert space.device  # the MI250X files name no device at the source; the copies do
