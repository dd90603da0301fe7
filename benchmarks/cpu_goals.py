"""The CPU backend's goals on this machine: the tuned float64 kernel against numpy's BLAS at 1024³, on one thread
and on all cores, and the measured bandwidth ceiling against a STREAM copy.

    python benchmarks/cpu_goals.py [--trials 60] [--timeout 150] [--rounds 5] [--out DIR]

1. STREAM reference: benchmarks/stream.c (STREAM's kernels and rules, see its text), built by the tuner's C
   compiler with -O3 -march=native -fopenmp, on one thread and on all cores, arrays of 4 × the last-level cache;
   its best Copy rate against the tuner's bandwidth ceiling (tuner.backends.cpu.ceilings.measure_bandwidth with the
   ceilings' settings: the median of a copy loop over arrays of the same size), the two alternating for
   ``--rounds`` rounds; the medians of the rounds are compared. Goal: within 10%.
2. The optimisation ladder at 1024³ float64, on one thread and then the last rung on all cores, each rung with the
   GFLOP/s its model predicts (PREDICTIONS, ALL_CORES_PREDICTION: written from the machine's numbers before this
   benchmark's measurements; only quick prototypes of the reordered, blocked and packed loops had run before, on
   a loaded machine, at 3.2, 6.6 and 36 GFLOP/s) and what it measured.
3. Tuning: experiments/cpu_blocking.yaml's kernels on 1024³ float64 only, searched (TPE) on one thread and on all
   cores; the best kernel and numpy's matmul then timed side by side, alternating, by the same method (caches
   evicted before each sample). Goal: the kernel ≥ 0.5 × the BLAS on the same threads.

Writes ``DIR/cpu_goals_<cpu>.txt`` and ``.json`` (with the backend's environment). The machine's load average
is recorded at the start and the end: other processes on the cores slow the two-thread numbers most.

Outcomes on the 2-core AMD EPYC (Zen 3) this was written on are in the committed results
(``benchmarks/results/cpu_goals_*.txt``), each rung of the ladder beside its prediction (see PREDICTIONS for the
reasoning of each). That machine is shared: the load average in the output says how busy it was.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from tuner.backends.cpu.backend import CpuBackend  # noqa: E402
from tuner.backends.cpu.ceilings import (  # noqa: E402
    CEILING_SETTINGS,
    measure_bandwidth,
    stream_array_bytes,
    thread_counts,
)
from tuner.backends.cpu.summary import summary  # noqa: E402
from tuner.backends.cpu.timing import CpuTimer  # noqa: E402
from tuner.compile.cc import find_cc  # noqa: E402
from tuner.config import Config, Problem  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.experiment.schema import load_experiment  # noqa: E402
from tuner.kernels import matmul  # noqa: E402
from tuner.measure.measurement import Measurement, Status  # noqa: E402
from tuner.results import table as results  # noqa: E402
from tuner.settings import MeasureSettings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = ROOT / "experiments" / "cpu_blocking.yaml"
PROBLEM = Problem(1024, 1024, 1024)
COMPARE = MeasureSettings(warmup=1, min_samples=10, max_samples=100, max_time_s=3.0, target_noise=0.005,
                          timeout_s=300.0)
LADDER_SETTINGS = MeasureSettings(warmup=0, min_samples=3, max_samples=20, max_time_s=3.0, target_noise=0.01,
                                  timeout_s=300.0)
PREDICTIONS: list[tuple[str, dict[str, int], float, str]] = [
    ("cpu_naive", {"PARALLEL": 0}, 1.0,
     "i, j, k: B walked down its columns, one 64-byte line per multiply-add from L3 (B's 8 MiB miss L2), behind a "
     "scalar dependency chain: about 1 GFLOP/s"),
    ("cpu_reorder", {"PARALLEL": 0}, 4.0,
     "i, k, j: unit stride and vectorized, but all of B streams from L3 once per row of C: 8 bytes per 2 FLOPs at "
     "an L3 rate of about 15 GB/s for one core: about 4 GFLOP/s"),
    ("cpu_blocked", {"MC": 128, "NC": 256, "KC": 128, "PARALLEL": 0}, 10.0,
     "a 128×256 block of B (256 KiB) stays in L2, a row of C in L1: each vector multiply-add still loads B and "
     "loads and stores C, so loads and stores, not FMAs, set the pace: about 3 FLOP/cycle, 10 GFLOP/s"),
    ("cpu_packed", {"MC": 96, "NC": 3072, "KC": 256, "MR": 6, "NR": 8, "KU": 1, "PARALLEL": 0}, 35.0,
     "a 6×8 register tile: 12 vector FMAs per 2 loads of B and 6 broadcasts of A, so the two FMA pipes set the "
     "pace: 16 FLOP/cycle at full rate, about 75% of the measured FMA ceiling once packing and edges are paid"),
]
ALL_CORES_PREDICTION: tuple[str, dict[str, int], float, str] = (
    "cpu_packed", {"MC": 192, "NC": 3072, "KC": 256, "MR": 6, "NR": 8, "KU": 1, "PARALLEL": 1}, 65.0,
    "the same tile on every core, the MC-row blocks shared out (6 blocks of 192 rows: 3 per core on two): the blocks "
    "of B are packed once for all and A is read from each core's L2, so about 1.9 × the one-thread rate")


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def build_stream(folder: Path) -> Path:
    binary = folder / "stream"
    built = subprocess.run([find_cc(), "-O3", "-march=native", "-fopenmp", str(ROOT / "benchmarks" / "stream.c"),
                            "-o", str(binary), "-lm"], capture_output=True, text=True, check=False)
    if built.returncode != 0:
        raise TunerError(f"benchmarks/stream.c does not build:\n{built.stderr}")
    return binary


def run_stream(binary: Path, count: int, elements: int) -> dict[str, Any]:
    """STREAM's best Copy and Triad rates (GB/s) on ``count`` threads, and its output."""
    done = subprocess.run([str(binary), str(elements), "20"], capture_output=True, text=True, check=False,
                          env={**os.environ, "OMP_NUM_THREADS": str(count)})
    if done.returncode != 0:
        raise TunerError(f"STREAM failed on {count} thread(s):\n{done.stdout}{done.stderr}")
    rates = {name.lower(): float(rate) / 1e3
             for name, rate in re.findall(r"^(Copy|Triad)\s+([\d.]+)", done.stdout, re.MULTILINE)}
    return {**rates, "output": done.stdout}


