"""Counting configurations in the measuring process that timed them, with CUPTI's range profiler.

Nsight Compute counts from outside (:class:`tuner.counters.sources.NcuCounters`): a profiled process of its own
that starts Python and CUDA, loads every kernel and makes every workspace again, while ncu saves and restores
the device memory around each replay pass. Here the process that timed the configurations counts them, one
request each (:class:`~tuner.backends.pycuda.kernel_count.CountRequest`): the kernel loaded from the same cubin
onto the workspace it was measured on, replayed once per pass by the process itself (CUPTI's user replay), its
outputs poisoned and the L2 flushed before each pass, outside the range, and its output verified after the last
(:mod:`tuner.backends.pycuda.range_profiler`). The metrics and their names are Nsight Compute's, so the rows are
the same ``counters.parquet`` rows (their tool recorded in ``ncu_version``: ``CUPTI API …``).

Where CUPTI cannot count on this machine (no library, a driver without the range profiler), Nsight Compute counts
them instead, and the summary says why. A kernel that crashes the measuring process under the profiler is a
reason; the next request starts a fresh process, as after a crash while timing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from tuner.backends.pycuda.kernel_count import CountedKernel, CountRequest, KernelCount
from tuner.compile.result import CompileResult
from tuner.config import Config
from tuner.counters.conditions import L2_FLUSHED, describe_conditions
from tuner.counters.metrics import SM_CLOCK, TENSOR_INSTRUCTIONS, missing_essentials, wanted
from tuner.counters.ncu import one_line
from tuner.counters.ncu_csv import RawMetrics
from tuner.counters.sources import Counted, CounterSource, Say, counters_row
from tuner.errors import TunerError
from tuner.kernels.discovery import get_family
from tuner.kernels.render import launch, render


class CountsLaunches(Protocol):
    """What counting needs of the backend: its device, its compiled kernels, its measuring process's counts."""

    def device(self) -> dict[str, Any]: ...

    def compiled(self, source: str) -> CompileResult: ...

    def count_launches(self, request: CountRequest) -> tuple[KernelCount, ...]: ...

    def end_counting(self) -> None: ...


UNITS = {"byte": "byte", "nanosecond": "nsecond", "second": "second", "instruction": "inst",
         "l1tex_wavefront": "wavefront"}
"""CUPTI's dimension units as the counters' parser reads units (tuner.counters.ncu_csv)."""


def parser_unit(metric: str, cupti_unit: str) -> str:
    """The unit a value of ``metric`` is recorded in (``cycle/second`` for a clock: CUPTI's ``gpc_cycle`` per
    second)."""
    unit = "cycle" if cupti_unit.endswith("cycle") else UNITS.get(cupti_unit, cupti_unit)
    return f"{unit}/second" if metric == SM_CLOCK or metric.endswith(".per_second") else unit


def raw_metrics(answer: KernelCount) -> RawMetrics:
    """The answer's values as a profiled kernel's metrics (metric → (value, unit)), as Nsight Compute's are read."""
    return {metric: (repr(float(value)), parser_unit(metric, answer.units.get(metric, "")))
            for metric, value in answer.values.items()}


class MeasuringProcessCounters:
    """Counts configurations in ``backend``'s measuring process; ``fallback`` (Nsight Compute) where CUPTI cannot."""

    def __init__(self, backend: CountsLaunches, fallback: CounterSource):
        self.backend = backend
        self.fallback = fallback

    def count(self, configs: Sequence[Config], say: Say | None = None, detail: bool = True) -> Counted:
        if not configs:
            return Counted()
        try:
            counted, unavailable = self._count_all(configs, say, detail)
        finally:
            self.backend.end_counting()
        if unavailable is None:
            return counted
        fallback = self.fallback.count(configs, say, detail)
        return replace(fallback, how=f"{fallback.how} (CUPTI could not count here: {one_line(unavailable)})")

    def _count_all(self, configs: Sequence[Config], say: Say | None, detail: bool) -> tuple[Counted, str | None]:
        """What the measuring process counted, one session per workspace, or (nothing counted yet) why CUPTI cannot
        count here."""
        metrics = wanted(detail)
        device: dict[str, Any] = dict(self.backend.device()["device"])
        rows: list[dict[str, Any]] = []
        reasons: list[str] = []
        passes: list[int] = []
        version, done = "", 0
        for group in self._sessions(configs, reasons):
            for config, answer in zip(group, self._count_session(group, metrics), strict=True):
                lacking_essentials = missing_essentials(set(answer.values), detail) if answer.status == "ok" else []
                if lacking_essentials:
                    answer = KernelCount("unavailable", f"the GPU lacks the metric(s) {', '.join(lacking_essentials)}"
                                                        f" that place a kernel on the hierarchical roofline")
                if answer.status == "unavailable" and not rows:
                    return Counted(), answer.reason
                if answer.status != "ok":
                    reasons.append(f"{config.key}: {answer.status} under the profiler "
                                   f"({one_line(answer.reason, 160)})")
                    continue
                lacking = [m for m in answer.missing if m not in TENSOR_INSTRUCTIONS]
                rows.append(counters_row(config, raw_metrics(answer), device, answer.version, answer.passes,
                                         lacking, cache_control=L2_FLUSHED))
                passes.append(answer.passes)
                version = answer.version
            done += len(group)
            if say is not None:
                say(f"counters: {done}/{len(configs)} kernels counted in the measuring process")
        how = describe_conditions(version, passes, detail, L2_FLUSHED) if rows else ""
        return Counted(rows, reasons, how), None

    def _sessions(self, configs: Sequence[Config], reasons: list[str]) -> list[list[Config]]:
        """The configurations that can be counted, by the workspace they run on (problem, dtype, arguments): one
        profiling session each; why the others cannot, in ``reasons``."""
        groups: dict[tuple[Any, ...], list[Config]] = {}
        for config in sorted(configs, key=lambda c: (c.problem, c.dtype, c.family, c.params)):
            family = get_family(config.family)
            if family.target != "cuda":
                reasons.append(f"{config.key}: a {family.target} kernel has no GPU counters")
                continue
            groups.setdefault((config.problem, config.dtype, family.kernel), []).append(config)
        return list(groups.values())

    def _count_session(self, group: list[Config], metrics: tuple[str, ...]) -> list[KernelCount]:
        """The measuring process's answers for the group, counted in one session; a session that fails (a crash, a
        launch refused) is counted again one kernel at a time, so that its answers say which kernel failed."""
        answers: list[KernelCount | None] = [None] * len(group)
        kernels: list[tuple[int, CountedKernel]] = []
        for index, config in enumerate(group):
            try:
                geometry = launch(config)
                compiled = self.backend.compiled(render(config))
            except (TunerError, ValueError) as exc:
                answers[index] = KernelCount("refused", str(exc))
                continue
            if not compiled.ok or compiled.binary is None:
                answers[index] = KernelCount("refused", f"does not compile ({one_line(compiled.log, 120)})")
                continue
            kernels.append((index, CountedKernel(config, compiled.binary, geometry)))
        if kernels:
            counted = self.backend.count_launches(CountRequest(tuple(k for _, k in kernels), metrics))
            if len(kernels) > 1 and any(a.status in ("alone", "crashed") for a in counted):
                counted = tuple(self.backend.count_launches(CountRequest((k,), metrics))[0] for _, k in kernels)
            for (index, _), answer in zip(kernels, counted, strict=True):
                answers[index] = answer
        return [answer or KernelCount("refused", "not counted") for answer in answers]
