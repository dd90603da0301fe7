"""The environment of the CPU backend's measurements: the CPU, its peaks at the run's thread count, the
compiler and its flags, numpy's BLAS, versions, git state, method and templates
(:class:`tuner.results.environment.Environment`, as the mapping ``Backend.metadata()`` returns)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from tuner.backends.cpu.summary import peaks_at
from tuner.backends.cpu.timing import describe_method
from tuner.results.environment import CPU_BACKEND, Environment
from tuner.results.metadata import family_fields, git_state, python_versions
from tuner.settings import MeasureSettings


def cpu_environment(summary: dict[str, Any], threads: int, measure: MeasureSettings) -> dict[str, Any]:
    """The environment of ``threads`` threads on the CPU ``summary`` describes: its device is the CPU with the
    thread count, its peaks those at that thread count."""
    from tuner.backends.cpu.info import blas_description

    compiler = summary["versions"]
    ceilings = summary.get("ceilings") or {}
    return Environment(
        backend=CPU_BACKEND,
        device={**summary["device"], "threads": threads},
        peaks=peaks_at(summary, threads),
        ceilings={"method": ceilings.get("method"), "measured_utc": ceilings.get("measured_utc"),
                  "by_threads": summary.get("by_threads"), "load": ceilings.get("load")},
        versions={"cc": compiler["cc"], "blas": blas_description(threads), **python_versions()},
        git=git_state(),
        measure={**asdict(measure), "method": describe_method(measure, threads)},
        compile={"compiler": compiler["cc"], "path": compiler["cc_path"], "flags": compiler["flags"],
                 "openmp": compiler["openmp"]},
        **family_fields(),
        created_utc=datetime.now(UTC).isoformat(timespec="seconds"),
        energy=summary.get("energy") or None,
    ).as_dict()
