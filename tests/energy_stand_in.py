"""TEST FIXTURE, not data: hand-written stand-in rows with energy columns, and the backend that answers them.

Nine configurations of a small experiment on one problem, each given a time and an energy by hand so that the
fastest, the most efficient, the knee and the energy-delay optimum are four known, distinct answers (three of
them on the Pareto front). None of these numbers is a measurement, none is shipped; the recording they make
lives in a test's temporary folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuner.backends.abilities import Ability
from tuner.backends.protocol import BackendBase
from tuner.config import Config, Problem
from tuner.energy.measured import Energy
from tuner.measure.measurement import Measurement, Status, Timing

EXPERIMENT = """\
name: energy_stand_in
problems:
  - {M: 1024, N: 1024, K: 1024}
kernels:
  - template: naive
    parameters: {BLOCK_X: [16, 32], BLOCK_Y: [4, 8, 16], dtype: [float32]}
  - template: tiled
    parameters: {TILE_WIDTH: [8, 16, 32], dtype: [float32]}
search: {strategy: grid, trials: 20}
"""
PROBLEM = Problem(1024, 1024, 1024)

ROWS: dict[tuple[str, tuple[tuple[str, int], ...]], tuple[str, float | None, float | None]] = {
    # (family, parameters): (status, median time in ms, energy per launch in J)
    ("tiled", (("TILE_WIDTH", 32),)): ("ok", 0.30, 0.110),             # the fastest
    ("tiled", (("TILE_WIDTH", 16),)): ("ok", 0.33, 0.080),             # the knee, and the least E·t (0.0264)
    ("tiled", (("TILE_WIDTH", 8),)): ("ok", 0.50, 0.070),              # the most efficient
    ("naive", (("BLOCK_X", 16), ("BLOCK_Y", 4))): ("ok", 0.90, 0.200),
    ("naive", (("BLOCK_X", 16), ("BLOCK_Y", 8))): ("ok", 0.80, 0.150),
    ("naive", (("BLOCK_X", 16), ("BLOCK_Y", 16))): ("ok", 0.70, 0.075),
    ("naive", (("BLOCK_X", 32), ("BLOCK_Y", 4))): ("ok", 1.20, None),  # ok, energy not recorded
    ("naive", (("BLOCK_X", 32), ("BLOCK_Y", 8))): ("ok", 0.45, 0.095),
    ("naive", (("BLOCK_X", 32), ("BLOCK_Y", 16))): ("crashed", None, None),
}
FASTEST, KNEE, EFFICIENT = "tiled TILE_WIDTH=32", "tiled TILE_WIDTH=16", "tiled TILE_WIDTH=8"
FRONT = [FASTEST, KNEE, EFFICIENT]
ENVIRONMENT: dict[str, Any] = {
    "backend": "energy stand-in",
    "device": {"name": "energy stand-in (test double)"},
    "peaks": {"theoretical": {"float32_gflops": 20000.0, "bandwidth_gbs": 2000.0},
              "measured": {"float32_gflops": 10000.0, "bandwidth_gbs": 1000.0}},
    "energy": {"counter": "hand-written stand-in", "available": True, "reason": None, "power_limit_w": 300.0,
               "method": "none: a test fixture"},
    "created_utc": "2000-01-01T00:00:00+00:00",
}


def stand_in(config: Config) -> Measurement:
    status, median_ms, joules = ROWS[(config.family, config.params)]
    if status != "ok" or median_ms is None:
        return Measurement(Status(status), reason="stand-in failure")
    timing = Timing(median_ms, median_ms, median_ms, 0.0, (median_ms,) * 3)
    energy = None if joules is None else Energy(joules=joules, power_w=joules / (median_ms * 1e-3), launches=100,
                                                window_s=100 * median_ms * 1e-3, counted_s=0.05, updates=3,
                                                source="stand-in", sm_clock_mhz=1500.0, power_limit_w=300.0)
    return Measurement(Status.OK, timing=timing, error=1e-7, energy=energy)


class EnergyStandIn(BackendBase):
    """Answers the hand-written rows, energy included."""

    name = "energy-stand-in"
    abilities = frozenset({Ability.MEASURES_ENERGY})

    def evaluate(self, config: Config) -> Measurement:
        return stand_in(config)

    def metadata(self) -> dict[str, Any]:
        return dict(ENVIRONMENT)

    def energy_unavailable(self) -> str | None:
        return None


def write_experiment(folder: Path) -> Path:
    path = folder / "energy_stand_in.yaml"
    path.write_text(EXPERIMENT)
    return path


def record(folder: Path) -> tuple[Path, Path]:
    """The stand-in experiment and a recording of all its configurations, made in ``folder``."""
    import tuner

    experiment = write_experiment(folder)
    out = folder / "recording"
    tuner.run(tuner.load_experiment(experiment), backend=EnergyStandIn(), out=out, quiet=True, report=False,
              objective="energy")
    return experiment, out
