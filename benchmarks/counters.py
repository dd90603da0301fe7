"""The goals of the hardware counters, measured: what reading them costs a run, and the tile's cut at the L1.

    python benchmarks/counters.py [--rounds N] [--out DIR] [--fixture DIR] [--keep DIR]

1. ``experiments/fermi_like.yaml`` as a user runs it, brute force (all 54 valid configurations of its three
   problems), the whole command (search, counters, report) in a fresh process and output folder, with
   ``--counters all`` (every configuration counted after the search, in the GPU worker, by CUPTI's range profiler)
   and ``--counters none``,
   alternating, ``all`` first (so it pays for whatever the compile cache misses). Goal: counting every
   configuration adds at most 30% to the wall time.
2. At 4096³ float32, one Nsight Compute session counts the naive kernel (16×16) and the tiled one (TILE_WIDTH 8,
   16, 32). Goal: the L1 bytes of tiled T are within 10% of the naive kernel's modelled bytes / T. Also shown: what
   the threads request (the model's count, cut T-fold by the tile) and the L2 and DRAM bytes.

Writes ``DIR/counters_<gpu>.txt`` and ``.json``; ``--fixture DIR`` also saves the session's raw CSV page
(``ncu_raw_counters_<gpu>.csv``) and the configuration of each of its kernels, in order (``.json``), a fixture for
the tests; ``--keep DIR`` keeps the last ``--counters all`` run folder there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, gpu_slug, write  # noqa: E402
from tuner.config import Config, Problem  # noqa: E402
from tuner.counters.sources import NcuCounters  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.kernels.model import cost  # noqa: E402
from tuner.results import table as results  # noqa: E402
from tuner.settings import CompileSettings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = ROOT / "experiments" / "fermi_like.yaml"
WALL_GOAL = 1.30
L1_GOAL = 0.10
BIG = Problem(4096, 4096, 4096)
NAIVE = Config.make(BIG, "naive", "float32", {"BLOCK_X": 16, "BLOCK_Y": 16})
TILED = {t: Config.make(BIG, "tiled", "float32", {"TILE_WIDTH": t}) for t in (8, 16, 32)}
RUN_TIMEOUT_S = 900


def timed_run(mode: str, out: Path, objective: str | None = None) -> dict[str, Any]:
    """The whole command once; its wall time and what its metadata says of the search and the counters.
    ``objective``: the run's --objective (both modes alike, so that the comparison stays fair)."""
    command = [sys.executable, "-m", "tuner", "run", str(EXPERIMENT), "--strategy", "bruteforce", "--trials", "100",
               "--counters", mode, "--out", str(out), "--quiet", *(["--objective", objective] if objective else [])]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise TunerError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-1500:]}")
    metadata = json.loads((out / results.METADATA_JSON).read_text())
    run = metadata["runs"][-1]
    counters = run.get("counters") or {}
    print(f"{mode}: {wall:.1f} s ({counters.get('text', '')})", file=sys.stderr, flush=True)
    return {"counters": mode, "wall_s": wall, "search_s": run.get("wall_s"), "counters_s": counters.get("seconds"),
            "counted": counters.get("counted"), "asked": counters.get("asked"), "note": counters.get("text"),
            "evaluations": run.get("evaluations")}


