"""``python -m tuner table …``: make experiments of a workload, build a kernel table from runs, show it, predict a
configuration for a shape, and measure the prediction on held-out shapes of recorded runs."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any


def add_table_commands(commands: Any) -> None:
    table = commands.add_parser("table", help="a kernel table: workload, experiments, build, show, predict, "
                                "holdout, export-cuda")
    actions = table.add_subparsers(dest="action", required=True, metavar="ACTION")
    workload = actions.add_parser("workload", help="a workload file of the matmul shapes a PyTorch profile recorded")
    workload.add_argument("--from-trace", type=Path, required=True, metavar="TRACE.json",
                          help="a trace of torch.profiler.profile(record_shapes=True), by export_chrome_trace")
    workload.add_argument("--out", type=Path, required=True, metavar="WORKLOAD.json")
    workload.add_argument("--tf32", action="store_true", help="float32 products as tf32 (the program allowed TF32)")
    workload.set_defaults(handler=_workload)
    experiment = actions.add_parser("experiment", help="write experiment files tuning a workload's shapes")
    experiment.add_argument("workload", type=Path, help="a JSON list of {M, N, K, dtype} objects, or a CSV file")
    experiment.add_argument("--base", type=Path, required=True, help="an experiment whose kernels and settings to use")
    experiment.add_argument("--out", type=Path, required=True, help="folder of the experiment files (one per dtype)")
    experiment.set_defaults(handler=_experiment)
    build = actions.add_parser("build", help="a kernel table of the runs' fastest ok configurations")
    build.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR", help="tuning runs' output folders")
    build.add_argument("--out", type=Path, required=True, metavar="TABLE_DIR", help="folder of the table")
    build.add_argument("--no-cubins", action="store_true", help="keep only the kernels' sources (by default each "
                       "is also compiled with nvcc for the GPU it was tuned on)")
    build.set_defaults(handler=_build)
    show = actions.add_parser("show", help="list a kernel table's entries")
    show.add_argument("table", type=Path, metavar="TABLE_DIR")
    show.set_defaults(handler=_show)
    predict = actions.add_parser("predict", help="the configuration the table gives a shape, and why")
    predict.add_argument("table", type=Path, metavar="TABLE_DIR")
    for size in ("M", "N", "K"):
        predict.add_argument(size, type=int)
    predict.add_argument("dtype")
    predict.add_argument("--evaluations", action="store_true", help="choose among every ok evaluation of the runs "
                         "the table was built from (their folders must still be there), not only the winners")
    predict.set_defaults(handler=_predict)
    holdout = actions.add_parser("holdout", help="predict each recorded shape from the others; score it")
    holdout.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR", help="tuning runs' output folders")
    holdout.add_argument("--out", type=Path, help="folder for NAME.txt and NAME.json (default: print only)")
    holdout.add_argument("--name", default="table_holdout", help="stem of the written files")
    holdout.set_defaults(handler=_holdout)
    export = actions.add_parser("export-cuda", help="the table's kernels as plain CUDA with a C dispatch header")
    export.add_argument("table", type=Path, metavar="TABLE_DIR")
    export.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder of the .cu files and header")
    export.add_argument("--shapes", type=Path, metavar="WORKLOAD", help="also export the configuration predicted "
                        "for each shape of this workload the table does not hold")
    export.set_defaults(handler=_export_cuda)


def _write_files(folder: Path, files: dict[str, str]) -> None:
    """Each file (name → text) replaced atomically in ``folder``; TunerError naming the folder where it cannot."""
    from tuner import atomic_file, input_file
    from tuner.errors import TunerError

    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            atomic_file.write_text(folder / name, text)
    except OSError as exc:
        raise TunerError(f"{folder}: cannot write {', '.join(files)} here ({input_file.reason(exc)}); the files "
                         f"written there before are left whole") from None


def _workload(args: argparse.Namespace) -> int:
    from tuner.table.trace import read_trace
    from tuner.table.workload import workload_text

    workload = read_trace(args.from_trace, tf32=args.tf32)
    _write_files(args.out.parent, {args.out.name: workload_text(workload.calls)})
    for dtype, count in workload.skipped.items():
        print(f"left out {count} call(s) in {dtype}, a dtype no table takes", file=sys.stderr)
    print(f"{args.out}  ({len(workload.calls)} shape(s), {sum(workload.calls.values())} call(s))")
    return 0


def _experiment(args: argparse.Namespace) -> int:
    from tuner.table.experiment_file import workload_experiments
    from tuner.table.workload import read_workload

    shapes = read_workload(args.workload)
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", args.workload.stem)[:64] or "workload"
    texts = workload_experiments(shapes, args.base, stem)
    _write_files(args.out, {f"{stem}_{dtype}.yaml": text for dtype, text in texts.items()})
    for dtype in texts:
        path = args.out / f"{stem}_{dtype}.yaml"
        count = sum(s.dtype == dtype for s in shapes)
        print(f"{path}  ({count} shape(s) in {dtype}; tune it with python -m tuner run {path})")
    return 0


def _build(args: argparse.Namespace) -> int:
    from tuner.table.artifact import write_table
    from tuner.table.build import build_table, compile_cubins

    table, sources = build_table(args.runs)
    cubins: dict[str, bytes] = {}
    if not args.no_cubins:
        table, cubins = compile_cubins(table, sources)
    path = write_table(args.out, table, sources, cubins)
    print(f"{path}  ({len(table.entries)} entries from {len(table.runs)} run(s), {len(cubins)} cubin(s))")
    return 0


def _show(args: argparse.Namespace) -> int:
    from tuner.table.artifact import read_table
    from tuner.table.show import table_text

    print(table_text(read_table(args.table)))
    return 0


def _predict(args: argparse.Namespace) -> int:
    from tuner.table.artifact import read_table
    from tuner.table.evaluations import evaluation_candidates
    from tuner.table.lookup import choose

    table = read_table(args.table)
    extra = evaluation_candidates([Path(run) for run in table.runs]) if args.evaluations else []
    print(choose(table, args.M, args.N, args.K, args.dtype, extra))
    return 0


def _holdout(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from tuner.table.evaluations import recorded
    from tuner.table.holdout import SOURCES, hold_out, report

    if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}", args.name):
        from tuner.errors import TunerError

        raise TunerError(f"--name {args.name!r}: expected a plain file stem (letters, digits, '_', '-', '.')")
    runs = recorded(args.runs)
    rows = [row for source in SOURCES for row in hold_out(runs, source)]
    text = report(rows, f"Held-out shapes of {', '.join(map(str, args.runs))}, predicted from the other shapes")
    print(text)
    if args.out is not None:
        record = [{**asdict(r), "problem": r.problem.label, "neighbour": r.neighbour and r.neighbour.label,
                   "predicted": r.predicted and r.predicted.key, "share_of_best": r.share_of_best} for r in rows]
        _write_files(args.out, {f"{args.name}.txt": text + "\n", f"{args.name}.json": json.dumps(
            {"runs": list(map(str, args.runs)), "rows": record}, indent=2) + "\n"})
        print(f"wrote {args.out / args.name}.txt and .json", file=sys.stderr)
    return 0


def _export_cuda(args: argparse.Namespace) -> int:
    from tuner.table.artifact import read_table
    from tuner.table.export_cuda import README, build_command, export_table, predicted_entries
    from tuner.table.workload import read_workload

    table = read_table(args.table)
    predicted = predicted_entries(table, read_workload(args.shapes)) if args.shapes else []
    exported, files = export_table(table, args.table, predicted)
    _write_files(args.out, files)
    print(f"{args.out}  ({len(exported)} kernels; build: cd {args.out} && nvcc {' '.join(build_command(exported))}; "
          f"see {README})")
    return 0
