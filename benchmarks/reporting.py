"""What the benchmark scripts share: naming a GPU in file names, TFLOP/s of a measurement, writing results."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.config import Problem
from tuner.errors import TunerError
from tuner.kernels import matmul
from tuner.measure.measurement import Measurement, Status
from tuner.results.metadata import metadata_id

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def gpu_slug(name: str) -> str:
    """A short file-name tag for a GPU, e.g. 'h100' for 'NVIDIA H100 80GB HBM3'."""
    match = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b", name)
    return (match.group(1) if match else re.sub(r"[^A-Za-z0-9]+", "_", name)).lower()


def tflops(problem: Problem, result: Measurement) -> float | None:
    if result.status is not Status.OK or result.timing is None:
        return None
    return matmul.flops(problem) / (result.timing.median_ms * 1e-3) / 1e12


def write(out: Path, name: str, env: dict[str, Any], text: str, record: dict[str, Any]) -> Path:
    """``out/<name>_<gpu>.txt`` (the printed table) and ``.json`` (``record`` with the environment and its id)."""
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{name}_{gpu_slug(env['device']['name'])}"
    stem.with_suffix(".txt").write_text(text + "\n")
    document = {**record, "metadata_id": metadata_id(env), "metadata": env}
    stem.with_suffix(".json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    return stem


def finish(produce: Callable[[], Path]) -> int:
    """Run a benchmark; 0 with the files it wrote named on stderr, or 2 with the one-paragraph error."""
    try:
        stem = produce()
    except TunerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {stem}.txt and {stem}.json", file=sys.stderr)
    return 0
