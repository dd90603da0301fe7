"""The valid set built from per-rule truth tables equals checking every combination one by one."""

from __future__ import annotations

from collections import Counter

import pytest
from space_listing import kernel_space, valid_configs

from benchmarks.space_build import checked_one_by_one, count_one_by_one
from tuner.config import Config, Problem
from tuner.experiment.schema import load_experiment, parse_experiment
from tuner.kernels.discovery import get_family
from tuner.kernels.family import Constraint, Family, FamilyError, Parameter
from tuner.search.study import study_spaces
from tuner.space.entry_space import (
    EntrySpace,
    KernelSpec,
    build_entry_space,
    count_valid,
    violations,
)
from tuner.space.rule_table import tabulate
from tuner.tuning.space_command import print_space

ODD = Problem(1000, 777, 333)
REGBLOCK = {p.name: p.default for p in get_family("regblock").parameters}
# Values outside what the kernels accept, so that the guarded rules take their short paths too.
REGBLOCK_ODD = {**REGBLOCK, "BM": (0, 64, 128), "BN": (128,), "BK": (8, 32), "TM": (0, 8), "TN": (4, 8),
                "WARP_N": (0, 3, 16), "A_T": (0, 2, 3), "PAD": (2, 4), "VECTOR": (0, 2), "STAGES": (2, 5),
                "MIN_BLOCKS": (0, 2), "COPY_SPREAD": (0, 4), "OUTER_ORDER": (0, 3), "SCHEDULE": (0,)}
SPECS = {
    "regblock defaults": KernelSpec("regblock", REGBLOCK, ("float32", "float64")),
    "regblock out of range": KernelSpec("regblock", REGBLOCK_ODD, ("float64", "float32")),
    "naive": KernelSpec("naive", {"BLOCK_X": (8, 16, 32, 64), "BLOCK_Y": (4, 8, 16, 32, 64)},
                        ("float32", "float64", "int32")),
    "tiled": KernelSpec("tiled", {"TILE_WIDTH": (8, 16, 32, 48, 64)}, ("int32", "float64", "float32")),
}


def built(spec: KernelSpec, family: Family | None = None) -> EntrySpace:
    names = tuple(spec.values)
    return build_entry_space(family or get_family(spec.family), names, tuple(tuple(spec.values[n]) for n in names),
                             tuple(spec.dtypes))


def assert_same_as_one_by_one(spec: KernelSpec, family: Family | None = None) -> EntrySpace:
    family = family or get_family(spec.family)
    space = built(spec, family)
    reference = list(checked_one_by_one(spec, family))
    assert space.size == len(reference)
    assert space.valid_rows.tolist() == [i for i, (_, _, broken) in enumerate(reference) if not broken]
    total, valid, reasons = count_one_by_one(spec, family)
    assert (space.size, len(space.valid_rows)) == (total, valid)
    assert list(space.rejected_by.items()) == list(reasons.items())  # the same counts, in the same order
    for row, (_, _, broken) in enumerate(reference):
        assert space.broken(row) == broken
    return space


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.slow
def test_truth_tables_find_the_valid_set_and_the_rejections_of_checking_one_by_one(name):
    spec = SPECS[name]
    space = assert_same_as_one_by_one(spec)
    assert 0 < len(space.valid_rows) < space.size
    family = get_family(spec.family)
    reference = list(checked_one_by_one(spec, family))
    configs = [Config.make(ODD, spec.family, dtype, params) for dtype, params, broken in reference if not broken]
    assert list(kernel_space(spec, ODD).valid) == configs
    rejected = [Config.make(ODD, spec.family, dtype, params) for dtype, params, broken in reference if broken]
    assert list(kernel_space(spec, ODD).rejected) == rejected
    for dtype, params, broken in reference[::97]:
        assert violations(family, params, dtype) == broken


@pytest.mark.slow
def test_every_regblock_entry_of_the_h100_experiment(root):
    for spec in load_experiment(root / "experiments/h100_sgemm.yaml").kernels:
        space = assert_same_as_one_by_one(spec)
        assert count_valid(spec) == (space.size, len(space.valid_rows), space.rejected_by)


def toy(*constraints: Constraint, **values: tuple) -> tuple[Family, KernelSpec]:
    family = Family(
        name="toy", description="parameters and rules for the truth tables",
        parameters=tuple(Parameter(name, name, options) for name, options in values.items()),
        block=lambda p: (32, 1, 1), grid=lambda p, problem: (1, 1, 1), shared_bytes=lambda p, size: 0,
        global_bytes=lambda p, problem, size: 0, constraints=constraints,
    )
    return family, KernelSpec("toy", values, ("float32", "float64"))


def test_a_key_read_only_on_some_paths_joins_the_table():
    """The first combination (A=0) reads only A; B is read where A is not 0, and C never."""
    rule = Constraint("A is 0 or B even", lambda p, d: p["A"] == 0 or p["B"] % 2 == 0)
    family, spec = toy(rule, A=(0, 1, 2), B=(1, 2, 3), C=(5, 6))
    table = tabulate(rule.holds, ("A", "B", "C"), ((0, 1, 2), (1, 2, 3), (5, 6)), ("float32",))
    assert table.axes == (0, 1, 2)
    assert table.holds[0].tolist() == [[True, True, True], [False, True, False], [False, True, False]]
    space = assert_same_as_one_by_one(spec, family)
    assert len(space.valid_rows) == 2 * (3 + 1 + 1) * 2


