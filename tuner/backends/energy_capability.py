"""Whether a run's backends can give the energy its objective needs, and why not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tuner.backends.protocol import Evaluates, energy_refusal
from tuner.errors import TunerError
from tuner.results.objectives import Objectives, label, needs_energy


def environment_refusal(environment: Mapping[str, Any]) -> str | None:
    """Why a measuring backend's environment (its ``energy`` entry) has no energy, or None where it has."""
    energy = environment.get("energy")
    if not isinstance(energy, Mapping):
        return "energy was not measured (measure.energy is off)"
    if energy.get("available"):
        return None
    return str(energy.get("reason") or "energy is not available here")


def cpu_energy_refusal() -> str | None:
    """Why this machine's CPU has no energy counters (RAPL) to read, found without starting a measuring process or
    measuring the CPU's ceilings; None where it has them."""
    from tuner.energy.cpu import CpuEnergy

    return CpuEnergy().unavailable


def check_energy(backends: Sequence[Evaluates], objective: Objectives) -> None:
    """TunerError, before anything is written, when the objective needs energy that a backend cannot give."""
    if not needs_energy(objective):
        return
    for backend in backends:
        reason = energy_refusal(backend)
        if reason:
            raise TunerError(f"the objective '{label(objective)}' needs energy per launch, but {reason}")