def wall_times(rounds: int, work: Path, keep: Path | None,
               objective: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    runs = []
    for round_ in range(rounds):
        for mode in (("all", "none") if round_ % 2 == 0 else ("none", "all")):
            out = work / f"{mode}_{round_}"
            runs.append({"round": round_ + 1, **timed_run(mode, out, objective)})
            if mode == "all" and keep is not None:
                if keep.exists():
                    shutil.rmtree(keep)
                shutil.copytree(out, keep)
    environments = json.loads((work / "none_0" / results.METADATA_JSON).read_text())["environments"]
    return runs, next(iter(environments.values()))


def l1_cut(device_name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    configs = [NAIVE, *TILED.values()]
    counted = NcuCounters(CompileSettings(), device_name=device_name).count(configs)
    if counted.reasons:
        raise TunerError(f"the counters of the 4096³ kernels could not be read: {'; '.join(counted.reasons)}")
    rows = {row["config_key"]: row for row in counted.rows}
    naive_model = cost(NAIVE).global_bytes
    table = []
    for config in configs:
        row = rows[config.key]
        width = config.param_dict.get("TILE_WIDTH")
        goal = naive_model / int(width) if width else None
        table.append({
            "config": config.key, "kernel": f"{config.family} " + ", ".join(f"{k}={v}" for k, v in config.params),
            "model_bytes": cost(config).global_bytes, "requested_bytes": row["l1_requested_bytes"],
            "l1_bytes": row["l1_bytes"], "l2_bytes": row["l2_bytes"], "dram_bytes": row["dram_bytes"],
            "flops_counted": row["flops_counted"], "replay_passes": row["replay_passes"],
            "counters_time_ms": row["counters_time_ms"], "naive_model_over_t": goal,
            "l1_over_goal": row["l1_bytes"] / goal if goal else None,
        })
    by_key = {c.key: c for c in configs}
    session = {"how": counted.how, "page": counted.page,
               "order": [results.config_to_dict(by_key[key]) for key in counted.order]}
    return table, session


def _ratio(numerator: float | None, denominator: float | None, digits: int = 2) -> str:
    return "—" if not numerator or not denominator else f"{numerator / denominator:.{digits}f}×"


def _gb(value: float | None) -> str:
    return "—" if value is None else f"{value / 1e9:.4g}"


def text(runs: list[dict[str, Any]], cut: list[dict[str, Any]], env: dict[str, Any], how: str) -> str:
    by_mode = {mode: statistics.median(r["wall_s"] for r in runs if r["counters"] == mode) for mode in ("all", "none")}
    ratio = by_mode["all"] / by_mode["none"]
    counted = next((r for r in runs if r["counters"] == "all"), {})
    lines = [f"Hardware counters on {env['device']['name']}", "",
             f"1. {EXPERIMENT.name}, brute force, the whole command (search, counters, report), fresh process each, "
             f"alternating ({counted.get('asked')} configurations counted with --counters all)",
             f"the run's counters: {counted.get('note')}",
             f"{'round':>5}  {'counters':<8}  {'wall s':>7}  {'search s':>8}  {'counters s':>10}  counted",
             *(f"{r['round']:>5}  {r['counters']:<8}  {r['wall_s']:>7.1f}  {(r['search_s'] or 0):>8.1f}  "
               f"{(r['counters_s'] or 0):>10.1f}  {r['counted'] if r['counted'] is not None else '—'}" for r in runs),
             f"wall time with every configuration counted / without: {ratio:.3f} (median of each; goal ≤ "
             f"{WALL_GOAL:.2f}: {'met' if ratio <= WALL_GOAL else 'missed'})", "",
             f"2. {BIG.label} float32, one session: L1 bytes (l1tex__t_bytes) of tiled T against the naive model / T",
             f"counted by {how}",
             f"{'kernel':<28}{'model GB':>9}{'requested':>11}{'L1 GB':>8}{'L2 GB':>8}{'DRAM GB':>9}"
             f"{'naive model/T':>15}{'L1 / that':>11}{'passes':>8}"]
    for row in cut:
        goal = row["l1_over_goal"]
        lines.append(f"{row['kernel']:<28}{_gb(row['model_bytes']):>9}{_gb(row['requested_bytes']):>11}"
                     f"{_gb(row['l1_bytes']):>8}{_gb(row['l2_bytes']):>8}{_gb(row['dram_bytes']):>9}"
                     f"{_gb(row['naive_model_over_t']):>15}{'—' if goal is None else f'{goal:.3f}':>11}"
                     f"{row['replay_passes']:>8}")
    naive = cut[0]
    for row in cut[1:]:
        requested = _ratio(naive["requested_bytes"], row["requested_bytes"])
        lines.append(f"naive / {row['kernel']}: requested {requested}, L1 {_ratio(naive['l1_bytes'], row['l1_bytes'])}"
                     f" (model {_ratio(naive['model_bytes'], row['model_bytes'])})")
    worst = max(abs(row["l1_over_goal"] - 1) for row in cut[1:])
    lines += [f"L1 of tiled T within {100 * worst:.1f}% of the naive model / T (goal ≤ {100 * L1_GOAL:.0f}%: "
              f"{'met' if worst <= L1_GOAL else 'missed'})",
              "requested = the bytes the threads' global loads and stores ask for (sm__sass_data_bytes_mem_global); "
              f"the naive kernel's L1 bytes are {_ratio(naive['l1_bytes'], naive['requested_bytes'], 3)} of them (a "
              "warp of its 16-wide block covers two rows of C: per step of k its lanes read one element of A per row "
              "and the same 64 bytes of B for both rows, 4 sectors of 32 bytes where they ask for 256 bytes)"]
    return "\n".join(lines)


def run(rounds: int, out: Path, fixture: Path | None, keep: Path | None, objective: str | None = None) -> Path:
    with tempfile.TemporaryDirectory(prefix="tuner-counters-bench-") as folder:
        runs, env = wall_times(rounds, Path(folder), keep, objective)
    cut, session = l1_cut(str(env["device"]["name"]))
    report = text(runs, cut, env, session["how"])
    print(report)
    if fixture is not None:
        fixture.mkdir(parents=True, exist_ok=True)
        stem = fixture / f"ncu_raw_counters_{gpu_slug(env['device']['name'])}"
        stem.with_suffix(".csv").write_text(session["page"])
        stem.with_suffix(".json").write_text(json.dumps({"kernels": session["order"], "how": session["how"],
                                                         "device": env["device"]["name"]}, indent=1) + "\n")
    return write(out, "counters", env, report, {"wall_times": runs, "l1_cut": cut, "how": session["how"]})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="pairs of runs, alternating (default 1)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    parser.add_argument("--fixture", type=Path, help="also save the 4096³ session's raw CSV page here")
    parser.add_argument("--keep", type=Path, help="keep the last --counters all run folder here")
    parser.add_argument("--objective", help="the runs' --objective, e.g. time,energy (the same in both modes)")
    args = parser.parse_args(argv)
    return finish(lambda: run(args.rounds, args.out, args.fixture, args.keep, args.objective))


if __name__ == "__main__":
    raise SystemExit(main())
