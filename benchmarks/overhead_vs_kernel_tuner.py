"""The whole tuning command against Kernel Tuner's whole call, on the same kernels, side by side on one GPU.

    python benchmarks/overhead_vs_kernel_tuner.py [--rounds 2] [--out DIR]
        [--experiments experiments/fermi_like.yaml experiments/h100_sgemm.yaml] [--trials N]

Both tune every valid configuration of fermi_like.yaml's naive and tiled kernels at 4096³ (float32), each in a
fresh Python process, cold: each starts with an empty compile cache (the device's measured ceilings, which
both leave out of the comparison, stay cached for tuner). Timed from the process's start to its end:

* ``python -m tuner run`` with brute force: render, compile ahead in parallel, verify every kernel against the
  float64 reference, time it with the L2 flushed before each of at least 10 samples (noise-based stopping),
  record, summarise and write the report;
* ``kernel_tuner.tune_kernel`` with brute force, the same sources (rendered by tuner's templates through
  Kernel Tuner's code-generator interface) and its defaults (7 timed launches, no flush), with the float64
  reference as its ``answer`` so that it verifies too, the reference computed in the same process.

Before the rounds, one untimed warm-up does what a machine's first use of either tool does once: Python
compiles both packages' modules to bytecode, matplotlib builds its font cache, and ``python -m tuner device``
measures and caches the device's ceilings. Rounds alternate the two. Then each of ``--experiments`` runs as a
user runs it (``python -m tuner run``, its own sampler and budget, ``--trials`` overriding the budget where
given), cold and again with the compile cache the cold run filled, for its GPU-busy fraction: the device time
of every verification and timing over the search's wall time, from before the first baseline to the last
evaluation.

Writes ``overhead_vs_kernel_tuner_<gpu>.txt`` and ``.json``: wall time of each whole command, tuner's search
time, time to its first measurement, GPU-busy fraction, and the ratio tuner / Kernel Tuner; per experiment its
wall time, search time, evaluations, GPU-busy fraction, and the machine's CPU busy share and NVML GPU utilisation
during the search (:mod:`benchmarks.machine_usage`): a cold compile cache can leave every core compiling.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks.machine_usage import MachineUsage  # noqa: E402
from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from tuner.settings import cache_root  # noqa: E402

SIZE = 4096
EXPERIMENT = f"""\
name: overhead
description: fermi_like's naive and tiled kernels at {SIZE}³, float32, for the overhead benchmark.
problems:
  - {{M: {SIZE}, N: {SIZE}, K: {SIZE}}}
kernels:
  - template: naive
    parameters: {{BLOCK_X: [8, 16, 32, 64], BLOCK_Y: [4, 8, 16, 32], dtype: [float32]}}
  - template: tiled
    parameters: {{TILE_WIDTH: [8, 16, 32], dtype: [float32]}}
machine_models:
  - {{name: Fermi-like, peak_gflops: {{float32: 1000}}, bandwidth_gbs: 150}}
search: {{strategy: bruteforce, trials: 100}}
"""

KERNEL_TUNER = f"""
import sys, time
started = time.perf_counter()
sys.path.insert(0, {str(ROOT)!r})
import json
import numpy as np
import kernel_tuner
from tuner.config import Config, Problem
from tuner.kernels.discovery import get_family
from tuner.kernels.render import render
from tuner.space.entry_space import violations

size = {SIZE}
problem = Problem(size, size, size)
rng = np.random.default_rng(0)
A = rng.uniform(-1, 1, (size, size)).astype(np.float32)
B = rng.uniform(-1, 1, (size, size)).astype(np.float32)
C = np.zeros((size, size), np.float32)
reference = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
args = [A, B, C, np.int32(size), np.int32(size), np.int32(size)]
answer = [None, None, reference, None, None, None]
found = {{}}
for family, params in (("naive", {{"BLOCK_X": [8, 16, 32, 64], "BLOCK_Y": [4, 8, 16, 32]}}),
                       ("tiled", {{"TILE_WIDTH": [8, 16, 32]}})):
    spec = get_family(family)

    def source(values, family=family):
        return render(Config.make(problem, family, "float32", {{k: values[k] for k in params}}))

    def valid(*values, spec=spec, names=tuple(params)):  # Kernel Tuner passes the values in parameter order
        return not violations(spec, dict(zip(names, values)), "float32")

    block = ("BLOCK_X", "BLOCK_Y") if family == "naive" else ("TILE_WIDTH", "TILE_WIDTH")
    began = time.perf_counter()
    rows, env = kernel_tuner.tune_kernel(
        "matmul", source, (size, size), args, params, block_size_names=list(block),
        grid_div_x=[block[0]], grid_div_y=[block[1]], restrictions=valid, answer=answer, atol=1e-2,
        compiler_options=["-O3", "-arch=sm_90"], strategy="brute_force", verbose=False, quiet=True, lang="PYCUDA")
    found[family] = {{"configurations": len(rows), "seconds": time.perf_counter() - began,
                      "best_ms": min(r["time"] for r in rows)}}
