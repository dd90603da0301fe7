"""A scripted stand-in whose counters come from a raw page of Nsight Compute (tests/data), through the same
matching of profiled kernels to configurations that a real session goes through. Its environment adds the
cache levels' ceilings to the scripted one. None of its numbers is a measurement of this machine."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.scripted_backend import ENVIRONMENT, ScriptedBackend
from tuner.config import Config, Problem
from tuner.counters.job import JobKernel, Launched, Manifest
from tuner.counters.ncu import Session
from tuner.counters.sources import Counted, describe_conditions, session_rows
from tuner.experiment import Experiment
from tuner.space import KernelSpec

DATA = Path(__file__).parent / "data"
SYNTHETIC_PAGE = DATA / "ncu_raw_seed_kernels_synthetic.csv"
PROBLEM = Problem(1024, 1024, 1024)
SEED_CONFIGS = (Config.make(PROBLEM, "naive", "float32", {"BLOCK_X": 16, "BLOCK_Y": 16}),
                Config.make(PROBLEM, "tiled", "float32", {"TILE_WIDTH": 16}),
                Config.make(PROBLEM, "tiled", "float32", {"TILE_WIDTH": 32}))
"""The kernels of the synthetic page, in its order."""
COUNTED_ENVIRONMENT: dict[str, Any] = {
    **ENVIRONMENT,
    "peaks": {"theoretical": {**ENVIRONMENT["peaks"]["theoretical"], "l1_bandwidth_gbs": 4000.0},
              "measured": {**ENVIRONMENT["peaks"]["measured"], "l2_bandwidth_gbs": 700.0,
                           "l1_bandwidth_gbs": 3000.0, "shared_bandwidth_gbs": 3500.0}},
}


def seed_experiment(counters: str = "all") -> Experiment:
    from dataclasses import replace

    from tuner.settings import MeasureSettings

    return Experiment(name="seeds", problems=(PROBLEM,),
                      kernels=(KernelSpec("naive", {"BLOCK_X": (16,), "BLOCK_Y": (16,)}, ("float32",)),
                               KernelSpec("tiled", {"TILE_WIDTH": (16, 32)}, ("float32",))),
                      measure=replace(MeasureSettings(), counters=counters))


class PageCounters:
    """Counts the seed configurations from the raw page, as if a session had profiled them in its order."""

    def __init__(self, page: Path = SYNTHETIC_PAGE, statuses: Sequence[str] = ("ok", "ok", "ok")):
        self.page = page
        self.statuses = statuses
        self.asked: list[list[str]] = []

    def count(self, configs: Sequence[Config], say: Any = None) -> Counted:
        self.asked.append([c.key for c in configs])
        kernels = [JobKernel(c, Path("unused.cubin")) for c in SEED_CONFIGS]
        manifest = Manifest({"name": ENVIRONMENT["device"]["name"], "uuid": "GPU-test"},
                            tuple(Launched(i, c.key, status) for i, (c, status) in
                                  enumerate(zip(SEED_CONFIGS, self.statuses, strict=True))))
        session = Session(self.page.read_text(), (2, 2, 2), "", 0, ())
        rows, reasons = session_rows(session, manifest, kernels, "2025.3.0.0")
        wanted = {c.key for c in configs}
        return Counted([r for r in rows if r["config_key"] in wanted], reasons, describe_conditions("2025.3.0.0",
                                                                                                   (2, 2, 2)))


class CountedBackend(ScriptedBackend):
    name = "counted"

    def __init__(self, source: PageCounters | None = None):
        super().__init__()
        self.source = source or PageCounters()

    def metadata(self) -> dict[str, Any]:
        return dict(COUNTED_ENVIRONMENT)

    def counters(self) -> PageCounters:
        return self.source
