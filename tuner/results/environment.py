"""The environment of a run's measurements: the device, its peaks and measured ceilings, versions, git state, the
measuring method, compile settings and the families' templates.

A backend's ``metadata()`` returns an :class:`Environment` as the mapping :meth:`Environment.as_dict` makes (the
form metadata.json keeps under ``environments``, keyed by :func:`tuner.results.metadata.metadata_id`);
:meth:`Environment.from_dict` reads any such mapping back, a recording's or a hand-edited one, leniently: a field
that is missing or not of its type reads as empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CPU_BACKEND = "cpu"
"""The backend name of the environments measured on the CPU."""
RECORDED_BACKEND = "recorded"
"""The backend name of the environments of a recording replayed from a file (tuner.backends.replay.recorded)."""


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class Environment:
    """Where and how a run's evaluations were measured (one entry of metadata.json's ``environments``)."""

    backend: str | None
    """pycuda, cpu, replay's recorded backend, ..."""
    device: dict[str, Any]
    """The device's description: name, uuid, compute capability, multiprocessors, clocks (a GPU's); the CPU's model
    and thread count."""
    peaks: dict[str, Any]
    """``theoretical`` and ``measured``: float32_gflops, float64_gflops, int32_gflops, bandwidth_gbs, ..."""
    ceilings: dict[str, Any]
    """How and when the measured peaks were measured: method, measured_utc, load (and a CPU's by_threads)."""
    versions: dict[str, Any]
    """driver, cuda_driver_api, cuda, nvcc, pycuda (a GPU's) or cc, blas (a CPU's); python, numpy, optuna, tuner."""
    git: dict[str, Any]
    """{commit, dirty} of the checkout holding the tuner."""
    measure: dict[str, Any]
    """The measure settings and the method they make, in words."""
    compile: dict[str, Any]
    """arch, options, compiler (nvcc's); compiler, path, flags, openmp (a C compiler's)."""
    templates: dict[str, str] = field(default_factory=dict)
    """Each family's template hash (with the code it imports)."""
    template_texts: dict[str, str] = field(default_factory=dict)
    """Each family's template text hash."""
    template_dirs: list[str] = field(default_factory=list)
    """The folders of families beyond the package's."""
    families: dict[str, Any] = field(default_factory=dict)
    """What a report needs of the families in those folders, as data
    (:func:`tuner.kernels.discovery.folder_family_records`)."""
    created_utc: str | None = None
    energy: dict[str, Any] | None = None
    """How energy is read on this device, where it is."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form metadata.json keeps (``energy`` only where there is one)."""
        data = {
            "backend": self.backend, "device": self.device, "peaks": self.peaks, "ceilings": self.ceilings,
            "versions": self.versions, "git": self.git, "measure": self.measure, "compile": self.compile,
            "templates": self.templates, "template_texts": self.template_texts, "template_dirs": self.template_dirs,
            "families": self.families, "created_utc": self.created_utc,
        }
        return {**data, **({"energy": self.energy} if self.energy else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Environment:
        """The environment a metadata mapping describes; a field missing or of another type reads as empty."""
        data = _mapping(data)
        dirs = data.get("template_dirs")
        created = data.get("created_utc")
        backend = data.get("backend")
        return cls(
            backend=backend if isinstance(backend, str) else None,
            device=_mapping(data.get("device")), peaks=_mapping(data.get("peaks")),
            ceilings=_mapping(data.get("ceilings")), versions=_mapping(data.get("versions")),
            git=_mapping(data.get("git")), measure=_mapping(data.get("measure")),
            compile=_mapping(data.get("compile")), templates=_mapping(data.get("templates")),
            template_texts=_mapping(data.get("template_texts")),
            template_dirs=[str(d) for d in dirs] if isinstance(dirs, list) else [],
            families=_mapping(data.get("families")), created_utc=created if isinstance(created, str) else None,
            energy=_mapping(data.get("energy")) or None,
        )

    @property
    def on_cpu(self) -> bool:
        """Whether the CPU backend measured in it (recorded with its BLAS)."""
        return self.backend == CPU_BACKEND or "blas" in self.versions

    @property
    def measured_peaks(self) -> dict[str, Any]:
        return _mapping(self.peaks.get("measured"))

    @property
    def multiprocessors(self) -> int | None:
        count = self.device.get("multiprocessors")
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    @property
    def ceilings_under_load(self) -> bool:
        """Whether its ceilings were measured under load (:mod:`tuner.measure.machine_load`)."""
        return bool(_mapping(self.ceilings.get("load")).get("under_load"))


def environments_of(metadata: Mapping[str, Any] | None) -> dict[str, Environment]:
    """The environments of a run's metadata, by metadata id."""
    found = _mapping(_mapping(metadata).get("environments"))
    return {str(key): Environment.from_dict(env) for key, env in found.items() if isinstance(env, Mapping)}


def on_cpu(environment: Mapping[str, Any] | None) -> bool:
    """Whether an environment mapping is a CPU's (the CPU backend's, recorded with its BLAS)."""
    return isinstance(environment, Mapping) and Environment.from_dict(environment).on_cpu


def _measured_on(metadata: Mapping[str, Any]) -> set[str]:
    """The kinds of device ("CPU", "GPU") the run's environments measured on; a recording replayed from a file
    that does not say (a Kernel Tuner cache, T4 results) adds none."""
    kinds = set()
    for env in environments_of(metadata).values():
        if env.on_cpu:
            kinds.add("CPU")
        elif env.backend != RECORDED_BACKEND:
            kinds.add("GPU")
    return kinds


def baseline_library(metadata: Mapping[str, Any]) -> str:
    """What the baseline rows measured: numpy's BLAS where the run measured on the CPU, cuBLAS on a GPU, and
    "baseline" where only a recording of an unknown device was replayed."""
    kinds = _measured_on(metadata)
    return "BLAS" if "CPU" in kinds else "cuBLAS" if kinds or not environments_of(metadata) else "baseline"


def ceilings_under_load(metadata: Mapping[str, Any] | None, metadata_id: Any) -> bool:
    """Whether the ceilings of the environment ``metadata_id`` were measured under load
    (:mod:`tuner.measure.machine_load`)."""
    environment = environments_of(metadata).get(str(metadata_id))
    return environment is not None and environment.ceilings_under_load


def measuring_device(metadata: Mapping[str, Any]) -> str:
    """"CPU" where the run measured on the CPU, "GPU" on a GPU, and "device" where only a recording of an unknown
    device was replayed."""
    return {"BLAS": "CPU", "cuBLAS": "GPU"}.get(baseline_library(metadata), "device")
