"""Refusals a run can make from its settings alone, before a backend is opened: a measuring backend starts by
measuring its device's ceilings (a minute or more on a first run), and what it would then refuse is known now.

A measuring backend measures the kernels of one target (the CPU's C, the GPU's CUDA): an experiment none of whose
kernel families is written for it would record every configuration ``invalid``. An objective that needs energy
on the CPU needs RAPL's counters, whose absence is known without measuring anything.
"""

from __future__ import annotations

from tuner.backends.energy_capability import cpu_energy_refusal
from tuner.errors import Naming, TunerError
from tuner.experiment.schema import Experiment
from tuner.kernels.discovery import get_family
from tuner.results.objectives import Objectives, label, needs_energy

TARGETS = {"cpu": "c", "pycuda": "cuda"}
"""The kernels each measuring backend measures."""
OTHER_BACKEND = {"c": "cpu", "cuda": "pycuda"}


def refuse_before_measuring(backend: object, experiment: Experiment, objective: Objectives, name: Naming) -> None:
    """TunerError where the backend named ``backend`` could measure nothing of the experiment, or not the energy
    its objective needs."""
    if not isinstance(backend, str) or backend not in TARGETS:
        return
    targets = {spec.family: get_family(spec.family).target for spec in experiment.kernels}
    if TARGETS[backend] not in targets.values():
        written = ", ".join(f"{family} ({target})" for family, target in targets.items())
        others = sorted({OTHER_BACKEND[t] for t in targets.values() if t in OTHER_BACKEND})
        raise TunerError(f"the {backend} backend measures {TARGETS[backend]} kernels, and none of the experiment's "
                         f"kernel families is one: {written}; run it with "
                         f"{' or '.join(name('backend', other) for other in others) or 'another backend'}")
    if backend == "cpu" and needs_energy(objective):
        reason = cpu_energy_refusal()
        if reason:
            raise TunerError(f"the objective '{label(objective)}' needs energy per launch, but {reason}")
