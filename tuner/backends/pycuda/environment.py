"""The environment of the GPU backend's measurements: the GPU, its peaks and ceilings, the driver, CUDA, nvcc and
PyCUDA versions, git state, method and compile settings (:class:`tuner.results.environment.Environment`, as the
mapping ``Backend.metadata()`` returns)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from tuner.backends.pycuda.timing import describe_method
from tuner.errors import TunerError
from tuner.results.environment import Environment
from tuner.results.metadata import family_fields, git_state, python_versions
from tuner.settings import CompileSettings, MeasureSettings


def _nvcc_version() -> str | None:
    from tuner.compile.nvcc import nvcc_version

    try:
        return nvcc_version()
    except TunerError:
        return None


def gpu_environment(backend: str, device_summary: dict[str, Any] | None, measure: MeasureSettings,
                    compile_settings: CompileSettings) -> dict[str, Any]:
    """The :class:`Environment` of a GPU backend, as the mapping ``Backend.metadata()`` returns."""
    summary = device_summary or {}
    empty = {"float32_gflops": None, "float64_gflops": None, "int32_gflops": None, "bandwidth_gbs": None}
    peaks = summary.get("peaks") or {"theoretical": dict(empty), "measured": dict(empty)}
    device_versions = summary.get("versions") or {}
    versions = {
        "driver": device_versions.get("driver"),
        "cuda_driver_api": device_versions.get("cuda_driver_api"),
        "cuda": device_versions.get("cuda"),
        "nvcc": device_versions.get("nvcc") or _nvcc_version(),
        "pycuda": device_versions.get("pycuda"),
        **python_versions(),
    }
    ceilings = summary.get("ceilings") or {}
    return Environment(
        backend=backend,
        device=summary.get("device") or {},
        peaks=peaks,
        ceilings={"method": ceilings.get("method"), "measured_utc": ceilings.get("measured_utc"),
                  "load": ceilings.get("load"), "tensor_instructions": ceilings.get("tensor_instructions") or {}},
        versions=versions,
        git=git_state(),
        measure={**asdict(measure), "method": describe_method(measure)},
        compile={"arch": compile_settings.arch, "options": list(compile_settings.options),
                 "compiler": "nvcc -cubin, loaded with PyCUDA's module_from_buffer"},
        **family_fields(),
        created_utc=datetime.now(UTC).isoformat(timespec="seconds"),
        energy=summary.get("energy") or None,
    ).as_dict()