def bandwidth(threads: tuple[int, ...], array_bytes: int, rounds: int, folder: Path) -> dict[str, Any]:
    """STREAM and the tuner's copy ceiling in alternating rounds, per thread count: the rounds and their medians."""
    binary = build_stream(folder)
    timer = CpuTimer()
    found: dict[str, Any] = {str(count): {"stream_copy": [], "stream_triad": [], "tuner_copy": [], "tuner_triad": []}
                             for count in threads}
    for round_ in range(rounds):
        for who in ("stream", "tuner") if round_ % 2 == 0 else ("tuner", "stream"):
            print(f"bandwidth round {round_ + 1}: {who}…", file=sys.stderr, flush=True)
            if who == "tuner":
                measured = measure_bandwidth(timer, threads, array_bytes, CEILING_SETTINGS, lambda text: None)
            for count in map(str, threads):
                if who == "stream":
                    rates = run_stream(binary, int(count), array_bytes // 8)
                    copy, triad = rates["copy"], rates["triad"]
                else:
                    copy, triad = measured["copy"][count]["gbs"], measured["triad"][count]["gbs"]
                found[count][f"{who}_copy"].append(copy)
                found[count][f"{who}_triad"].append(triad)
    for rows in found.values():
        rows.update({f"median_{key}": statistics.median(values) for key, values in list(rows.items())})
        rows["ratio"] = rows["median_tuner_copy"] / rows["median_stream_copy"]
    return found


def gflops(result: Measurement) -> float | None:
    if result.status is not Status.OK or result.timing is None:
        return None
    return matmul.flops(PROBLEM) / (result.timing.median_ms * 1e-3) / 1e9


def ladder(backend: CpuBackend, rungs: list[tuple[str, dict[str, int], float, str]]) -> list[dict[str, Any]]:
    measured = []
    for family, params, predicted, why in rungs:
        print(f"ladder: {family} on {backend.threads} thread(s)…", file=sys.stderr, flush=True)
        result = backend.evaluate(Config.make(PROBLEM, family, "float64", params))
        measured.append({"family": family, "params": params, "threads": backend.threads,
                         "predicted_gflops": predicted, "why": why, "status": result.status.value,
                         "gflops": gflops(result), "samples": result.timing.count if result.timing else None})
    return measured


def tune(threads: int, trials: int, timeout: float, folder: Path) -> Config:
    """The best configuration of a search on ``threads`` threads (TPE, the experiment's kernels, 1024³ float64)."""
    import tuner

    experiment = replace(load_experiment(EXPERIMENT), name=f"cpu_goals_{threads}t", problems=(PROBLEM,))
    backend = CpuBackend(experiment.measure, experiment.compile, threads=threads)
    print(f"tuning on {threads} thread(s)…", file=sys.stderr, flush=True)
    run = tuner.run(experiment, backend=backend, trials=trials, timeout=timeout, out=folder / f"{threads}t",
                    quiet=True)
    best = results.best_rows(run.df)
    if best.empty:
        raise TunerError(f"the search on {threads} thread(s) found no kernel that runs")
    return results.config_of_row(best.iloc[0])


def compare(backend: CpuBackend, config: Config, rounds: int) -> dict[str, Any]:
    """Kernel and BLAS in alternating rounds (each round swaps who goes first); medians and the rounds."""
    rates: dict[str, list[float]] = {"kernel": [], "blas": []}
    for round_ in range(rounds):
        for who in ("kernel", "blas") if round_ % 2 == 0 else ("blas", "kernel"):
            result = backend.evaluate(config) if who == "kernel" else backend.baseline(PROBLEM, "float64")
            rate = gflops(result)
            if rate is None:
                raise TunerError(f"{who} {config.key}: {result.status.value} {result.reason}")
            rates[who].append(rate)
    ratios = [k / b for k, b in zip(rates["kernel"], rates["blas"], strict=True)]
    return {"config": config.key, "family": config.family, "params": config.param_dict,
            "kernel_gflops": statistics.median(rates["kernel"]), "blas_gflops": statistics.median(rates["blas"]),
            "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
            "rounds": {**rates, "ratio": ratios}}


def text_of(record: dict[str, Any], env: dict[str, Any]) -> str:
    device = env["device"]
    lines = [f"CPU goals on {device['name']} ({device['cores']} cores, {device['clock_mhz']:.0f} MHz reported), "
             f"{env['versions']['cc']}, flags {' '.join(env['compile']['flags'])}; BLAS: {env['versions']['blas']}",
             f"load average at the start {record['load_start']}, at the end {record['load_end']}", "",
             "1. Bandwidth ceiling against STREAM (GB/s, arrays of "
             f"{record['array_bytes'] >> 20} MiB; STREAM best of 19 iterations, the tuner's ceiling the median of its "
             f"samples; medians of {record['rounds']} alternating rounds)"]
    for count, row in record["bandwidth"].items():
        verdict = "within 10%" if abs(row["ratio"] - 1) <= 0.10 else "NOT within 10%"
        rounds = " ".join(f"{t / s:.3f}" for t, s in zip(row["tuner_copy"], row["stream_copy"], strict=True))
        lines.append(f"   {count} thread(s): tuner copy {row['median_tuner_copy']:.2f}, STREAM Copy "
                     f"{row['median_stream_copy']:.2f}, ratio {row['ratio']:.3f} ({verdict}; rounds {rounds}); "
                     f"triad {row['median_tuner_triad']:.2f} vs {row['median_stream_triad']:.2f}")
    ceilings = ", ".join(f"{count} thread(s) {row['float64_gflops']:.1f}" for count, row in record["ceilings"].items())
    lines += ["", f"2. The ladder, 1024³ float64 (FMA ceiling {ceilings} GFLOP/s)"]
    for rung in record["ladder"]:
        params = " ".join(f"{k}={v}" for k, v in rung["params"].items())
        got = f"{rung['gflops']:.2f}" if rung["gflops"] else rung["status"]
        lines.append(f"   {rung['family']:<12} {params:<52} {rung['threads']} thread(s): predicted "
                     f"{rung['predicted_gflops']:>5.1f}, measured {got:>6} GFLOP/s")
    lines += ["", "3. Tuned kernel against numpy's BLAS, 1024³ float64, alternating rounds (medians)"]
    for count, row in record["tuned"].items():
        verdict = "goal met" if row["ratio"] >= 0.5 else "goal NOT met"
        lines.append(f"   {count} thread(s): kernel {row['kernel_gflops']:.1f} GFLOP/s, BLAS {row['blas_gflops']:.1f}, "
                     f"ratio {row['ratio']:.3f} (rounds {row['ratio_min']:.3f}–{row['ratio_max']:.3f}; ≥ 0.5: "
                     f"{verdict}); {row['config']}; load average {row['load_start'][0]} → {row['load_end'][0]}")
    lines += ["", f"method: {env['measure']['method']}"]
    return "\n".join(lines)


def produce(trials: int, timeout: float, rounds: int, out: Path) -> Path:
    record: dict[str, Any] = {"load_start": load_average(), "trials": trials, "timeout_s": timeout,
                              "rounds": rounds}
    threads = thread_counts()
    array_bytes = stream_array_bytes()
    record["array_bytes"] = array_bytes
    with tempfile.TemporaryDirectory(prefix="tuner-cpu-goals-") as folder:
        print("the tuner's ceilings…", file=sys.stderr, flush=True)
        record["ceilings"] = summary(remeasure=True, progress=True)["by_threads"]
        record["bandwidth"] = bandwidth(threads, array_bytes, rounds, Path(folder))
        with CpuBackend(LADDER_SETTINGS, threads=1) as backend:
            record["ladder"] = ladder(backend, PREDICTIONS)
        if len(threads) > 1:
            with CpuBackend(LADDER_SETTINGS, threads=threads[-1]) as backend:
                record["ladder"] += ladder(backend, [ALL_CORES_PREDICTION])
        record["tuned"] = {}
        env: dict[str, Any] = {}
        for count in threads:
            started = load_average()
            best = tune(count, trials, timeout, Path(folder))
            with CpuBackend(COMPARE, threads=count) as backend:
                print(f"{best.key} against the BLAS on {count} thread(s)…", file=sys.stderr, flush=True)
                record["tuned"][str(count)] = {**compare(backend, best, rounds), "load_start": started,
                                               "load_end": load_average()}
                env = backend.metadata()
    record["load_end"] = load_average()
    text = text_of(record, env)
    print(text)
    return write(out, "cpu_goals", env, text, record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=60, help="configurations per search (default 60)")
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per search (default 150)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating kernel/BLAS rounds (default 5)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    args = parser.parse_args(argv)
    return finish(lambda: produce(args.trials, args.timeout, args.rounds, args.out))


if __name__ == "__main__":
    raise SystemExit(main())
