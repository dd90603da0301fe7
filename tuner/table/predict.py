"""A configuration for a shape never tuned, chosen without measuring: the candidate with the least estimated time.

Each candidate is a configuration measured on a source shape. Its time on the new shape is estimated from the time
measured there past a fixed cost (``FIXED_MS``), scaled by what changes: the work of the busiest SM, the tiles it
runs (the family's grid spread over the device's SMs, a persistent schedule walking them in turn) times the K each
tile reduces over. Tiles that do not fill the SMs cost as much as tiles that do, so that a shape of more rows may
run in the same time. A C function's work is M·N·K. The estimate is trusted less the further the source shape is:
it grows by ``DISTANCE_PENALTY`` per unit of distance (the sum of |log2| of the ratios of M, N and K, and half a
unit for each of K and N changing its alignment to 8 or to 16 elements). Candidates that are not valid for the new
shape are never chosen: a family's static rules (tuner.space) or a tensor map the shape's rows cannot take (wgmma's
rows of a multiple of 16 bytes)."""

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

DEFAULT_SMS = 132
DISTANCE_PENALTY = 0.05
"""Relative growth of the estimate per unit of distance: on recorded wgmma runs (18 shapes, 1376 pairs of one
configuration on two shapes) the estimate's error grew by about 0.04 in log time per unit."""
ALIGNMENT_WEIGHT = 0.5
FIXED_MS = 0.005
"""Time a CUDA kernel takes whatever its work (the launch, filling the pipeline, the epilogue): the estimate scales
only the rest. On the recorded wgmma runs 5 to 10 µs cut the estimate's mean error by a quarter."""


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
    estimated_ms: float
    """Its estimated time on the new shape, the distance's penalty left out."""

    @property
    def reason(self) -> str:
        source = self.neighbour.config.problem.label
        gap = self.neighbour.time_ms / self.neighbour.source_best_ms
        standing = "the best there" if gap <= 1.0 else f"{gap:.3f}× that shape's best time"
        return (f"least estimated time {self.estimated_ms:.4g} ms, from tuned neighbour {source} "
                f"{self.neighbour.config.dtype} (distance {self.distance:.3f}; {self.neighbour.time_ms:.4g} ms there, "
                f"{standing})")


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
    """log2 M, N and K, log2 of the tiles per SM, how full the last wave of tiles is, and K and N aligned to 8
    and to 16 elements."""
    problem = config.problem
    blocks = tiles(config)
    waves = math.ceil(blocks / multiprocessors)
    aligned = [float(size % step == 0) for size in (problem.K, problem.N) for step in (8, 16)]
    return np.array([math.log2(problem.M), math.log2(problem.N), math.log2(problem.K),
                     math.log2(blocks / multiprocessors), blocks / (waves * multiprocessors), *aligned])


def busiest_sm_work(config: Config, multiprocessors: int) -> int:
    """Multiply-adds per output element the busiest SM runs, in units of a tile: its tiles times K; M·N·K for a
    C function."""
    problem = config.problem
    if get_family(config.family).target != "cuda":
        return problem.M * problem.N * problem.K
    return math.ceil(tiles(config) / multiprocessors) * problem.K


def distance(source: Config, target: Config) -> float:
    """How far apart two shapes are for an estimate: |log2| of the size ratios, and the alignments that change."""
    a, b = source.problem, target.problem
    apart = sum(abs(math.log2(x / y)) for x, y in ((a.M, b.M), (a.N, b.N), (a.K, b.K)))
    changed = sum((x % step == 0) != (y % step == 0) for x, y in ((a.K, b.K), (a.N, b.N)) for step in (8, 16))
    return apart + ALIGNMENT_WEIGHT * changed


def estimate(candidate: Candidate, target: Config) -> float:
    """``candidate``'s time on ``target``'s shape: its measured time past ``FIXED_MS`` (for a CUDA kernel) scaled
    by the busiest SM's work."""
    sms = candidate.multiprocessors or DEFAULT_SMS
    fixed = min(FIXED_MS, candidate.time_ms) if get_family(candidate.config.family).target == "cuda" else 0.0
    scale = busiest_sm_work(target, sms) / busiest_sm_work(candidate.config, sms)
    return fixed + (candidate.time_ms - fixed) * scale


def predict(candidates: Iterable[Candidate], problem: Problem, dtype: str) -> Prediction | None:
    """The valid candidate of ``dtype`` with the least estimated time on ``problem``, the estimate grown with the
    distance; None where none is valid there. Of two estimated equal, the nearer. Candidates are checked for
    validity in the order of their estimates, up to the first valid one."""
    ranked: list[tuple[float, float, int, Prediction]] = []
    for number, candidate in enumerate(candidates):
        if candidate.config.dtype != dtype:
            continue
        target = on_shape(candidate.config, problem)
        try:
            estimated = estimate(candidate, target)
        except (ValueError, UnknownFamily):  # a launch the family refuses there: never valid
            continue
        apart = distance(candidate.config, target)
        ranked.append((estimated * math.exp(DISTANCE_PENALTY * apart), apart, number,
                       Prediction(target, candidate, apart, estimated)))
    ranked.sort(key=lambda item: item[:3])
    return next((p for *_, p in ranked if refusal(p.config, p.neighbour.arch) is None), None)


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
