"""Every strategy comparison of the README in one command: ours, Optuna's samplers and Kernel Tuner's strategies on
the recorded spaces, the methodology score checked against its package, and the default strategy's own time.

    python benchmarks/compare_strategies.py [--out DIR] [--repeats R] [--score-repeats R] [--jobs N]
                                            [--peer-repeats R] [--spaces NAME,...]
                                            [--only gemm,h100,wgmma,fp8,hub,peers,peers_gemm,agreement,time]

Parts, each in a folder of DIR (default ``benchmarks/results``) with the command's table, figures and page and a
``runtime.json`` (wall time, CPU, processes, the machine's load average before and after):

* ``compare/``: our strategies on the two GEMM recordings (``experiments/data/recorded/gemm_*.json.gz``) under
  both conventions, 100, 400 and 1600 evaluations (``python -m tuner compare`` with its defaults);
* ``compare_h100/``: the same on our own exhaustive H100 recording (``experiments/data/h100_regblock_exhaustive``);
* ``compare_wgmma_h100/``: the same on the wgmma family's exhaustive bfloat16 recording at 4096³
  (``experiments/data/h100_wgmma_exhaustive``), convention (a), 50, 100 and 150 evaluations;
* ``compare_fp8_h200/``: the same on the wgmma_fp8 family's exhaustive e4m3 recording at 4096³ on an H200
  (``experiments/data/fp8_exhaustive_h200``);
* ``compare_hub/``: the default strategy and ``ils`` alone on the six convolution and dedispersion recordings,
  convention (a), 100 and 400 evaluations, P from 10 runs each (no other package needed; not committed:
  ``compare_peers/`` holds the same runs beside Kernel Tuner's);
* ``compare_peers/``: side by side on the six convolution and dedispersion recordings, convention (a) (or
  ``--peer-convention b`` or ``both``), 100 and 400 evaluations: the default strategy and ``ils`` (R runs each,
  ``--repeats``) and every one of Kernel Tuner's strategies in its simulation mode (``--peer-repeats``, default 20
  runs of each budget), P from
  ``--score-repeats`` runs of each (default 10); ``summary.md`` holds the README's tables (needs the
  ``kernel_tuner`` package). Every run of the part shares one pool of ``--jobs`` processes;
* ``compare_peers_gemm/``: the same on the two GEMM recordings;
* ``compare_peers/methodology_agreement.txt``: on the convolution A100 space, the methodology score P of runs of the
  default strategy and of random search as this project computes it and as the ``autotuning_methodology``
  package computes it from the same runs (needs that package);
* ``compare_peers/strategy_time.txt``: each of our strategies' own time per proposal (ask + tell) on a domain of
  100,000 valid configurations, over runs of 400 and 1,600 proposals.

No GPU is needed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT  # noqa: E402
from tuner.compare.command import run_comparison  # noqa: E402
from tuner.compare.comparison import DEFAULT_RUNS  # noqa: E402
from tuner.compare.harness import BestSoFar, simulate_runs, statistics  # noqa: E402
from tuner.compare.methodology import methodology_score  # noqa: E402
from tuner.recorded import load_recorded  # noqa: E402
from tuner.strategies.catalog import DEFAULT, OURS, strategy_factory  # noqa: E402
from tuner.strategies.domain import Domain  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "experiments" / "data" / "recorded"
GEMM = ("gemm_A100", "gemm_RTX_2080_Ti")
HUB = tuple(f"{kernel}_{gpu}" for kernel in ("convolution", "dedispersion") for gpu in ("A100", "A4000", "MI250X"))
H100 = ROOT / "experiments" / "data" / "h100_regblock_exhaustive"
WGMMA = ROOT / "experiments" / "data" / "h100_wgmma_exhaustive"
FP8 = ROOT / "experiments" / "data" / "fp8_exhaustive_h200"
WGMMA_BUDGETS = (50, 100, 150)
PEER_BUDGETS = (100, 400)
PEER_SCORE_REPEATS = 10
PEER_REPEATS = 20
"""Runs of each of Kernel Tuner's strategies at each budget (as Willemsen et al. run them)."""
PARTS = ("gemm", "h100", "wgmma", "fp8", "hub", "peers", "peers_gemm", "agreement", "time")
HUB_SCORE_REPEATS = 10
TIMED_SIZE = 100_000
TIMED_RADICES = (8, 8, 6, 6, 5, 4, 4, 3)
TIMED_PROPOSALS = (400, 1600)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def timed(out: Path, record: dict[str, Any], work: Callable[[], None]) -> None:
    """Run ``work`` and write ``out/runtime.json``: its wall time, the CPU and the load around it."""
    load_before = os.getloadavg()
    started = time.monotonic()
    work()
    wall = time.monotonic() - started
    out.mkdir(parents=True, exist_ok=True)
    record = {"wall_s": round(wall, 1), "cpu": cpu_name(), "cpus": os.cpu_count(), **record,
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    (out / "runtime.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"{out.name}: {wall:.0f} s on {record['cpus']} × {record['cpu']} (load average before {load_before[0]:.2f}, "
          f"after {record['load_average_after'][0]:.2f})", file=sys.stderr)


# --- the methodology score against its package -------------------------------------------------------------------


TIME_KEYS = ["compilation", "runtimes", "framework", "search_algorithm", "validation"]
"""The methodology package's time keys ("all"): what it sums as a configuration's time."""


def package_statistics(path: Path, folder: Path) -> Any:
    """The package's statistics of a recorded space (a cache file), from Kernel Tuner's own T4 conversion of it."""
    from autotuning_methodology.searchspace_statistics import SearchspaceStatistics
    from kernel_tuner.file_utils import get_t4_results

    document = json.loads(gzip.decompress(path.read_bytes()))
    t4 = folder / f"{path.name}_T4.json"
    t4.write_text(json.dumps(get_t4_results(list(document["cache"].values()), document["tune_params"])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SearchspaceStatistics(path.name, "gpu", True, TIME_KEYS, ["time"], t4, full_validate=False)


def package_score(runs: list[BestSoFar], package_stats: Any, folder: Path, name: str, seed: int) -> float:
    """What the package makes of runs (their elapsed times and best times): its curve over time on its axis,
    standardised by its calculated random baseline, averaged; its bootstrap drawn after seeding numpy with
    ``seed``."""
    from autotuning_methodology.baseline import RandomSearchCalculatedBaseline
    from autotuning_methodology.caching import ResultsDescription
    from autotuning_methodology.curves import StochasticOptimizationAlgorithm

    length = max(r.evaluations for r in runs)
    fevals, times, best = (np.full((length, len(runs)), np.nan) for _ in range(3))
    for j, run in enumerate(runs):
        fevals[:run.evaluations, j] = np.arange(1, run.evaluations + 1)
        times[:run.evaluations, j] = run.elapsed_s
        best[:run.evaluations, j] = np.where(np.isfinite(run.best_ms), run.best_ms, np.nan)
    description = ResultsDescription(folder / name, "space", "gpu", name, name, True, TIME_KEYS, ["time"], True)
    per_key = np.full((len(TIME_KEYS), *fevals.shape), np.nan)
    description.set_results({"fevals_results": fevals, "objective_time_results": times,
                             "objective_performance_results": best, "objective_performance_best_results": best,
                             "objective_performance_stds": np.full(fevals.shape, np.nan),
                             "objective_time_results_per_key": per_key,
                             "objective_performance_results_per_key": per_key})
    start, end = package_stats.cutoff_point_fevals_time_start_end(0.01, 0.95)[2:]
    axis = np.linspace(start, end, 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.random.seed(seed)  # the package draws its bootstrap samples from numpy's global generator
        split = StochasticOptimizationAlgorithm(description).get_curve_over_time(
            axis, dist=package_stats.objective_performances_total_sorted, confidence_level=0.95)
        curve = np.concatenate([split[2], split[6]]) if split[5].ndim > 0 else split[2]
        baseline = RandomSearchCalculatedBaseline(package_stats)
        return float(np.mean(baseline.get_standardised_curves(axis, [curve], x_type="time")[0]))


def methodology_agreement(out: Path, runs: int = 12, seed: int = 0) -> str:
    """P of the default strategy's and random search's runs on the convolution A100 space, ours and the
    package's."""
    path = RECORDED / "convolution_A100.json.gz"
    space = load_recorded(path)
    stats = statistics(space)
    lines = [f"The methodology score P on {path.name} ({space.device}): {runs} runs of each strategy until the time "
             f"axis' end and margin ({stats.time_limit_s():.0f} s), scored by tuner.compare.methodology and by the "
             f"package autotuning_methodology from the same runs (its statistics from Kernel Tuner's own T4 "
             f"conversion of the recording; the bootstrap seeded alike)", "",
             f"{'strategy':<12}{'P (tuner)':>14}{'P (package)':>14}{'difference':>14}"]
    record: dict[str, Any] = {"space": path.name, "runs": runs, "strategies": {}}
    with tempfile.TemporaryDirectory() as folder:
        theirs = package_statistics(path, Path(folder))
        for name in (DEFAULT, "random"):
            made = simulate_runs(strategy_factory(name), space, None, "valid", runs, seed=seed, workers=1,
                                 time_limit_s=stats.time_limit_s())
            ours = methodology_score([r.elapsed_s for r in made], [r.best_ms for r in made], stats, seed=seed).score
            package = package_score(made, theirs, Path(folder), name, seed)
            lines.append(f"{name:<12}{ours:>14.6f}{package:>14.6f}{ours - package:>14.2e}")
            record["strategies"][name] = {"p": ours, "p_package": package}
    text = "\n".join(lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / "methodology_agreement.txt").write_text(text + "\n")
    (out / "methodology_agreement.json").write_text(json.dumps(record, indent=1) + "\n")
    return text


# --- the strategies' own time ------------------------------------------------------------------------------------


def timed_domain(seed: int = 0) -> tuple[Domain, np.ndarray]:
    """100,000 valid configurations of a 552,960-combination product of eight parameters (six ordered), and a
    time for each: per-value effects, pairwise interactions of neighbouring parameters and a little noise."""
    rng = np.random.default_rng(seed)
    radices = np.array(TIMED_RADICES)
    keys = np.sort(rng.choice(int(np.prod(radices)), size=TIMED_SIZE, replace=False))
    ordered = np.array([True, True, True, True, True, True, False, False])
    values = tuple(tuple(16 * (v + 1) for v in range(r)) if o else tuple(f"v{v}" for v in range(r))
                   for r, o in zip(radices.tolist(), ordered, strict=True))  # sizes in steps of 16: aligned
    domain = Domain(tuple(f"p{i}" for i in range(len(radices))), radices, ordered,
                    Domain.product(["x"] * len(radices), radices, [True] * len(radices)).decode(keys), values)
    rows = domain.all_indices.astype(np.int64)
    effect = sum(rng.normal(0, 0.5, size=r)[rows[:, i]] for i, r in enumerate(radices))
    pairs = sum(rng.normal(0, 0.3, size=(radices[i], radices[i + 1]))[rows[:, i], rows[:, i + 1]]
                for i in range(len(radices) - 1))
    return domain, np.exp(effect + pairs + rng.normal(0, 0.05, size=TIMED_SIZE))


def strategy_time(out: Path, runs: int = 3) -> str:
    """Each of our strategies' own time per proposal (ask and tell) on :func:`timed_domain`."""
    domain, times = timed_domain()
    lines = [f"Each strategy's own time per proposal (one ask and one tell, ms) on a domain of {domain.size:,} valid "
             f"configurations (8 parameters), mean of {runs} runs and the slowest proposal; {cpu_name()}", "",
             f"{'strategy':<16}" + "".join(f"{f'mean @{n}':>12}{f'max @{n}':>12}" for n in TIMED_PROPOSALS)]
    record: dict[str, Any] = {"size": domain.size, "runs": runs, "strategies": {}}
    for name in OURS:
        factory = strategy_factory(name)
        cells, entry = "", {}
        for proposals in TIMED_PROPOSALS:
            per_proposal = []
            for run in range(runs):
                strategy = factory(domain, np.random.default_rng(run))
                for _ in range(proposals):
                    started = time.perf_counter()
                    candidate = strategy.ask()
                    strategy.tell(candidate, float(times[candidate]))
                    per_proposal.append(time.perf_counter() - started)
            mean, most = 1000 * float(np.mean(per_proposal)), 1000 * float(np.max(per_proposal))
            cells += f"{mean:>12.3f}{most:>12.1f}"
            entry[str(proposals)] = {"mean_ms": mean, "max_ms": most}
        lines.append(f"{name:<16}{cells}")
        record["strategies"][name] = entry
    text = "\n".join(lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / "strategy_time.txt").write_text(text + "\n")
    (out / "strategy_time.json").write_text(json.dumps(record, indent=1) + "\n")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--repeats", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--score-repeats", type=int, default=PEER_SCORE_REPEATS,
                        help="runs of each strategy for P in the side-by-side comparison")
    parser.add_argument("--peer-repeats", type=int, default=PEER_REPEATS,
                        help="runs of each of Kernel Tuner's strategies at each budget")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--only", default=",".join(PARTS), help=f"parts to run, of {', '.join(PARTS)}")
    parser.add_argument("--spaces", help="of the recordings of the hub, peers and peers_gemm parts, only these "
                        "(comma-separated names, e.g. convolution_MI250X)")
    parser.add_argument("--peer-convention", choices=("a", "b", "both"), default="a",
                        help="the convention of the peers and peers_gemm parts (default a; b: a failed draw from all "
                        "combinations counts as an evaluation, for ours and Kernel Tuner's alike)")
    args = parser.parse_args(argv)
    parts = [p for p in args.only.split(",") if p]
    chosen = [name for name in (args.spaces or "").split(",") if name]
    unknown = sorted(set(chosen) - set(HUB) - set(GEMM))
    if unknown:
        print(f"error: --spaces: no recording {', '.join(unknown)} among {', '.join((*HUB, *GEMM))}", file=sys.stderr)
        return 2
    hub, gemm = ([n for n in names if not chosen or n in chosen] for names in (HUB, GEMM))
    settings = {"repeats": args.repeats, "jobs": args.jobs or os.cpu_count()}
    if "gemm" in parts:
        out = args.out / "compare"
        timed(out, settings, lambda: run_comparison([RECORDED / f"{name}.json.gz" for name in GEMM],
                                                    repeats=args.repeats, jobs=args.jobs, out=out))
    if "h100" in parts:
        out = args.out / "compare_h100"
        timed(out, settings, lambda: run_comparison([H100], repeats=args.repeats, jobs=args.jobs, out=out))
    if "wgmma" in parts:
        out = args.out / "compare_wgmma_h100"
        timed(out, settings, lambda: run_comparison([WGMMA], repeats=args.repeats, budgets=WGMMA_BUDGETS,
                                                    convention="a", jobs=args.jobs, out=out))
    if "fp8" in parts:
        out = args.out / "compare_fp8_h200"
        timed(out, settings, lambda: run_comparison([FP8], repeats=args.repeats, budgets=WGMMA_BUDGETS,
                                                    convention="a", jobs=args.jobs, out=out))
    if "hub" in parts and hub:
        out = args.out / "compare_hub"
        timed(out, {**settings, "score_repeats": HUB_SCORE_REPEATS},
              lambda: run_comparison([RECORDED / f"{name}.json.gz" for name in hub], [DEFAULT, "ils"],
                                     repeats=args.repeats, budgets=PEER_BUDGETS, convention="a", jobs=args.jobs,
                                     out=out, score_repeats=HUB_SCORE_REPEATS))
    peers = args.out / "compare_peers"
    for part, folder, names in (("peers", peers, hub), ("peers_gemm", args.out / "compare_peers_gemm", gemm)):
        if part in parts and names:
            timed(folder, {**settings, "score_repeats": args.score_repeats, "peer_repeats": args.peer_repeats},
                  lambda names=names, folder=folder: run_comparison(
                      [RECORDED / f"{name}.json.gz" for name in names], [DEFAULT, "ils"], repeats=args.repeats,
                      budgets=PEER_BUDGETS, convention=args.peer_convention, jobs=args.jobs, out=folder,
                      peers=["kernel_tuner"],
                      score_repeats=args.score_repeats, peer_repeats=args.peer_repeats))
    if "agreement" in parts:
        print(methodology_agreement(peers))
    if "time" in parts:
        print(strategy_time(peers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
