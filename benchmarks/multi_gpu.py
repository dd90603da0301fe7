"""Several GPUs against one: the same experiment tuned with ``--gpus all`` and with the first GPU alone, side by
side, each into a fresh folder and storage with the same budget.

    python benchmarks/multi_gpu.py EXPERIMENT [--gpus all] [--trials N] [--timeout SECONDS] [--out DIR]
                                   [--backend pycuda|replay] [--replay PATH]

Reports the evaluations per minute of the search (the run's evaluations over its wall time, device set-up
excluded) of each run and their ratio, and, for the run on several GPUs, the rows each GPU measured (by UUID):
how many, how many passed verification (``ok``) and how many failed it (``wrong``). Every GPU must have
measured rows and none may be wrong. Writes ``DIR/multi_gpu_<gpu>.txt`` and ``.json`` with each GPU's
environment (device, ceilings, versions); a replayed comparison (``--backend replay``, which checks the logic
without a GPU) writes ``multi_gpu_replay.*``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import pandas as pd  # noqa: E402

import tuner  # noqa: E402
from benchmarks.reporting import DEFAULT_OUT, finish, gpu_slug  # noqa: E402
from tuner.backends.gpus import parse_gpus, visible_gpus  # noqa: E402
from tuner.errors import TunerError  # noqa: E402


def throughput(result: tuner.RunResult) -> dict[str, Any]:
    """Evaluations, search wall time and evaluations per minute of the run that produced ``result``."""
    run = result.metadata["runs"][-1]
    evaluations, wall = int(run["evaluations"]), float(run["wall_s"] or 0.0)
    return {"evaluations": evaluations, "wall_s": wall,
            "per_minute": round(60.0 * evaluations / wall, 2) if wall > 0 else None}


def per_gpu(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The tuned rows each GPU measured: counts by outcome."""
    kernels = df[df["study"] != "baseline"]
    groups = []
    for (uuid, name), rows in kernels.groupby([kernels["gpu_uuid"].fillna("?"), kernels["gpu_name"].fillna("?")]):
        statuses = rows["status"].value_counts()
        groups.append({"gpu_uuid": uuid, "gpu_name": name, "rows": len(rows), "ok": int(statuses.get("ok", 0)),
                       "wrong": int(statuses.get("wrong", 0)), "crashed": int(statuses.get("crashed", 0))})
    return groups


def compare(experiment: str, gpus: str, trials: int | None, timeout: float | None, backend: str,
            replay: str | None, folder: Path) -> dict[str, Any]:
    """Tune with ``gpus`` and with the first of them alone; the figures of both and the per-GPU check."""
    first = "0"  # replayed GPUs are indices standing for devices
    if backend == "pycuda":
        visible = visible_gpus()
        chosen = parse_gpus(gpus, visible)
        if len(chosen) < 2:
            raise TunerError(f"--gpus {gpus} names {len(chosen)} GPU; the comparison needs at least two")
        first = str(visible.index(chosen[0]))
    settings: dict[str, Any] = {"backend": backend, "replay": replay, "trials": trials, "timeout": timeout,
                                "quiet": True, "report": False, "summary": False}
    several = tuner.run(experiment, gpus=gpus, out=folder / "several", **settings)
    one = tuner.run(experiment, gpus=first, out=folder / "one", **settings)
    many, single = throughput(several), throughput(one)
    groups = per_gpu(several.df)
    ratio = many["per_minute"] / single["per_minute"] if many["per_minute"] and single["per_minute"] else None
    return {
        "experiment": experiment, "gpus": gpus, "backend": backend, "trials": trials, "timeout_s": timeout,
        "several": many, "one": single, "ratio": round(ratio, 3) if ratio is not None else None,
        "per_gpu": groups,
        "every_gpu_measured_and_verified": bool(groups) and all(g["ok"] > 0 and g["wrong"] == 0 for g in groups),
        "environments": several.metadata["environments"],
    }


def format_text(record: dict[str, Any]) -> str:
    lines = [f"{record['experiment']}: --gpus {record['gpus']} against one GPU ({record['backend']} backend)", "",
             f"{'run':<10}{'evaluations':>12}{'wall s':>10}{'per minute':>12}"]
    for label in ("several", "one"):
        run = record[label]
        per_minute = "—" if run["per_minute"] is None else f"{run['per_minute']:.1f}"
        lines.append(f"{label:<10}{run['evaluations']:>12}{run['wall_s']:>10.1f}{per_minute:>12}")
    ratio = "—" if record["ratio"] is None else f"{record['ratio']:.2f}×"
    lines += [f"ratio (several / one): {ratio}", "", f"{'GPU':<44}{'rows':>6}{'ok':>6}{'wrong':>7}{'crashed':>9}"]
    for group in record["per_gpu"]:
        lines.append(f"{group['gpu_name'] + ' ' + group['gpu_uuid'][-12:]:<44}{group['rows']:>6}{group['ok']:>6}"
                     f"{group['wrong']:>7}{group['crashed']:>9}")
    verdict = "yes" if record["every_gpu_measured_and_verified"] else "NO"
    lines.append(f"every GPU measured rows, none wrong: {verdict}")
    return "\n".join(lines)


def write(out: Path, record: dict[str, Any]) -> Path:
    names = sorted({g["gpu_name"] for g in record["per_gpu"]})
    tag = "replay" if record["backend"] == "replay" else "_".join(gpu_slug(n) for n in names) or "gpu"
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"multi_gpu_{tag}"
    stem.with_suffix(".txt").write_text(format_text(record) + "\n")
    stem.with_suffix(".json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    return stem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment")
    parser.add_argument("--gpus", default="all", help="the GPUs of the run on several (default: all)")
    parser.add_argument("--trials", type=int, help="distinct configurations per study (default: the experiment's)")
    parser.add_argument("--timeout", type=float, help="wall-time budget per study, seconds")
    parser.add_argument("--backend", choices=("pycuda", "replay"), default="pycuda")
    parser.add_argument("--replay", help="a recorded run folder, for --backend replay")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    def produce() -> Path:
        with tempfile.TemporaryDirectory(prefix="multi_gpu_") as folder:
            record = compare(args.experiment, args.gpus, args.trials, args.timeout, args.backend, args.replay,
                             Path(folder))
        print(format_text(record))
        return write(args.out, record)

    return finish(produce)


if __name__ == "__main__":
    raise SystemExit(main())