print(json.dumps({{"wall_s": time.perf_counter() - started, "families": found,
                   "kernel_tuner": kernel_tuner.__version__}}))
"""


def _fresh_cache(folder: Path) -> dict[str, str]:
    """A compile cache holding only the device's measured ceilings (where it is new)."""
    if not folder.exists():
        folder.mkdir(parents=True)
        for ceilings in cache_root().glob("device-*.json"):
            (folder / ceilings.name).write_bytes(ceilings.read_bytes())
    return {**os.environ, "TUNER_CACHE_DIR": str(folder)}


def warm_up() -> None:
    """The one-time costs of a machine's first use, paid before anything is timed."""
    for command in ([sys.executable, "-m", "compileall", "-q", str(ROOT / "tuner"),
                     *(p for p in sys.path if p.endswith("site-packages") or p.startswith("/tmp/site"))],
                    [sys.executable, "-c", "import kernel_tuner, tuner.report, tuner.tuning.run, matplotlib.pyplot"],
                    [sys.executable, "-m", "tuner", "device"]):
        subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def _tune(experiment: Path, out: Path, cache: Path, extra: list[str]) -> float:
    """Run ``python -m tuner run`` into ``out`` with the compile cache ``cache``; its wall time."""
    env = _fresh_cache(cache)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tuner", "run", str(experiment), "--out", str(out), *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"tuner run {experiment} failed:\n{done.stderr}")
    return wall


def run_tuner(work: Path, index: int) -> dict[str, Any]:
    experiment = work / "overhead.yaml"
    experiment.write_text(EXPERIMENT)
    out = work / f"tuner-{index}"
    wall = _tune(experiment, out, work / f"cache-tuner-{index}", [])
    metadata = json.loads((out / "metadata.json").read_text())
    run = metadata["runs"][-1]
    import pandas as pd

    df = pd.read_parquet(out / "results.parquet")
    kernels = df[df["family"] != "baseline"]
    first = float(kernels["wall_offset_s"].min())
    return {"wall_s": wall, "search_s": run["wall_s"], "gpu_busy_fraction": run["gpu_busy_fraction"],
            "first_measurement_s": first, "evaluations": int(len(kernels)),
            "ok": int((kernels["status"] == "ok").sum()), "best_gflops": float(kernels["gflops"].max()),
            "samples_median": float(kernels["samples"].median()), "environment": next(iter(
                metadata["environments"].values()))}


def run_kernel_tuner(work: Path, index: int) -> dict[str, Any]:
    env = _fresh_cache(work / f"cache-kt-{index}")
    script = work / "kernel_tuner_call.py"
    script.write_text(KERNEL_TUNER)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"Kernel Tuner failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall_s": wall, **result}


def run_experiment(work: Path, experiment: Path, trials: int | None, cache: str) -> dict[str, Any]:
    """One run of the experiment into a new folder; ``cache``: "cold" (a new compile cache) or "warm" (the one
    the cold run filled)."""
    out = work / f"experiment-{experiment.stem}-{cache}"
    with MachineUsage() as usage:
        wall = _tune(experiment, out, work / f"cache-{experiment.stem}", [] if trials is None else
                     ["--trials", str(trials)])
    run = json.loads((out / "metadata.json").read_text())["runs"][-1]
    cpu, gpu = usage.mean(*_search_window(out))
    return {"experiment": str(experiment.relative_to(ROOT) if experiment.is_relative_to(ROOT) else experiment),
            "trials": trials, "cache": cache, "wall_s": wall, "search_s": run["wall_s"],
            "evaluations": run["evaluations"], "device_busy_s": run["device_busy_s"],
            "gpu_busy_fraction": run["gpu_busy_fraction"], "strategy": run["strategy"],
            "cpu_busy_percent": cpu, "nvml_gpu_utilization_percent": gpu}


