"""Energy per GEMM on the GPU: how repeatable it is, and what the most efficient configuration of a run saves
against the fastest one, all measured side by side in alternating rounds.

    python benchmarks/energy.py RUN_DIR [--rounds 5] [--problem 4096x4096x4096] [--out DIR]

RUN_DIR is a tuning run's output folder whose rows carry energy (e.g. ``--objective time,energy``). For each dtype
of its study at PROBLEM, the fastest configuration (time-optimal) and the one with the least energy per launch
(energy-optimal) among its evaluations are measured again, with cuBLAS, and for float32 with the tiled kernel
(TILE_WIDTH 32) and the naive one (16×16): every one of them takes a millisecond or more at 4096³. Each round
measures each kernel once, by the tuner's own method (timing, then the energy window of tuner.energy.window), in
an order that turns by one each round. Reports per kernel the median energy per launch over the rounds and the
rounds' largest deviation from it (the goal: within 2%), and per dtype the energy-optimal configuration's energy
and time against the time-optimal one's, as the median of the rounds' ratios. Writes ``DIR/energy_<gpu>.txt`` and
``.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from benchmarks.vs_cublas import best_configs  # noqa: E402
from tuner.backends.pycuda.backend import PycudaBackend  # noqa: E402
from tuner.backends.pycuda.timing import describe_method  # noqa: E402
from tuner.config import Config  # noqa: E402
from tuner.energy.front import measured  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.measure.measurement import Measurement, Status  # noqa: E402
from tuner.results import table as results  # noqa: E402
from tuner.settings import MeasureSettings  # noqa: E402
from tuner.tuning.progress import config_label  # noqa: E402

MEASURE = MeasureSettings(max_time_s=1.0, energy=True)
GOAL = 0.02
"""The largest deviation of a round's energy per launch from the median of the rounds."""
GOAL_FROM_MS = 1.0
"""The goal is for kernels of at least this time per launch."""
CUBLAS = "cuBLAS"


def picks(run_dir: Path, problem: str) -> dict[str, dict[str, Config]]:
    """Per dtype at ``problem``: the time-optimal and the energy-optimal configuration the run measured."""
    df, _ = results.load(run_dir)
    tuned = df[(df["family"] != results.BASELINE_FAMILY) & (df["problem"] == problem) & (df["status"] == "ok")]
    chosen: dict[str, dict[str, Config]] = {}
    for dtype, rows in tuned.groupby("dtype", sort=True):
        with_energy = measured(rows)
        if with_energy.empty:
            continue
        fastest = rows.loc[results.performance(rows).idxmax()]
        cheapest = with_energy.loc[with_energy["energy_j"].astype(float).idxmin()]
        chosen[str(dtype)] = {"time-optimal": results.config_of_row(fastest),
                              "energy-optimal": results.config_of_row(cheapest)}
    if not chosen:
        raise TunerError(f"{run_dir}: no study at {problem} holds an evaluation with its energy; record the run with "
                         f"an energy objective (--objective time,energy)")
    return chosen


def kernels(chosen: dict[str, dict[str, Config]]) -> dict[str, Config | tuple[str, Config]]:
    """Every kernel a round measures, by label: the picks, cuBLAS per dtype, and the seed kernels in float32."""
    found: dict[str, Config | tuple[str, Config]] = {}
    for dtype, named in chosen.items():
        fastest, cheapest = named["time-optimal"], named["energy-optimal"]
        problem = fastest.problem
        found[f"{dtype} time-optimal"] = fastest
        if cheapest != fastest:
            found[f"{dtype} energy-optimal"] = cheapest
        found[f"{dtype} {CUBLAS}"] = (CUBLAS, results.baseline_config(problem, dtype))
        if dtype == "float32":
            found["float32 tiled TILE_WIDTH=32"] = Config.make(problem, "tiled", dtype, {"TILE_WIDTH": 32})
            found["float32 naive 16x16"] = Config.make(problem, "naive", dtype, {"BLOCK_X": 16, "BLOCK_Y": 16})
    return found


