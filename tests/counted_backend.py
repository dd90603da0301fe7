"""A scripted stand-in whose counters come from a raw page of Nsight Compute (tests/data), through the same
matching of profiled kernels to configurations that a real session goes through. Its environment adds the
cache levels' ceilings to the scripted one. None of its numbers is a measurement of this machine."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.scripted_backend import ENVIRONMENT, ScriptedBackend
from tuner.backends.abilities import Ability
from tuner.config import Config, Problem
from tuner.counters.conditions import describe_conditions
from tuner.counters.job import JobKernel, Launched, Manifest
from tuner.counters.ncu import Session
from tuner.counters.sources import Counted, session_rows
from tuner.experiment.schema import Experiment
from tuner.space.entry_space import KernelSpec

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


def seed_experiment(counters: str = "all", problem: Problem = PROBLEM,
                    widths: tuple[int, ...] = (16, 32)) -> Experiment:
    from dataclasses import replace

    from tuner.settings import MeasureSettings

    return Experiment(name="seeds", problems=(problem,),
                      kernels=(KernelSpec("naive", {"BLOCK_X": (16,), "BLOCK_Y": (16,)}, ("float32",)),
                               KernelSpec("tiled", {"TILE_WIDTH": widths}, ("float32",))),
                      measure=replace(MeasureSettings(), counters=counters))


class PageCounters:
    """Counts configurations from a raw page, as if a session had profiled its kernels (``configs``, in its
    order) on the scripted device."""

    def __init__(self, page: Path = SYNTHETIC_PAGE, statuses: Sequence[str] | None = None,
                 configs: Sequence[Config] = SEED_CONFIGS):
        self.page = page
        self.configs = tuple(configs)
        self.statuses = tuple(statuses or ("ok",) * len(self.configs))
        self.asked: list[list[str]] = []

    def count(self, configs: Sequence[Config], say: Any = None, detail: bool = True) -> Counted:
        self.asked.append([c.key for c in configs])
        kernels = [JobKernel(c, Path("unused.cubin")) for c in self.configs]
        manifest = Manifest({"name": ENVIRONMENT["device"]["name"], "uuid": "GPU-test"},
                            tuple(Launched(i, c.key, status) for i, (c, status) in
                                  enumerate(zip(self.configs, self.statuses, strict=True))))
        session = Session(self.page.read_text(), (2,) * len(self.configs), "", 0, ())
        rows, reasons = session_rows(session, manifest, kernels, "2025.3.0.0")
        wanted = {c.key for c in configs}
        return Counted([r for r in rows if r["config_key"] in wanted], reasons, describe_conditions("2025.3.0.0",
                                                                                                   (2, 2, 2)))


class CountedBackend(ScriptedBackend):
    name = "counted"
    abilities = frozenset({Ability.READS_COUNTERS})

    def __init__(self, source: PageCounters | None = None):
        super().__init__()
        self.source = source or PageCounters()

    def metadata(self) -> dict[str, Any]:
        return dict(COUNTED_ENVIRONMENT)

    def counters(self) -> PageCounters:
        return self.source
