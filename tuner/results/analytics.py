"""What the families say of one configuration, derived once: its analytical cost (FLOPs, bytes under the no-cache
model, compulsory bytes) and its launch geometry. The caller of :func:`tuner.results.record.row` hands them to the
row, which never calls back into the families."""

from __future__ import annotations

from dataclasses import dataclass

from tuner.config import DTYPE_BYTES, Config
from tuner.kernels import matmul
from tuner.kernels.discovery import get_family
from tuner.kernels.model import Cost, cost
from tuner.kernels.render import launch
from tuner.results.schema import BASELINE_FAMILY


@dataclass(frozen=True)
class Analytics:
    """A configuration's numbers that do not depend on a measurement."""

    flops: int | None
    """The operations of one launch (defined where the cost model is not)."""
    cost: Cost | None
    """None where the family's cost model is not defined for the configuration's values (a broken precondition)."""
    block: str | None = None
    """Launch geometry, ``x×y×z``; None for a baseline, a C kernel, a recorded family or values that break a
    precondition."""
    grid: str | None = None


def config_cost(config: Config) -> Cost | None:
    """The analytical cost of a configuration (a baseline's: the GEMM's, with its compulsory traffic); None
    where the family's cost model is not defined for its values (a broken precondition)."""
    if config.family == BASELINE_FAMILY:
        return _baseline_cost(config)
    return cost(config) if _modelled(config) else None


def _baseline_cost(config: Config) -> Cost:
    """The GEMM's operations with its compulsory traffic (A and B read once, C written once)."""
    traffic = matmul.compulsory_bytes(config.problem, DTYPE_BYTES[config.dtype])
    return Cost(matmul.flops(config.problem), traffic, traffic, {})


def analytics_of(config: Config, multiprocessors: int | None = None) -> Analytics:
    """The cost and launch geometry of ``config`` (its grid on a device of ``multiprocessors``, for a family whose
    grid depends on it)."""
    modelled = _modelled(config)
    family = get_family(config.family) if modelled else None
    work = _baseline_cost(config) if config.family == BASELINE_FAMILY else cost(config) if modelled else None
    flops = work.flops if work else get_family(config.family).flops(config.problem)
    if family is None or family.target != "cuda" or family.recording is not None:
        return Analytics(flops, work)
    geometry = launch(config)
    return Analytics(flops, work, "×".join(map(str, geometry.block)),
                     "×".join(map(str, geometry.grid_on(multiprocessors))))


def _modelled(config: Config) -> bool:
    """Whether the family's launch geometry and cost model describe the configuration (never the baseline, nor
    values that break a precondition such as a tile size of 0)."""
    if config.family == BASELINE_FAMILY:
        return False
    return not get_family(config.family).broken_preconditions(config.param_dict, config.dtype)