def _measure(backend: PycudaBackend, kernel: Config | tuple[str, Config]) -> Measurement:
    if isinstance(kernel, tuple):
        result = backend.baseline(kernel[1].problem, kernel[1].dtype)
        return result if result is not None else Measurement(Status.INVALID, "no cuBLAS here")
    return backend.evaluate(kernel)


def rounds_of(backend: PycudaBackend, found: dict[str, Config | tuple[str, Config]],
              rounds: int) -> dict[str, list[dict[str, Any]]]:
    labels = list(found)
    seen: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    for round_ in range(rounds):
        order = labels[round_ % len(labels):] + labels[:round_ % len(labels)]
        print(f"round {round_ + 1} of {rounds}", file=sys.stderr, flush=True)
        for label in order:
            result = _measure(backend, found[label])
            energy, timing = result.energy, result.timing
            seen[label].append({
                "status": result.status.value, "reason": result.reason,
                "time_ms": timing.median_ms if timing else None,
                "energy_j": energy.joules if energy else None, "power_w": energy.power_w if energy else None,
                "energy_time_ms": energy.seconds_per_launch * 1e3 if energy else None,
                "window_s": energy.window_s if energy else None, "updates": energy.updates if energy else None,
                "sm_clock_mhz": energy.sm_clock_mhz if energy else None,
                "power_limit_w": energy.power_limit_w if energy else None})
    return seen


def kernel_summary(label: str, kernel: Config | tuple[str, Config], rows: list[dict[str, Any]]) -> dict[str, Any]:
    joules = [r["energy_j"] for r in rows if r["energy_j"]]
    config = kernel[1] if isinstance(kernel, tuple) else kernel
    summary: dict[str, Any] = {"label": label, "config": config.key,
                               "configuration": CUBLAS if isinstance(kernel, tuple) else config_label(config),
                               "rounds": rows, "measured_rounds": len(joules)}
    if not joules:
        summary["status"] = "; ".join(sorted({f"{r['status']}: {r['reason']}"[:200] for r in rows}))
        return summary
    median = statistics.median(joules)
    deviation = max(abs(j - median) / median for j in joules)
    summary.update({
        "status": "ok", "energy_j": median, "deviation": deviation, "spread": (max(joules) - min(joules)) / median,
        **{key: statistics.median(r[key] for r in rows if r[key] is not None)
           for key in ("time_ms", "power_w", "energy_time_ms", "sm_clock_mhz", "window_s", "updates")
           if any(r[key] is not None for r in rows)},
    })
    summary["within_goal"] = deviation <= GOAL if summary.get("energy_time_ms", 0) >= GOAL_FROM_MS else None
    return summary