def test_keys_read_through_the_mapping_protocol_and_the_dtype_on_some_paths():
    rules = (
        Constraint("sum below 9", lambda p, d: sum(v for k, v in p.items() if k != "C") < 9),
        Constraint("no D", lambda p, d: p.get("D", 0) == 0 and "D" not in p and len(p) == 3),
        Constraint("float64 needs B ≥ 2", lambda p, d: d == "float32" or p["B"] >= 2),
        Constraint("C even for 8-byte A", lambda p, d: dict(p)["C"] % 2 == 0 or p["A"] * {"float32": 4,
                                                                                           "float64": 8}[d] != 8),
    )
    family, spec = toy(*rules, A=(1, 2, 3), B=(1, 2, 3), C=(4, 5))
    space = assert_same_as_one_by_one(spec, family)
    assert 0 < len(space.valid_rows) < space.size


def test_an_exception_of_a_rule_is_named_with_the_rule_and_the_values_that_raised_it():
    family, spec = toy(Constraint("12 divisible by X", lambda p, d: 12 % p["X"] == 0), X=(3, 0))
    with pytest.raises(ZeroDivisionError):
        count_one_by_one(spec, family)
    with pytest.raises(FamilyError, match=r"the rule '12 divisible by X' of family 'toy' raised ZeroDivisionError "
                                          r"\(integer modulo by zero\) for X=0"):
        built(spec, family)
    guarded = Constraint("X is 0 or divides 12", lambda p, d: p["X"] == 0 or 12 % p["X"] == 0)
    family, spec = toy(guarded, X=(0, 3, 5))
    assert_same_as_one_by_one(spec, family)


def test_an_empty_value_list_is_an_empty_space():
    family, spec = toy(Constraint("never read", lambda p, d: 1 / 0), A=(), B=(1, 2))
    space = built(spec, family)
    assert space.size == 0 and len(space.valid_rows) == 0 and space.rejected_by == Counter()


OVERLAPPING = """
name: overlapping
problems: [{M: 1000, N: 777, K: 333}, {M: 64, N: 64, K: 64}]
kernels:
  - template: naive
    parameters: {BLOCK_X: [16, 64], BLOCK_Y: [16, 32], dtype: [float32, float64]}
  - template: tiled
    parameters: {TILE_WIDTH: [8, 64], dtype: [float64]}
  - template: naive
    parameters: {BLOCK_X: [8, 16, 64], BLOCK_Y: [32, 16, 8], dtype: [float64, int32]}
"""


def test_study_spaces_list_each_configuration_once_and_answer_for_any_configuration():
    experiment = parse_experiment(OVERLAPPING, "overlapping.yaml")
    spaces = study_spaces(experiment)
    assert [(s.problem.label, s.dtype) for s in spaces] == [(p.label, d) for p in experiment.problems
                                                             for d in ("float32", "float64", "int32")]
    for space in spaces:
        valid: dict[Config, None] = {}
        rejected: dict[str, str] = {}
        for spec in experiment.kernels:
            for dtype, params, broken in checked_one_by_one(spec, get_family(spec.family)):
                config = Config.make(space.problem, spec.family, dtype, params)
                if dtype != space.dtype:
                    continue
                if broken:
                    rejected[config.key] = "; ".join(broken)
                else:
                    valid[config] = None
        assert list(space.valid) == list(valid)
        assert list(space.rejected.items()) == list(rejected.items())
        assert space.size == len(valid) + len(rejected)
        assert space.valid[-1] == list(valid)[-1] and space.valid[1:3] == tuple(list(valid)[1:3])
        for config in valid:
            assert config in space.valid and space.rejection(config) is None
            assert config.key not in space.rejected
        for key, why in rejected.items():
            assert space.rejected[key] == why
        unlisted = Config.make(space.problem, "naive", space.dtype, {"BLOCK_X": 32, "BLOCK_Y": 4})
        assert unlisted not in space.valid and unlisted.key not in space.rejected
        assert space.rejection(unlisted) == "this combination of values is not listed by any kernels entry of the " \
                                            "experiment"
        other_problem = Config.make(Problem(1, 2, 3), *next(iter(valid)).key.split("/")[1:3],
                                    next(iter(valid)).param_dict)
        assert other_problem not in space.valid


def test_valid_configs_and_distinct_kernels_count_each_configuration_once(capsys):
    experiment = parse_experiment(OVERLAPPING, "overlapping.yaml")
    expected: dict[Config, None] = {}
    for problem in experiment.problems:
        for spec in experiment.kernels:
            for dtype, params, broken in checked_one_by_one(spec, get_family(spec.family)):
                if not broken:
                    expected[Config.make(problem, spec.family, dtype, params)] = None
    assert valid_configs(experiment) == list(expected)
    print_space(experiment)
    kernels = len(expected) // len(experiment.problems)
    assert f"; {kernels} distinct kernels" in capsys.readouterr().out
