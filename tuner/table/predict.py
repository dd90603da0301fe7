"""A configuration for a shape never tuned, chosen without measuring: the nearest tuned neighbour.

Each candidate is a configuration measured on a source shape. Its distance to the new shape is taken on what decides
how the configuration runs there: the sizes (log2 M, N and K), the tiles it launches per wave of the device's SMs and
how full its last wave is, and whether K and N stay aligned to 8 and 16 elements. A candidate that was not the best
on its own source shape pays for the gap (log of its time over that shape's best), and one whose throughput fell
far below the best any candidate of its dtype reached pays for that (half the log2 of the ratio), so that a slow
family tuned on a near shape does not beat a fast one tuned a little further away. Candidates that are not valid for
the new shape are never chosen: a family's static rules (tuner.space) or a tensor map the shape's rows cannot take
(wgmma's rows of a multiple of 16 bytes)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.kernels.discovery import UnknownFamily, get_family
from tuner.kernels.render import launch
from tuner.kernels.targets import target
from tuner.kernels.tensor_maps import tensor_map_fields
from tuner.space.entry_space import violations

WEIGHTS = np.array([1.0, 1.0, 1.0, 1.0, 2.0, 0.5, 0.5, 0.5, 0.5])
"""log2 M, log2 N, log2 K, log2 tiles per wave, fullness of the last wave, K and N aligned to 8 and to 16."""
DEFAULT_SMS = 132
THROUGHPUT_WEIGHT = 0.5


@dataclass(frozen=True)
class Candidate:
    """A configuration as measured on its source shape (``config.problem``)."""

    config: Config
    time_ms: float
    source_best_ms: float
    """The fastest time any configuration reached on the source shape."""
    multiprocessors: int | None = None
    arch: str | None = None
    """The architecture it was compiled for (sm_90); None: the default compile target."""


@dataclass(frozen=True)
class Prediction:
    config: Config
    """The chosen configuration, on the new shape."""
    neighbour: Candidate
    distance: float

    @property
    def reason(self) -> str:
        source = self.neighbour.config.problem.label
        gap = self.neighbour.time_ms / self.neighbour.source_best_ms
        standing = "the best there" if gap <= 1.0 else f"{gap:.3f}× that shape's best time"
        return (f"nearest tuned neighbour {source} {self.neighbour.config.dtype} (distance {self.distance:.3f}; "
                f"{self.neighbour.time_ms:.4g} ms there, {standing})")


def arch_of(compute_capability: str | None) -> str | None:
    """``9.0`` → ``sm_90``; None for none."""
    return f"sm_{compute_capability.replace('.', '')}" if compute_capability else None


def on_shape(config: Config, problem: Problem) -> Config:
    return Config(problem, config.family, config.dtype, config.params)


def refusal(config: Config, arch: str | None = None) -> str | None:
    """Why ``config`` cannot run on its problem (a broken static rule, a launch the family refuses, a tensor map
    the rows cannot take), or None."""
    try:
        family = get_family(config.family)
    except UnknownFamily as exc:
        return str(exc)
    compiled_for = family.arch or arch
    try:
        on = target(compiled_for) if compiled_for else None
    except TunerError:
        on = None
    broken = violations(family, config.param_dict, config.dtype, on)
    if broken:
        return broken[0]
    if family.target != "cuda":
        return None
    try:
        geometry = launch(config)
        buffers = {b.name: b for b in family.buffers}
        for spec in geometry.tensor_maps:
            buffer = buffers[spec.buffer]
            tensor_map_fields(spec, buffer.shape(config.problem), buffer.dtype_of(config.dtype))
    except ValueError as exc:  # a broken precondition, or a tensor map the driver would refuse
        return str(exc)
    return None


def tiles(config: Config) -> int:
    """Blocks of the family's grid on the problem (1 for a C function)."""
    family = get_family(config.family)
    if family.target != "cuda":
        return 1
    x, y, z = launch(config).grid
    return x * y * z


def features(config: Config, multiprocessors: int) -> np.ndarray:
    problem = config.problem
    blocks = tiles(config)
    waves = math.ceil(blocks / multiprocessors)
    aligned = [float(size % step == 0) for size in (problem.K, problem.N) for step in (8, 16)]
    return np.array([math.log2(problem.M), math.log2(problem.N), math.log2(problem.K),
                     math.log2(blocks / multiprocessors), blocks / (waves * multiprocessors), *aligned])


def flop_rate(candidate: Candidate) -> float:
    problem = candidate.config.problem
    return 2.0 * problem.M * problem.N * problem.K / candidate.time_ms


def distance(candidate: Candidate, target: Config, best_rate: float) -> float:
    """How far ``candidate`` is from running as it did when placed on ``target``'s shape, with its shortfalls
    (behind its own shape's best; behind ``best_rate``, the best FLOP rate of its dtype)."""
    sms = candidate.multiprocessors or DEFAULT_SMS
    apart = np.abs(features(target, sms) - features(candidate.config, sms)) @ WEIGHTS
    slower = math.log(candidate.time_ms / candidate.source_best_ms)
    return float(apart + slower + THROUGHPUT_WEIGHT * math.log2(best_rate / flop_rate(candidate)))


def predict(candidates: Iterable[Candidate], problem: Problem, dtype: str) -> Prediction | None:
    """The nearest valid candidate of ``dtype``, placed on ``problem``; None where none is valid there. Of two
    equally near, the one faster on its own shape."""
    mine = [c for c in candidates if c.config.dtype == dtype]
    best_rate = max((flop_rate(c) for c in mine), default=1.0)
    best: tuple[float, float, Prediction] | None = None
    for candidate in mine:
        target = on_shape(candidate.config, problem)
        if refusal(target, candidate.arch) is not None:
            continue
        apart = distance(candidate, target, best_rate)
        key = (apart, candidate.time_ms / candidate.source_best_ms)
        if best is None or key < best[:2]:
            best = (*key, Prediction(target, candidate, apart))
    return None if best is None else best[2]


def candidates_of(configs: Sequence[tuple[Config, float]], multiprocessors: int | None,
                  arch: str | None) -> list[Candidate]:
    """Candidates from (configuration, median time) pairs: each shape's best time is the least among them."""
    best: dict[tuple[Problem, str], float] = {}
    for config, time_ms in configs:
        key = (config.problem, config.dtype)
        best[key] = min(best.get(key, math.inf), time_ms)
    return [Candidate(config, time_ms, best[(config.problem, config.dtype)], multiprocessors,
                      arch)
            for config, time_ms in configs]
