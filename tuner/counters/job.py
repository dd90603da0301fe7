"""What the profiled process is asked to launch (the job) and what it says it launched (the manifest).

The job is a JSON file: the family folders to load, the input seed, and each kernel's configuration and cubin file,
in launch order (the profiled process takes each launch's geometry from the configuration's family, as the
measuring process does). The manifest is a file of JSON lines the profiled process appends to as it
goes: its device first, then ``launching`` before each launch and the outcome after it (``ok``, ``wrong``,
``refused`` for a launch the driver turned down before it ran). A process that dies leaves a kernel with no
outcome: the one that killed it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from tuner.config import Config
from tuner.kernels.render import Launch, launch
from tuner.results import table as results

JOB_FILE = "job.json"
MANIFEST_FILE = "manifest.jsonl"
LAUNCHED = ("ok", "wrong")
"""Outcomes of a kernel that ran (and so was profiled)."""


@dataclass(frozen=True)
class JobKernel:
    config: Config
    cubin: Path

    @property
    def launch(self) -> Launch:
        return launch(self.config)


@dataclass(frozen=True)
class Job:
    kernels: tuple[JobKernel, ...]
    family_dirs: tuple[str, ...] = ()
    input_seed: int = 0

    def write(self, folder: Path) -> Path:
        path = folder / JOB_FILE
        path.write_text(json.dumps({
            "family_dirs": list(self.family_dirs), "input_seed": self.input_seed,
            "kernels": [{"config": results.config_to_dict(k.config), "cubin": str(k.cubin)} for k in self.kernels],
        }, indent=1))
        return path

    @classmethod
    def read(cls, path: Path) -> Job:
        data = json.loads(path.read_text())
        kernels = tuple(JobKernel(results.config_from_dict(entry["config"]), Path(entry["cubin"]))
                        for entry in data["kernels"])
        return cls(kernels, tuple(data.get("family_dirs", ())), int(data.get("input_seed", 0)))


class ManifestWriter:
    """The profiled process's side: one flushed JSON line per event, so that a crash loses nothing written."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def _line(self, **fields: Any) -> None:
        self.stream.write(json.dumps(fields) + "\n")
        self.stream.flush()

    def device(self, device: dict[str, Any]) -> None:
        self._line(event="device", device=device)

    def launching(self, index: int, key: str) -> None:
        self._line(event="launching", index=index, key=key)

    def outcome(self, index: int, key: str, status: str, reason: str = "") -> None:
        self._line(event="outcome", index=index, key=key, status=status, reason=reason)


@dataclass(frozen=True)
class Launched:
    index: int
    key: str
    status: str
    """ok, wrong, refused, or crashed (no outcome written)."""
    reason: str = ""


@dataclass(frozen=True)
class Manifest:
    device: dict[str, Any]
    kernels: tuple[Launched, ...]

    @property
    def ran(self) -> list[Launched]:
        """The kernels that ran and finished, in launch order: Nsight Compute's rows, one each."""
        return [k for k in self.kernels if k.status in LAUNCHED]

    @property
    def started(self) -> list[Launched]:
        """The kernels that ran, a crashed one too, in launch order (the profiler may have a row of the crashed
        one)."""
        return [k for k in self.kernels if k.status in (*LAUNCHED, "crashed")]

    @classmethod
    def read(cls, path: Path) -> Manifest:
        device: dict[str, Any] = {}
        started: dict[int, str] = {}
        outcomes: dict[int, tuple[str, str]] = {}
        for event in _events(path):
            if event.get("event") == "device":
                device = event.get("device") or {}
            elif event.get("event") == "launching":
                started[int(event["index"])] = str(event["key"])
            elif event.get("event") == "outcome":
                outcomes[int(event["index"])] = (str(event["status"]), str(event.get("reason") or ""))
        kernels = tuple(Launched(i, key, *outcomes.get(i, ("crashed", "the profiled process ended during this "
                                                                      "kernel")))
                        for i, key in sorted(started.items()))
        return cls(device, kernels)


def _events(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    for line in path.read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:  # the last line of a process killed while writing it
            continue
        if isinstance(event, dict):
            yield event


def launched_count(path: Path) -> int:
    """How many kernels the profiled process has started so far (for progress)."""
    return sum(1 for event in _events(path) if event.get("event") == "launching")