def savings(chosen: dict[str, dict[str, Config]], found: dict[str, Config | tuple[str, Config]],
            seen: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per dtype: the energy-optimal configuration's energy and time over the time-optimal one's, round by round."""
    rows: list[dict[str, Any]] = []
    for dtype, named in chosen.items():
        fast_label = f"{dtype} time-optimal"
        cheap_label = f"{dtype} energy-optimal" if f"{dtype} energy-optimal" in found else fast_label
        pairs = [(c, f) for c, f in zip(seen[cheap_label], seen[fast_label], strict=True)
                 if c["energy_j"] and f["energy_j"] and c["time_ms"] and f["time_ms"]]
        if not pairs:
            rows.append({"dtype": dtype, "status": "no round measured both"})
            continue
        energy_ratio = statistics.median(c["energy_j"] / f["energy_j"] for c, f in pairs)
        time_ratio = statistics.median(c["time_ms"] / f["time_ms"] for c, f in pairs)
        rows.append({"dtype": dtype, "status": "ok", "same": cheap_label == fast_label,
                     "time_optimal": config_label(named["time-optimal"]),
                     "energy_optimal": config_label(named["energy-optimal"]),
                     "energy_ratio": energy_ratio, "saving": 1 - energy_ratio, "time_ratio": time_ratio,
                     "rounds": len(pairs)})
    return rows


def table(env: dict[str, Any], run_dir: Path, problem: str, rounds: int, kernels_: list[dict[str, Any]],
          saved: list[dict[str, Any]]) -> str:
    device, energy = env["device"], env.get("energy") or {}
    lines = [f"Energy per GEMM at {problem} on {device['name']} (driver {env['versions']['driver']}), {rounds} rounds "
             f"in turning order; configurations from {run_dir.name}",
             f"counter: {energy.get('counter')}; power limit {energy.get('power_limit_w')} W (enforced, read)",
             f"method: {env['measure']['method']}; {energy.get('method')}", "",
             f"{'kernel':<36}{'J/GEMM':>9}{'max dev':>9}{'spread':>8}{'goal':>6}{'W':>6}{'ms cold':>9}{'ms hot':>8}"
             f"{'SM MHz':>8}{'window s':>9}{'updates':>8}"]
    for k in kernels_:
        if k["status"] != "ok":
            lines.append(f"{k['label']:<36}{k['status']}")
            continue
        goal = {True: "yes", False: "NO", None: "n/a"}[k["within_goal"]]
        lines.append(f"{k['label']:<36}{k['energy_j']:>9.4f}{100 * k['deviation']:>8.2f}%{100 * k['spread']:>7.2f}%"
                     f"{goal:>6}{k.get('power_w', 0):>6.0f}{k.get('time_ms', 0):>9.3f}"
                     f"{k.get('energy_time_ms', 0):>8.3f}{k.get('sm_clock_mhz') or 0:>8.0f}{k.get('window_s', 0):>9.2f}"
                     f"{k.get('updates', 0):>8.0f}")
    lines += ["", "energy-optimal against time-optimal (medians of the rounds' ratios):"]
    for s in saved:
        if s["status"] != "ok":
            lines.append(f"  {s['dtype']}: {s['status']}")
        elif s["same"]:
            lines.append(f"  {s['dtype']}: the time-optimal configuration is also the energy-optimal one: "
                         f"{s['time_optimal']}")
        else:
            lines.append(f"  {s['dtype']}: {s['energy_optimal']} uses {100 * s['saving']:.1f}% less energy per GEMM "
                         f"than {s['time_optimal']} (energy ratio {s['energy_ratio']:.3f}) at {s['time_ratio']:.3f}× "
                         f"its time")
    for k in kernels_:
        if "optimal" in k["label"]:
            lines.append(f"  {k['label']}: {k['configuration']}")
    lines += ["", f"max dev: the largest deviation of a round's energy per launch from the median of the rounds "
              f"(goal: within {100 * GOAL:g}% for kernels of a millisecond or more); spread: (max - min) / median; "
              f"ms cold: the timing's median (L2 flushed); ms hot: the energy window's time per launch (back to "
              f"back); W: the window's mean power; window s, updates: its length and the counter's update periods "
              f"inside it."]
    return "\n".join(lines)


def run(run_dir: Path, rounds: int, problem: str, out: Path) -> Path:
    chosen = picks(run_dir, problem)
    found = kernels(chosen)
    _, compile_settings = best_configs(run_dir)
    with PycudaBackend(MEASURE, compile_settings) as backend:
        backend.prefetch([k for k in found.values() if isinstance(k, Config)])
        env = backend.metadata()
        refusal = backend.energy_unavailable()
        if refusal:
            raise TunerError(f"energy cannot be measured here: {refusal}")
        seen = rounds_of(backend, found, rounds)
    summaries = [kernel_summary(label, kernel, seen[label]) for label, kernel in found.items()]
    saved = savings(chosen, found, seen)
    text = table(env, run_dir, problem, rounds, summaries, saved)
    print(text)
    record = {"run": str(run_dir), "problem": problem, "rounds": rounds, "goal": GOAL,
              "method": describe_method(MEASURE), "kernels": summaries, "savings": saved}
    return write(out, "energy", env, text, record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a tuning run's output folder whose rows carry energy")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--problem", default="4096x4096x4096", help="the study's problem (default 4096x4096x4096)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    args = parser.parse_args(argv)
    return finish(lambda: run(args.run_dir, args.rounds, args.problem, args.out))


if __name__ == "__main__":
    raise SystemExit(main())
