"""Where a run's counters come from: Nsight Compute on this GPU, or the recording a replay answers from.

A source counts configurations (``count``) and answers the rows of ``counters.parquet`` it could make, with a
one-line reason for each thing it could not, and how the counters were read. Neither raises for a GPU, a
profiler or a recording that cannot give counters: that is a reason, and the run goes on.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from tuner.compile.nvcc import compile_source
from tuner.config import Config
from tuner.counters import store
from tuner.counters.conditions import CACHE_CONTROL, CLOCK_CONTROL, describe_conditions
from tuner.counters.job import MANIFEST_FILE, Job, JobKernel, Manifest
from tuner.counters.metrics import FLOP_INSTRUCTIONS, TENSOR_INSTRUCTIONS, Counts, available, missing_essentials, wanted
from tuner.counters.ncu import (
    NcuUnavailable,
    Session,
    failure_reason,
    find_ncu,
    known_metrics,
    ncu_version,
    one_line,
    run_session,
)
from tuner.counters.ncu_csv import RawMetrics, parse_ncu_raw
from tuner.errors import TunerError
from tuner.kernels.discovery import get_family
from tuner.kernels.render import launch, render
from tuner.settings import CompileSettings

Say = Callable[[str], None]
PROGRESS_INTERVAL_S = 5.0
LOG_CHARS = 4000


@dataclass
class Counted:
    """What a source counted: counters.parquet rows, reasons for what it could not, and how it read them."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    how: str = ""
    page: str = ""
    """Nsight Compute's raw CSV page of the session, where one ran."""
    order: tuple[str, ...] = ()
    """The configuration keys the session launched, in launch order (the page's kernels, one each)."""
    log: str = ""
    """The end of what Nsight Compute and the profiled process printed."""


class CounterSource(Protocol):
    def count(self, configs: Sequence[Config], say: Say | None = None, detail: bool = True) -> Counted:
        """Count ``configs``; ``detail`` False leaves out the metrics that cost most (for counting many)."""
        ...


# --- Nsight Compute ---------------------------------------------------------------------------------------


class NcuCounters:
    """Counts configurations with Nsight Compute: one session for all of them, on one GPU."""

    def __init__(self, compile_settings: CompileSettings, input_seed: int = 0, gpu: str | None = None,
                 family_dirs: Sequence[str | os.PathLike[str]] = (), device_name: str = ""):
        self.compile = compile_settings
        self.input_seed = input_seed
        self.gpu = gpu
        self.family_dirs = tuple(str(d) for d in family_dirs)
        self.device_name = device_name

    def count(self, configs: Sequence[Config], say: Say | None = None, detail: bool = True) -> Counted:
        if not configs:
            return Counted()
        try:
            ncu = find_ncu()
            version = ncu_version(ncu)
            known = known_metrics(ncu, self.device_name)
        except NcuUnavailable as exc:
            return Counted(reasons=[str(exc)])
        asked = wanted(detail)
        metrics = available(asked, known)[0] if known is not None else list(asked)
        missing = missing_essentials(set(metrics), detail)
        if missing:
            return Counted(reasons=[f"the GPU lacks the metric(s) {', '.join(missing)} that place a kernel on the "
                                    f"hierarchical roofline (Nsight Compute {version})"])
        with tempfile.TemporaryDirectory(prefix="tuner-counters-") as tmp:
            folder = Path(tmp)
            kernels, reasons = self._job_kernels(configs, folder)
            if not kernels:
                return Counted(reasons=reasons)
            Job(tuple(kernels), self.family_dirs, self.input_seed).write(folder)
            try:
                session = run_session(ncu, metrics, folder, len(kernels), self._env(),
                                      _progress(say, len(kernels)))
            except NcuUnavailable as exc:
                return Counted(reasons=[*reasons, str(exc)])
            manifest = Manifest.read(folder / MANIFEST_FILE)
        lacking = [m for m in asked if m not in session.metrics]
        rows, more = session_rows(session, manifest, kernels, version, lacking)
        return Counted(rows, [*reasons, *more], describe_conditions(version, session.passes, detail), session.raw_csv,
                       tuple(kernels[k.index].config.key for k in manifest.started), session.output[-LOG_CHARS:])

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu
        return env

    def _job_kernels(self, configs: Sequence[Config], folder: Path) -> tuple[list[JobKernel], list[str]]:
        """Each configuration's cubin (from the compile cache, or compiled now) and launch, ordered by problem
        and dtype so that the profiled process makes each workspace once."""
        kernels, reasons = [], []
        for config in sorted(configs, key=lambda c: (c.problem, c.dtype, c.family, c.params)):
            try:
                if get_family(config.family).target != "cuda":
                    reasons.append(f"{config.key}: a {get_family(config.family).target} kernel has no GPU counters")
                    continue
                compiled = compile_source(render(config), self.compile.arch, self.compile.options)
                launch(config)  # a configuration the family cannot launch is said so here
            except (TunerError, ValueError) as exc:
                reasons.append(f"{config.key}: {one_line(str(exc), 160)}")
                continue
            if not compiled.ok or compiled.binary is None:
                reasons.append(f"{config.key}: does not compile ({one_line(compiled.log, 120)})")
                continue
            cubin = folder / f"{hashlib.sha256(compiled.binary).hexdigest()[:20]}.cubin"
            cubin.write_bytes(compiled.binary)
            kernels.append(JobKernel(config, cubin))
        return kernels, reasons


