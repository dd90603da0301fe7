"""A kernel table from tuning runs: for each shape and dtype, the fastest ``ok`` configuration any of the runs
recorded, with its baseline ratio, the device and toolkit of its measurement, and its kernel's source; and the next
fastest distinct configurations recorded on the shape, with their times, for prediction."""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.kernels.discovery import UnknownFamily, get_family, template_text_hash
from tuner.kernels.render import render
from tuner.measure.measurement import Status
from tuner.results import table as results
from tuner.table.artifact import Alternative, Entry, KernelTable

KEPT_PER_SHAPE = 8
"""Configurations a table keeps per shape and dtype: the winner and the next fastest distinct ones."""


def read_run(run_dir: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A run folder's results table and metadata (a mapping; {} where it holds none)."""
    if not (run_dir / results.RESULTS_PARQUET).is_file():
        raise TunerError(f"{run_dir}: no {results.RESULTS_PARQUET} here; give the output folder of a tuning run")
    try:
        df, metadata = results.load(run_dir)
    except (OSError, ValueError) as exc:
        raise TunerError(f"{run_dir}: cannot read the run's results ({exc})") from None
    return df, metadata if isinstance(metadata, dict) else {}


def environment(metadata: Mapping[str, Any], metadata_id: Any) -> Mapping[str, Any]:
    """The recorded environment a row was measured in ({} where the metadata does not hold it)."""
    environments = metadata.get("environments")
    found = environments.get(str(metadata_id)) if isinstance(environments, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _text(mapping: Any, key: str) -> str | None:
    value = mapping.get(key) if isinstance(mapping, Mapping) else None
    return str(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else None


def baseline_times(df: pd.DataFrame) -> dict[tuple[str, str], float]:
    """The baseline's median time per (problem label, dtype), where the run measured it."""
    ok = df[(df["family"] == results.BASELINE_FAMILY) & (df["status"] == Status.OK.value)]
    return {(str(r["problem"]), str(r["dtype"])): float(r["time_median_ms"]) for _, r in ok.iterrows()
            if pd.notna(r["time_median_ms"]) and r["time_median_ms"] > 0}


def ok_times(df: pd.DataFrame, into: dict[Config, float] | None = None) -> dict[Config, float]:
    """Each configuration the results measured ok (the baseline aside), with its fastest median time; added to
    ``into`` where given."""
    times = {} if into is None else into
    ok = df[(df["status"] == Status.OK.value) & (df["family"] != results.BASELINE_FAMILY)
            & pd.to_numeric(df["time_median_ms"], errors="coerce").gt(0)]
    for _, row in ok.iterrows():
        config = results.config_of_row(row)
        times[config] = min(times.get(config, math.inf), float(row["time_median_ms"]))
    return times


def alternatives(times: Mapping[Config, float], winner: Config) -> tuple[Alternative, ...]:
    """The fastest configurations of ``winner``'s shape and dtype after it, fewer than ``KEPT_PER_SHAPE``."""
    mine = sorted((t, c.key, c) for c, t in times.items()
                  if c.problem == winner.problem and c.dtype == winner.dtype and c != winner)
    return tuple(Alternative(c.family, dict(c.params), t) for t, _, c in mine[:KEPT_PER_SHAPE - 1])


def source_name(entry_label: str, family: str) -> str:
    suffix = ".cu" if get_family(family).target == "cuda" else ".c"
    return entry_label.replace(" ", "_") + suffix


def run_entries(run_dir: Path) -> list[tuple[Entry, Config]]:
    """Each (entry, configuration) of one run: its fastest ok row per problem and dtype."""
    df, metadata = read_run(run_dir)
    baselines = baseline_times(df)
    found = []
    for _, row in results.best_rows(df).iterrows():
        config = results.config_of_row(row)
        env = environment(metadata, row.get("metadata_id"))
        device, versions = env.get("device", {}), env.get("versions", {})
        hashes = env.get("template_texts") or env.get("templates") or {}
        time_ms = float(row["time_median_ms"])
        base = baselines.get((str(row["problem"]), config.dtype))
        problem = config.problem
        label = f"{problem.label} {config.dtype}"
        try:
            source = source_name(label, config.family)
        except UnknownFamily as exc:
            raise TunerError(f"{run_dir}: {exc}") from None
        multiprocessors = device.get("multiprocessors") if isinstance(device, Mapping) else None
        found.append((Entry(
            M=problem.M, N=problem.N, K=problem.K, dtype=config.dtype, family=config.family,
            params=dict(config.params), time_median_ms=time_ms,
            tflops=2.0 * problem.M * problem.N * problem.K / (time_ms * 1e-3) / 1e12,
            baseline_ratio=base / time_ms if base else None,
            device_name=_text(device, "name") or str(row.get("device_name") or "unknown"),
            compute_capability=_text(device, "compute_capability"),
            multiprocessors=multiprocessors if isinstance(multiprocessors, int) and multiprocessors > 0 else None,
            toolkit=_text(versions, "nvcc") or _text(versions, "cuda"), run=str(run_dir),
            template_hash=_text(hashes, config.family), source=source,
            source_template_hash=template_text_hash(config.family)), config))
    return found


def build_table(run_dirs: Sequence[Path]) -> tuple[KernelTable, dict[str, str]]:
    """The table of the runs' winners (the fastest across runs where several tuned a shape and dtype) and the
    rendered source of each entry (file name → text)."""
    best: dict[tuple[Problem, str], tuple[Entry, Config]] = {}
    times: dict[Config, float] = {}
    for number, run_dir in enumerate(run_dirs, 1):
        print(f"[{number}/{len(run_dirs)}] reading {run_dir}", file=sys.stderr, flush=True)
        ok_times(read_run(run_dir)[0], times)
        for entry, config in run_entries(run_dir):
            key = (entry.problem, entry.dtype)
            if key not in best or entry.time_median_ms < best[key][0].time_median_ms:
                best[key] = entry, config
    if not best:
        raise TunerError(f"{', '.join(map(str, run_dirs))}: no ok evaluation to make a kernel table of")
    ordered = sorted(((replace(e, alternatives=alternatives(times, c)), c) for e, c in best.values()),
                     key=lambda pair: (pair[0].dtype, pair[0].M, pair[0].N, pair[0].K))
    sources = {entry.source: render(config) for entry, config in ordered}
    return KernelTable(tuple(e for e, _ in ordered), tuple(map(str, run_dirs))), sources


def _compiled_for(arch: str, sources: Sequence[str]) -> dict[str, Any]:
    """Each source compiled for ``arch``, one nvcc per core (:func:`tuner.compile.pool.compile_all`)."""
    from tuner.compile.nvcc import compile_source
    from tuner.compile.pool import compile_all

    def said(done: int, total: int, source: str) -> None:
        print(f"[{done}/{total}] compiled a kernel for {arch}", file=sys.stderr, flush=True)

    return compile_all(sources, functools.partial(compile_source, arch=arch), progress=said)


def compile_cubins(table: KernelTable, sources: Mapping[str, str]) -> tuple[KernelTable, dict[str, bytes]]:
    """Each CUDA entry's source compiled for the GPU it was tuned on (its family's architecture, else its compute
    capability's), named in the entry; an entry nvcc cannot build keeps no cubin and is named on stderr."""
    from tuner.table.loaded import cubin_name
    from tuner.table.predict import arch_of

    archs: dict[str, str] = {}
    for entry in table.entries:
        arch = get_family(entry.family).arch or arch_of(entry.compute_capability)
        if get_family(entry.family).target == "cuda" and arch:
            archs[entry.source] = arch
    results = {arch: _compiled_for(arch, [sources[name] for name, wanted in archs.items() if wanted == arch])
               for arch in sorted(set(archs.values()))}
    cubins: dict[str, bytes] = {}
    entries = []
    for entry in table.entries:
        arch = archs.get(entry.source)
        result = results[arch][sources[entry.source]] if arch else None
        if result is None or not result.ok or result.binary is None:
            if result is not None:
                print(f"{entry.source}: nvcc refused it for {arch}; the entry keeps no cubin ({result.log[:200]})",
                      file=sys.stderr)
            entries.append(entry)
            continue
        name = cubin_name(entry.source, arch or "")
        cubins[name] = result.binary
        entries.append(replace(entry, cubin=name))
    return replace(table, entries=tuple(entries)), cubins