def _search_window(out: Path) -> tuple[float, float]:
    """The search's start and its last evaluation, as time.time() instants, from the rows' UTC times and their
    offsets from the search's start."""
    import pandas as pd

    df = pd.read_parquet(out / "results.parquet", columns=["measured_at", "wall_offset_s"])
    at = pd.to_datetime(df["measured_at"].astype(str), utc=True).map(lambda t: t.timestamp())
    return float((at - df["wall_offset_s"].astype(float)).min()), float(at.max())


def produce(rounds: int, out: Path, experiments: list[Path], trials: int | None) -> Path:
    with tempfile.TemporaryDirectory(prefix="tuner-overhead-") as tmp:
        work = Path(tmp)
        warm_up()
        ours, theirs = [], []
        for index in range(rounds):
            theirs.append(run_kernel_tuner(work, index))
            ours.append(run_tuner(work, index))
        whole = [run_experiment(work, experiment.resolve(), trials, cache) for experiment in experiments
                 for cache in ("cold", "warm")]
    environment = ours[-1].pop("environment")
    for record in ours[:-1]:
        record.pop("environment")
    ratio = statistics.median(o["wall_s"] for o in ours) / statistics.median(t["wall_s"] for t in theirs)
    lines = [
        f"Whole command, cold compile cache, {SIZE}³ float32, naive and tiled kernels of fermi_like.yaml, brute "
        f"force, on {environment['device'].get('name')}",
        f"{'round':>5}  {'tuner s':>8}  {'search s':>8}  {'first s':>7}  {'GPU busy':>8}  {'kernels':>7}  "
        f"{'samples':>7}  {'Kernel Tuner s':>14}  {'KT kernels':>10}",
    ]
    for index, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        kt_kernels = sum(f["configurations"] for f in t["families"].values())
        lines.append(f"{index:>5}  {o['wall_s']:8.2f}  {o['search_s']:8.2f}  {o['first_measurement_s']:7.2f}  "
                     f"{100 * o['gpu_busy_fraction']:7.0f}%  {o['evaluations']:>7}  {o['samples_median']:7.0f}  "
                     f"{t['wall_s']:14.2f}  {kt_kernels:>10}")
    lines.append(f"tuner / Kernel Tuner (median wall time): {ratio:.2f}")
    if whole:
        lines += ["", "Experiments as a user runs them (python -m tuner run; compile cache cold: new, warm: filled by "
                  "the cold run; each into a new folder):",
                  f"{'experiment':<32}  {'strategy':>8}  {'trials':>6}  {'cache':>5}  {'wall s':>7}  {'search s':>8}  "
                  f"{'evals':>5}  {'device s':>8}  {'GPU busy':>8}  {'CPU busy':>8}  {'NVML util':>9}"]
        for w in whole:
            budget = "file" if w["trials"] is None else str(w["trials"])
            lines.append(f"{w['experiment']:<32}  {w['strategy']:>8}  {budget:>6}  {w['cache']:>5}  "
                         f"{w['wall_s']:7.1f}  {w['search_s']:8.1f}  {w['evaluations']:>5}  {w['device_busy_s']:8.1f}  "
                         f"{100 * w['gpu_busy_fraction']:7.0f}%  {_percent(w['cpu_busy_percent']):>8}  "
                         f"{_percent(w['nvml_gpu_utilization_percent']):>9}")
        lines += ["GPU busy: the device time of every verification and timing (launches, flushes, read-back and "
                  "comparison with the reference) over the search's wall time. CPU busy: all cores, during the "
                  "search. NVML util: the share of the search's time in which a kernel ran on the GPU."]
    text = "\n".join(lines)
    print(text)
    record = {"rounds": rounds, "tuner": ours, "kernel_tuner": theirs, "ratio_tuner_over_kernel_tuner": ratio,
              "experiments": whole}
    return write(out, "overhead_vs_kernel_tuner", environment, text, record)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--experiments", type=Path, nargs="*", default=[],
                        help="experiment files to run as a user does, for their GPU-busy fraction")
    parser.add_argument("--trials", type=int, default=None, help="budget per study of those runs (default: theirs)")
    args = parser.parse_args()
    return finish(lambda: produce(args.rounds, args.out, args.experiments, args.trials))


if __name__ == "__main__":
    raise SystemExit(main())
