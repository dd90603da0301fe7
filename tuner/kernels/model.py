"""The analytical model: operations, global-memory bytes under a family's traffic model, intensity, and the
roofline bounds of analytical machines."""

from __future__ import annotations

from dataclasses import dataclass

from tuner.config import Config
from tuner.kernels.discovery import get_family
from tuner.kernels.family import FamilyError


@dataclass(frozen=True)
class MachineModel:
    """An analytical machine drawn as roofline ceilings (e.g. Fermi-like: 1000 GFLOP/s, 150 GB/s)."""

    name: str
    peak_gflops: dict[str, float]  # per dtype
    bandwidth_gbs: float

    def ridge_point(self, dtype: str) -> float | None:
        """Intensity (FLOP/B) where the bandwidth slope meets the compute ceiling."""
        peak = self.peak_gflops.get(dtype)
        return None if peak is None else peak / self.bandwidth_gbs

    def bound_gflops(self, dtype: str, intensity: float) -> float:
        """Attainable GFLOP/s at this intensity: min(compute peak, bandwidth × intensity)."""
        memory_bound = self.bandwidth_gbs * intensity
        peak = self.peak_gflops.get(dtype)
        return memory_bound if peak is None else min(peak, memory_bound)


@dataclass(frozen=True)
class Cost:
    flops: int
    global_bytes: int
    compulsory_bytes: int
    extra_intensities: dict[str, float]

    @property
    def intensity(self) -> float:
        """Compute-to-global-memory-access ratio in FLOP per byte (0 for a kernel that only moves data)."""
        return self.flops / self.global_bytes


def cost(config: Config) -> Cost:
    """FLOPs, global bytes and further intensities; ValueError where a precondition of the family is broken,
    FamilyError where the family's cost model raises or gives no bytes (the intensity divides by them)."""
    family = get_family(config.family)
    params, size = config.param_dict, config.element_bytes
    family.require_preconditions(params, config.dtype)
    try:
        work = Cost(
            flops=family.flops(config.problem),
            global_bytes=family.global_bytes(params, config.problem, size),
            compulsory_bytes=family.compulsory_bytes(config.problem, size),
            extra_intensities=family.extra_intensities(params, size),
        )
        moves = work.global_bytes > 0 and work.compulsory_bytes > 0
    except Exception as exc:  # a family's own code may fail in any way: say where
        raise family.mistake("the cost model", exc, config.key) from None
    if not moves:
        raise FamilyError(f"{family.origin}: the cost model of family '{family.name}' gives "
                          f"{work.global_bytes!r} global and {work.compulsory_bytes!r} compulsory bytes for "
                          f"{config.key}; a kernel moves at least its operands, and the intensity divides by "
                          f"its bytes: fix the family's global_bytes or compulsory_bytes")
    return work
