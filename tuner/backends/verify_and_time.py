"""One measurement of a kernel in a measuring process, the same on every device: verify, time, verify again.

The kernel runs once into poisoned outputs, which are compared with the reference (a wrong kernel is recorded
and never timed); that run is the first warm-up run. The device's timer (:class:`Timer`) then times it, the
outputs poisoned again before each timed sample (untimed), and what the last timed run left is compared again:
a kernel that writes nothing cannot pass on the results of an earlier run, and one that leaves state behind
(flags, counters) is caught going wrong on a later run. With ``measure.energy``, an energy window of
back-to-back runs follows. Without ``measure.verify`` the kernel is only timed, after the settings' warm-up runs.
The machine's load during all of it is part of the measurement.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from tuner.backends.measuring_process import Served
from tuner.energy.measured import Energy
from tuner.kernels.verify import Verdict
from tuner.measure.machine_load import LoadMeter
from tuner.measure.measurement import Measurement, Resources, Status, Timing
from tuner.settings import MeasureSettings


class Outputs(Protocol):
    """A workspace's outputs: poisoned before a run, compared with the reference after it."""

    def prepare_outputs(self) -> None:
        """Poison every output; refill the ones that are inputs too."""
        ...

    def check(self) -> Verdict:
        """The outputs as the last run left them, against the reference."""
        ...


class Timer(Protocol):
    def time(self, run: Callable[[], None], settings: MeasureSettings, warmup: int | None = None,
             before_each: Callable[[], None] | None = None) -> Timing:
        """Time ``run`` by the device's method after ``warmup`` runs (None: the settings'); ``before_each`` runs
        before each sample, untimed."""
        ...


EnergyMeter = Callable[[Callable[[], None], Timing], Energy | None]
"""One run's energy, from a window of runs after the timed samples (their timing given); None where there is
none."""


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class Bench:
    """What a measuring process measures with."""

    served: Served
    settings: MeasureSettings
    timer: Timer
    load: LoadMeter
    energy: EnergyMeter | None = None
    settle: Callable[[], None] = _nothing
    """Waits until the device has finished the runs queued (a GPU's stream); a CPU's call returns finished."""
    rejected: tuple[type[Exception], ...] = ()
    """What a run raises when the device refuses it for its resources: the configuration is invalid."""
    run_words: tuple[str, str] = ("call", "calls")
    """What a run and runs are called in messages (("launch", "launches") on a GPU)."""


def verify_and_time(run: Callable[[], None], outputs: Outputs, bench: Bench, resources: Resources) -> Measurement:
    """The measurement of ``run`` (see the module text), with the machine's load meanwhile."""
    window = bench.load.window()
    measurement = _verified_and_timed(run, outputs, bench, resources)
    return replace(measurement, load=window.close())


def _verified_and_timed(run: Callable[[], None], outputs: Outputs, bench: Bench,
                        resources: Resources) -> Measurement:
    settings, (one, many) = bench.settings, bench.run_words
    bench.served.started()
    started = time.perf_counter()
    error = None
    try:
        if settings.verify:
            verdict = _check(run, outputs, bench)
            if not verdict.ok:
                return Measurement(Status.WRONG, verdict.reason, error=verdict.error, resources=resources)
            error = verdict.error
        timing = bench.timer.time(run, settings, max(0, settings.warmup - 1) if settings.verify else None,
                                  outputs.prepare_outputs if settings.verify else None)
        if settings.verify:
            verdict = outputs.check()
            if not verdict.ok:
                return Measurement(Status.WRONG, f"right on its first {one}, wrong after {timing.count} timed "
                                                 f"{many}: {verdict.reason}", error=verdict.error,
                                   resources=resources)
            error = max(error or 0.0, verdict.error or 0.0)   # an ok verdict carries its error
        energy = bench.energy(run, timing) if bench.energy is not None else None
    except bench.rejected as exc:
        return Measurement(Status.INVALID, str(exc), resources=resources)
    finally:
        bench.served.busy += time.perf_counter() - started
    return Measurement(Status.OK, timing=timing, error=error, resources=resources, energy=energy)


def _check(run: Callable[[], None], outputs: Outputs, bench: Bench) -> Verdict:
    """One run into poisoned outputs, compared with the float64 reference."""
    outputs.prepare_outputs()
    run()
    bench.settle()
    return outputs.check()
