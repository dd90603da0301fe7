"""A scripted stand-in for a GPU backend, for testing the logic around it (search, records, resume, replay).

Its outcomes are fixed by the configuration's parameters; it counts every call so that tests can check what
reached the backend. None of its numbers is a measurement and none is shipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tuner.backends.abilities import Ability
from tuner.backends.protocol import LOOKAHEAD, BackendBase
from tuner.config import Config, Problem
from tuner.measure.measurement import Measurement, Resources, Status, Timing

ENVIRONMENT: dict[str, Any] = {
    "backend": "scripted",
    "device": {"name": "scripted stand-in (test double)"},
    "peaks": {"theoretical": {"float32_gflops": 2000.0, "bandwidth_gbs": 200.0},
              "measured": {"float32_gflops": 1000.0, "bandwidth_gbs": 100.0}},
    "created_utc": "2000-01-01T00:00:00+00:00",
}


def scripted_gflops(config: Config) -> float:
    """The speed the script gives an ``ok`` configuration (an arbitrary, distinct number per config)."""
    params = config.param_dict
    if config.family == "tiled":
        return 100.0 * int(params["TILE_WIDTH"])
    return float(sum(int(v) for v in params.values() if isinstance(v, int | bool)))  # text values add nothing


def scripted_outcome(config: Config) -> Measurement:
    """ok, or the one failure the script assigns to a handful of fermi_like configurations."""
    params = config.param_dict
    if config.family == "tiled" and params.get("TILE_WIDTH") == 8:
        return Measurement(Status.COMPILE_ERROR, reason="ptxas fatal: scripted compile error", compile_time_s=0.5)
    if config.family == "naive" and (params.get("BLOCK_X"), params.get("BLOCK_Y")) == (8, 4):
        return Measurement(Status.WRONG, reason="‖C − ref‖/‖ref‖ = 0.5 above tolerance", error=0.5,
                           compile_time_s=0.25)
    if config.family == "naive" and (params.get("BLOCK_X"), params.get("BLOCK_Y")) == (8, 8):
        return Measurement(Status.CRASHED, reason="scripted: an illegal memory access was encountered")
    if config.family == "naive" and (params.get("BLOCK_X"), params.get("BLOCK_Y")) == (64, 16):
        return Measurement(Status.INVALID, reason="scripted: too many resources requested for launch")
    median_ms = 2 * config.problem.M * config.problem.N * config.problem.K / (scripted_gflops(config) * 1e6)
    samples = (median_ms * 0.99, median_ms, median_ms * 1.02)
    timing = Timing(median_ms=median_ms, mean_ms=sum(samples) / 3, min_ms=samples[0], stdev_ms=median_ms * 0.015,
                    samples_ms=samples, throttled_samples=1, sm_clock_mhz_before=1980.0, sm_clock_mhz_after=1965.0)
    return Measurement(Status.OK, timing=timing, error=1e-7, compile_time_s=0.125,
                       resources=Resources(registers=32, shared_bytes=0, local_bytes=0, spill_store_bytes=4,
                                           spill_load_bytes=8))


class ScriptedBackend(BackendBase):
    """Answers from ``scripted_outcome``; raises KeyboardInterrupt on evaluation number ``interrupt_at``."""

    name = "scripted"

    def __init__(self, interrupt_at: int | None = None, with_baseline: bool = True):
        self.interrupt_at = interrupt_at
        self.calls: list[str] = []
        self.baselines: list[tuple[str, str]] = []
        self.prefetched: list[list[str]] = []
        self.busy_seconds = 0.0
        self.closed = False
        self.with_baseline = with_baseline

    def prefetch(self, configs: list[Config]) -> None:
        self.prefetched.append([c.key for c in configs])

    def evaluate(self, config: Config) -> Measurement:
        self.calls.append(config.key)
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        outcome = scripted_outcome(config)
        if outcome.timing is not None:
            self.busy_seconds += sum(outcome.timing.samples_ms) / 1e3
        return outcome

    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        if not self.with_baseline:
            return None
        self.baselines.append((problem.label, dtype))
        median_ms = 2 * problem.M * problem.N * problem.K / 5e9
        timing = Timing(median_ms, median_ms, median_ms, 0.0, (median_ms,) * 3)
        return Measurement(Status.OK, timing=timing, error=1e-7)

    def metadata(self) -> dict[str, Any]:
        return dict(ENVIRONMENT)

    def close(self) -> None:
        self.closed = True


class SubmittedEvaluation:
    """The scripted answer of one submitted configuration, logged when it is waited for."""

    def __init__(self, backend: SubmittingBackend, config: Config):
        self.backend, self.config = backend, config

    def wait(self) -> Measurement:
        self.backend.log.append(("wait", self.config.key))
        return ScriptedBackend.evaluate(self.backend, self.config)


class SubmittingBackend(ScriptedBackend):
    """The script's answers through ``submit``, as a backend with a measuring process gives them: the answer
    is computed (and an interruption raised) when it is waited for. ``log`` lists (event, key) in order."""

    abilities = frozenset({Ability.SUBMITS})

    def __init__(self, interrupt_at: int | None = None, with_baseline: bool = True):
        super().__init__(interrupt_at, with_baseline)
        self.log: list[tuple[str, str]] = []

    def submit(self, config: Config) -> SubmittedEvaluation:
        self.log.append(("submit", config.key))
        return SubmittedEvaluation(self, config)


class CompilingBackend(SubmittingBackend):
    """Says which configurations are compiled: all but those in ``compiling``, which finish only when waited for
    (the first of those waited for at a time)."""

    abilities = SubmittingBackend.abilities | {Ability.COMPILES_AHEAD}
    ask_ahead = LOOKAHEAD

    def __init__(self, compiling: set[str]):
        super().__init__()
        self.compiling = compiling

    def ready(self, config: Config) -> bool:
        return config.key not in self.compiling

    def wait_compiled(self, configs: list[Config], timeout: float | None = None) -> bool:
        waited = next((c.key for c in configs if c.key in self.compiling), None)
        self.compiling.discard(waited or "")
        return True


class TimedCompileBackend(SubmittingBackend):
    """Compiles on a clock of its own: each evaluation takes one tick of the device, a configuration is ready
    ``compile_ticks(config, n)`` ticks after it was handed over (the n-th of its problem), and ``wait_compiled``
    moves the clock to the first of the given configurations to be ready, as waiting for a compiler does."""

    abilities = SubmittingBackend.abilities | {Ability.COMPILES_AHEAD}
    ask_ahead = LOOKAHEAD

    def __init__(self, compile_ticks: Callable[[Config, int], int]):
        super().__init__()
        self.compile_ticks = compile_ticks
        self.clock = 0
        self.ready_at: dict[str, int] = {}
        self.handed: dict[str, int] = {}
        self.idle_ticks = 0

    def prefetch(self, configs: list[Config]) -> None:
        super().prefetch(configs)
        for config in configs:
            if config.key not in self.ready_at:
                n = self.handed[config.problem.label] = self.handed.get(config.problem.label, 0) + 1
                self.ready_at[config.key] = self.clock + self.compile_ticks(config, n)

    def ready(self, config: Config) -> bool:
        return self.ready_at.get(config.key, 0) <= self.clock

    def wait_compiled(self, configs: list[Config], timeout: float | None = None) -> bool:
        first = min(self.ready_at.get(c.key, 0) for c in configs)
        self.idle_ticks += max(0, first - self.clock)
        self.clock = max(self.clock, first)
        return True

    def submit(self, config: Config) -> SubmittedEvaluation:
        self.wait_compiled([config])  # a configuration still compiling is started once its compile ends
        self.clock += 1
        return super().submit(config)