def session_rows(session: Session, manifest: Manifest, kernels: Sequence[JobKernel], version: str,
                 lacking: Sequence[str] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """The counters.parquet rows of a session's profiled kernels (matched to the job's kernels by the launches the
    manifest records, in order), and the reasons for those it has none of."""
    reasons = [f"{k.key}: {k.status} under the profiler ({one_line(k.reason, 160)})" for k in manifest.kernels
               if k.status != "ok"]
    if not session.raw_csv:
        return [], [*reasons, f"Nsight Compute profiled nothing: {failure_reason(session.output)}"]
    try:
        profiled = parse_ncu_raw(session.raw_csv)
    except TunerError as exc:
        return [], [*reasons, str(exc)]
    missing = missing_essentials(set(profiled[0]), detail=bool(set(FLOP_INSTRUCTIONS) & set(session.metrics)))
    if missing:
        return [], [*reasons, f"the GPU lacks the metric(s) {', '.join(missing)} that place a kernel on the "
                              f"hierarchical roofline (Nsight Compute {version})"]
    launched = manifest.ran if len(profiled) == len(manifest.ran) else manifest.started
    if len(profiled) != len(launched):
        return [], [*reasons, f"Nsight Compute profiled {len(profiled)} kernels of the {len(manifest.ran)} "
                              f"launched, so its results cannot be matched to the configurations"]
    by_index = {i: k for i, k in enumerate(kernels)}
    passes = session.passes if len(session.passes) == len(profiled) else (max(session.passes, default=0),) * \
        len(profiled)
    device = manifest.device
    rows = []
    for launched_kernel, metrics, replays in zip(launched, profiled, passes, strict=True):
        kernel = by_index[launched_kernel.index]
        name = metrics.get("Kernel Name", ("", ""))[0]
        if name and not name.startswith(kernel.launch.kernel_name):
            return [], [*reasons, f"Nsight Compute's kernel {name!r} is not the launched {kernel.launch.kernel_name!r}"
                                  f": its results cannot be matched to the configurations"]
        if launched_kernel.status == "ok":
            rows.append(counters_row(kernel.config, metrics, device, version, replays or None, lacking))
    return rows, reasons


def _progress(say: Say | None, total: int) -> Callable[[int], None] | None:
    if say is None:
        return None
    last = [0.0]

    def report(launched: int) -> None:
        if time.monotonic() - last[0] >= PROGRESS_INTERVAL_S or launched == total:
            last[0] = time.monotonic()
            say(f"counters: {launched}/{total} kernels profiled by Nsight Compute")

    return report


def counters_row(config: Config, metrics: RawMetrics, device: dict[str, Any], version: str, passes: int | None,
                 lacking: Sequence[str], cache_control: str = CACHE_CONTROL) -> dict[str, Any]:
    """The counters.parquet row of one counted launch (``version``: the tool's, tuner.counters.conditions)."""
    counts = Counts.of(metrics)
    flops, how = counts.flops(get_family(config.family).flops(config.problem))
    return {
        "config_key": config.key, "gpu_name": device.get("name"), "gpu_uuid": device.get("uuid"),
        "dram_bytes": counts.dram_bytes, "l2_bytes": counts.l2_bytes, "l1_bytes": counts.l1_bytes,
        "l1_requested_bytes": counts.requested_bytes, "shared_wavefronts": counts.shared_wavefronts,
        "flops_counted": flops, "flops_counted_how": how, "tensor_instructions": counts.tensor_instructions,
        "counters_time_ms": counts.duration_s * 1e3 if counts.duration_s is not None else None,
        "counted_utc": datetime.now(UTC).isoformat(timespec="seconds"), "ncu_version": version,
        "clock_control": CLOCK_CONTROL, "cache_control": cache_control, "replay_passes": passes,
        "sm_clock_mhz": counts.sm_clock_hz / 1e6 if counts.sm_clock_hz else None,
        "metrics_missing": ",".join(m for m in lacking if m not in TENSOR_INSTRUCTIONS) or None,
        "raw_metrics": store.raw_json(metrics),
    }


# --- a recording -------------------------------------------------------------------------------------------


class RecordedCounters:
    """The counters a recording holds (its counters.parquet), for the configurations a replay asks: copied,
    never made up."""

    def __init__(self, recording: str | os.PathLike[str]):
        path = Path(recording)
        self.path = path
        self.folder = path if path.is_dir() else path.parent

    def count(self, configs: Sequence[Config], say: Say | None = None, detail: bool = True) -> Counted:
        if not configs:
            return Counted()
        recorded = store.load(self.folder)
        if recorded.empty:
            return Counted(reasons=[f"the recording {self.path} holds no counters (it was recorded without them)"])
        keys = {c.key for c in configs}
        found = recorded[recorded["config_key"].isin(keys)]
        rows = [{k: (None if v is pd.NA or (isinstance(v, float) and v != v) else v) for k, v in r.items()}
                for r in found.to_dict("records")]
        reasons = []
        if len(set(found["config_key"])) < len(keys):
            reasons.append(f"the recording {self.path} counted {len(set(found['config_key']))} of the {len(keys)} "
                           f"configurations asked for")
        versions = sorted(set(found["ncu_version"].dropna().astype(str)))
        passes = [int(p) for p in found["replay_passes"].dropna()]
        caches = sorted(set(found["cache_control"].dropna().astype(str))) or [CACHE_CONTROL]
        how = ("replayed from the recording's counters"
               + (f": {describe_conditions(', '.join(versions), passes, cache_control='/'.join(caches))}"
                  if versions else ""))
        return Counted(rows, reasons, how)
