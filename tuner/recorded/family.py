"""A recorded space as a kernel family, so that an experiment searches it like any other.

The family's parameters and their values are the recording's, in its order. Its one static rule holds for the
configurations the recording holds: a combination it lacks broke the space's restrictions when it was recorded,
so it is ``invalid`` and never proposed. A recorded configuration that failed keeps its recorded outcome
(:mod:`tuner.backends.replay.recorded`). The family describes a matrix multiplication (its GFLOP/s count
2·M·N·K), has no vendor baseline and no source: it is only replayed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import cast

from tuner.config import ParamValue, Problem
from tuner.kernels import matmul
from tuner.kernels.family import Constraint, Family, Parameter
from tuner.recorded.load import load_recorded_once
from tuner.recorded.space import RecordedSpace
from tuner.space.entry_space import Entries, entry_families


def recorded_family(space: RecordedSpace, name: str, dtype: str, path: Path) -> Family:
    """The family of the configurations of ``space`` (read from ``path``), named ``name``, of one ``dtype``."""
    parameters = tuple(Parameter(n, f"recorded values of {n}", cast(tuple[ParamValue, ...], v))
                       for n, v in zip(space.names, space.values, strict=True))
    recorded = frozenset(space.row_of_key)
    positions = [(n, {value: i for i, value in enumerate(values)}, int(place))
                 for n, values, place in zip(space.names, space.values, space.place, strict=True)]

    def holds(params: Mapping[str, ParamValue], dtype_: str) -> bool:
        key = 0
        for n, position, place in positions:
            index = position.get(params[n])
            if index is None:
                return False
            key += index * place
        return key in recorded

    def global_bytes(params: Mapping[str, ParamValue], problem: Problem, size: int) -> int:
        return matmul.compulsory_bytes(problem, size)

    return Family(
        name=name,
        description=f"{space.kernel or 'kernel'} on {space.device or 'an unnamed device'}, recorded in {path.name}",
        parameters=parameters,
        global_bytes=global_bytes,
        baseline=None,
        constraints=(Constraint(f"recorded in {path.name}, which holds the combinations that satisfy the "
                                f"space's restrictions", holds),),
        dtypes=(dtype,),
        kernel_name=space.kernel or name,
        recording=path,
    )


def recorded_problem_refusal(family: Family, problem: Problem) -> str | None:
    """Why a family that stands for a recording does not answer for ``problem``: the recording says it was recorded
    at another. None where it answers, or where the family is no recording."""
    if family.recording is None:
        return None
    recorded = load_recorded_once(family.recording).problem_size
    sizes = recorded if isinstance(recorded, list) else [recorded]
    if not all(isinstance(s, int) for s in sizes):
        return None
    given = [problem[d] for d in problem.dims][:len(sizes)]
    if given == sizes[:len(given)]:
        return None
    return (f"{family.recording.name} was recorded at problem size {recorded} "
            f"({', '.join(problem.dims[:len(sizes)])}), not {problem.label}")


def recording_name(path: Path) -> str:
    """A recording's default family name: its file name without the extensions of its format."""
    name = path.name
    for suffix in (".gz", ".json", ".parquet"):
        name = name.removesuffix(suffix)
    return name


def is_recorded(experiment: Entries) -> bool:
    """Whether any kernel entry of the experiment is a recording (as its check resolved the entries' families)."""
    return any(family.recording is not None for family in entry_families(experiment).values())
