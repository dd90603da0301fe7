"""Predicted against achieved: each analytical class's roofline bound on every machine model and on the
device's measured and theoretical rooflines, beside the best GFLOP/s it reached."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tuner.report.groups import Group, sorted_groups
from tuner.report.run_folder import Run


@dataclass(frozen=True)
class ClassBound:
    dtype: str
    problem: str
    group: Group
    intensity: float
    """FLOP per byte of global memory under the family's no-cache model."""
    model_bounds: tuple[tuple[str, float], ...]
    """(machine model name, attainable GFLOP/s) for each machine model with a ceiling for the dtype."""
    device_bounds: tuple[tuple[str, float], ...]
    """(``measured`` or ``theoretical``, attainable GFLOP/s) on the device's rooflines."""
    best_gflops: float | None
    evaluations: int
    ok: int


def class_bounds(run: Run, dtype: str | None = None, problem: str | None = None) -> list[ClassBound]:
    """One entry per (dtype, problem, class), optionally only for one dtype and/or problem."""
    entries = []
    for slice_dtype, slice_problem in run.slices():
        if (dtype is not None and slice_dtype != dtype) or (problem is not None and slice_problem != problem):
            continue
        kernels = run.kernels
        rows = kernels[(kernels["dtype"] == slice_dtype) & (kernels["problem"] == slice_problem)]
        ceilings = run.device_ceilings(slice_dtype, rows)
        by_group = dict(iter(rows.groupby("group", sort=False)))
        for group in sorted_groups(by_group):
            members = by_group[group]
            intensities = members["intensity"].dropna()
            if intensities.empty:
                continue
            intensity = float(intensities.median())
            ok = members[(members["status"] == "ok") & members["gflops"].notna()]
            models = tuple((m.name, m.bound_gflops(slice_dtype, intensity)) for m in run.machine_models)
            device = tuple((c.kind, bound) for c in ceilings if (bound := c.bound_gflops(intensity)) is not None)
            entries.append(ClassBound(
                dtype=slice_dtype, problem=slice_problem, group=group, intensity=intensity,
                model_bounds=models, device_bounds=device,
                best_gflops=float(ok["gflops"].max()) if not ok.empty else None,
                evaluations=len(members), ok=len(ok),
            ))
    return entries


def fraction(achieved: float | None, bound: float) -> float | None:
    """Achieved as a fraction of a bound (above 1 where caches beat the no-cache model)."""
    if achieved is None or not bound or not math.isfinite(bound):
        return None
    return achieved / bound
