"""The environment of the CPU backend's measurements: the CPU, its peaks at the run's thread count, the
compiler and its flags, numpy's BLAS, versions, git state, method and templates (the dict of
``Backend.metadata()``, shaped as :func:`tuner.results.metadata.environment`'s)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from tuner.cpu.ceilings import peaks_at
from tuner.cpu.timing import describe_method
from tuner.results.metadata import git_state, python_versions
from tuner.settings import MeasureSettings


def cpu_environment(summary: dict[str, Any], threads: int, measure: MeasureSettings) -> dict[str, Any]:
    """Keys: backend, device (the CPU and the thread count), peaks {"theoretical", "measured"} at that thread
    count, ceilings, versions (cc, blas, python, numpy, optuna, tuner), git, measure, compile, templates,
    template_dirs, families, created_utc."""
    from tuner.cpu.info import blas_description
    from tuner.kernels.discovery import families, family_dirs, folder_family_records, template_hash, template_text_hash

    compiler = summary["versions"]
    ceilings = summary.get("ceilings") or {}
    return {
        "backend": "cpu",
        "device": {**summary["device"], "threads": threads},
        "peaks": peaks_at(summary, threads),
        "ceilings": {"method": ceilings.get("method"), "measured_utc": ceilings.get("measured_utc"),
                     "by_threads": summary.get("by_threads"), "load": ceilings.get("load")},
        "versions": {"cc": compiler["cc"], "blas": blas_description(threads), **python_versions()},
        "git": git_state(),
        "measure": {**asdict(measure), "method": describe_method(measure, threads)},
        "compile": {"compiler": compiler["cc"], "path": compiler["cc_path"], "flags": compiler["flags"],
                    "openmp": compiler["openmp"]},
        "templates": {name: template_hash(name) for name in families()},
        "template_texts": {name: template_text_hash(name) for name in families()},
        "template_dirs": [str(folder) for folder in family_dirs()],
        "families": folder_family_records(),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        **({"energy": summary["energy"]} if summary.get("energy") else {}),
    }
