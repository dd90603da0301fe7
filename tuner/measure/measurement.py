"""What a backend answers for one configuration: its outcome and, when it ran, how long it took.

Backends (:mod:`tuner.backends`) produce these; the study turns them into rows of the results table.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from tuner.energy.measured import Energy
from tuner.measure.machine_load import Load


class Status(StrEnum):
    OK = "ok"
    INVALID = "invalid"  # static constraints or launch-resource limits
    COMPILE_ERROR = "compile_error"
    WRONG = "wrong"  # failed verification; never timed
    CRASHED = "crashed"  # fault, launch failure or hang in the measuring process


@dataclass(frozen=True)
class Timing:
    """Statistics of the timed samples of one kernel, in milliseconds."""

    median_ms: float
    mean_ms: float
    min_ms: float
    stdev_ms: float
    samples_ms: tuple[float, ...]
    throttled_samples: int = 0
    sm_clock_mhz_before: float | None = None
    sm_clock_mhz_after: float | None = None

    @property
    def cv(self) -> float:
        """Coefficient of variation: stdev / mean."""
        return self.stdev_ms / self.mean_ms if self.mean_ms else float("nan")

    @property
    def count(self) -> int:
        return len(self.samples_ms)


@dataclass(frozen=True)
class Resources:
    """What the compiler reports per kernel (nvcc: registers, memory, spills; a C compiler: code size and
    vectorized loops)."""

    registers: int | None = None
    shared_bytes: int | None = None
    local_bytes: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    code_bytes: int | None = None
    vectorized_loops: int | None = None


@dataclass(frozen=True)
class Measurement:
    status: Status
    reason: str = ""
    timing: Timing | None = None
    error: float | None = None
    """Verification error: ‖C − ref‖ / ‖ref‖ for floats, count of differing elements for int32."""
    compile_time_s: float | None = None
    resources: Resources = field(default_factory=Resources)
    energy: Energy | None = None
    """One launch's energy, where the backend measured it (``measure.energy``)."""
    load: Load | None = None
    """What other processes did while it was verified and timed (None: not watched, or recorded before)."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        timing = data.get("timing")
        return cls(
            status=Status(data["status"]),
            reason=data.get("reason", ""),
            timing=Timing(**{**timing, "samples_ms": tuple(timing["samples_ms"])}) if timing else None,
            error=data.get("error"),
            compile_time_s=data.get("compile_time_s"),
            resources=Resources(**(data.get("resources") or {})),
            energy=Energy(**data["energy"]) if data.get("energy") else None,
            load=Load.from_dict(data.get("load")),
        )
