"""The public shape suite (benchmarks/shapes.yaml): our kernels against cuBLAS as a user gets it, cuBLASLt's own
autotuning and Triton's autotuner, shape by shape, side by side in one process by one method.

    python benchmarks/shapes.py compare [RUN_DIR ...] [--configs LIST.json] [--only TEXT] [--kind K] [--dtype D]
                                        [--out DIR]
    python benchmarks/shapes.py experiment --base experiments/h100_wgmma.yaml [--only TEXT] [--kind K] [--dtype D]
    python benchmarks/shapes.py merge RESULT.json ... [--name shapes_merged] [--out DIR]

``compare`` times, for every shape and dtype of the suite (``--only`` keeps the shapes whose name contains TEXT,
``--kind`` those of one class: decode, small-M or prefill):
ours — the fastest ok configuration that the given tuning runs recorded for that exact shape, else the fastest of
the ``--configs`` listing's kernels run on it (untuned for the shape; the row says which) —, cuBLAS
(cublasGemmEx's default algorithm), cuBLASLt (the fastest of the first LT_ALGORITHMS algorithms its heuristic
proposes) and Triton (where importable). Memory-bound shapes (M ≤ 16) are also given as a share of the DRAM
roofline: the bytes of A, B and C over the time, against the device's measured bandwidth. Writes
``DIR/shapes_<gpu>.txt``, ``.json`` and ``.png`` (``--name`` changes the stem). ``experiment`` prints an experiment
file tuning the suite's shapes with the kernels, measurement and compile settings of ``--base``. ``merge`` joins
the rows of several ``compare`` results of one GPU model into one table, in the suite's order, a later file's row
replacing an earlier one's for the same shape and dtype; each row names the result it comes from (every ratio was
measured within one run, ours and the rivals side by side).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, tflops, write  # noqa: E402
from benchmarks.shape_figure import ratio_figure  # noqa: E402
from benchmarks.vs_cublas import MEASURE, best_configs, listed_kernels  # noqa: E402
from tuner.config import Config, Problem  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.kernels.verify import NUMPY_DTYPES  # noqa: E402
from tuner.measure.measurement import Measurement  # noqa: E402
from tuner.results.metadata import metadata_id  # noqa: E402
from tuner.table.experiment_file import experiment_document, read_base  # noqa: E402

SUITE = Path(__file__).resolve().parent / "shapes.yaml"
LT_ALGORITHMS = 8
DECODE_M = 16
"""Shapes with at most this many rows of A are bound by DRAM: B is read once for a few tokens."""


def kind_of(M: int) -> str:
    """A model layer's class by its token count."""
    return "decode" if M <= DECODE_M else "small-M" if M <= 128 else "prefill"


@dataclass(frozen=True)
class Shape:
    name: str
    problem: Problem
    kind: str
    """decode (M ≤ 16), small-M (≤ 128), prefill, or ragged (the suite's extra shapes)."""


def load_suite(path: Path = SUITE) -> tuple[list[Shape], list[str]]:
    """The suite's shapes (each model layer at each token count, then the extra shapes) and its dtypes."""
    try:
        suite = yaml.safe_load(path.read_text())
        shapes = [Shape(f"{model['name']}/{layer}/M={m}", Problem(m, int(size["N"]), int(size["K"])), kind_of(m))
                  for model in suite["models"] for layer, size in model["layers"].items() for m in suite["tokens"]]
        shapes += [Shape(extra["name"], Problem(int(extra["M"]), int(extra["N"]), int(extra["K"])), "ragged")
                   for extra in suite.get("extra", [])]
        return shapes, [str(d) for d in suite["dtypes"]]
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise TunerError(f"{path}: not a shape suite ({type(exc).__name__}: {exc}); see benchmarks/shapes.yaml "
                         f"for the format") from None


KINDS = ("decode", "small-M", "prefill")


def selected(shapes: list[Shape], dtypes: list[str], only: str | None,
             dtype: str | None, kind: str | None = None) -> tuple[list[Shape], list[str]]:
    """The shapes whose name contains ``only`` (or one of its comma-separated texts), of the class ``kind`` (see
    :func:`kind_of`), and the one dtype asked for (all where None)."""
    texts = only.split(",") if only is not None else None
    kept = [s for s in shapes if (texts is None or any(text in s.name for text in texts))
            and (kind is None or kind_of(s.problem.M) == kind)]
    if not kept:
        asked = " and ".join(part for part in (only and f"{only!r} in its name", kind and f"the class {kind}") if part)
        raise TunerError(f"no shape of the suite has {asked}")
    if dtype is not None and dtype not in dtypes:
        raise TunerError(f"the suite is measured in {', '.join(dtypes)}, not {dtype}")
    return kept, [dtype] if dtype else dtypes


def dram_share(problem: Problem, dtype: str, result: Measurement, bandwidth_gbs: float | None) -> float | None:
    """The share of the measured DRAM bandwidth that reading A and B and writing C (float32) once takes."""
    if bandwidth_gbs is None or result.timing is None:
        return None
    size = NUMPY_DTYPES[dtype](0).itemsize
    moved = (problem.M * problem.K + problem.K * problem.N) * size + problem.M * problem.N * 4
    return moved / (result.timing.median_ms * 1e-3) / (bandwidth_gbs * 1e9)


def fastest_of(backend: Any, configs: Iterable[Config]) -> tuple[Measurement | None, Config | None]:
    best: tuple[Measurement | None, Config | None] = (None, None)
    for config in configs:
        result = backend.evaluate(config)
        rate = tflops(config.problem, result)
        if rate is not None and (best[0] is None or rate > (tflops(config.problem, best[0]) or 0)):
            best = result, config
    return best


def measure_shape(backend: Any, shape: Shape, dtype: str, tuned: dict[tuple[str, str], list[Config]],
                  listed: list[dict[str, Any]], bandwidth: float | None) -> dict[str, Any]:
    """One row: ours and the three rivals on one shape and dtype."""
    problem = shape.problem
    own = tuned.get((problem.label, dtype))
    candidates = own or [Config.make(problem, k["family"], dtype, k["params"]) for k in listed if k["dtype"] == dtype]
    ours, config = fastest_of(backend, candidates)
    results = {"ours": ours, "cublas": backend.baseline(problem, dtype),
               "cublaslt": backend.rival(problem, dtype, "cublaslt", LT_ALGORITHMS),
               "triton": backend.rival(problem, dtype, "triton")}
    rates = {who: (tflops(problem, r) if r is not None else None) for who, r in results.items()}
    row: dict[str, Any] = {
        "shape": shape.name, "kind": shape.kind, "problem": problem.label, "dtype": dtype,
        "ours_from": "tuned for this shape" if own else f"fastest of {len(candidates)} listed configurations",
        "config": config.key if config else None,
        "status": "ok" if rates["ours"] is not None else "no ok configuration",
        **{f"{who}_tflops": rate for who, rate in rates.items()},
        **{f"{who}_reason": (r.reason if r is not None else "") for who, r in results.items() if who != "ours"},
        **{f"{who}_dram_share": dram_share(problem, dtype, r, bandwidth) if r is not None and
           problem.M <= DECODE_M else None for who, r in results.items()},
    }
    for rival in ("cublas", "cublaslt", "triton"):
        row[f"ratio_{rival}"] = rates["ours"] / rates[rival] if rates["ours"] and rates[rival] else None
    return row


def _cell(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """Per dtype and rival: the geometric mean of the ratios, the lowest, and how many shapes are below 0.95."""
    lines = []
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        for rival in ("cublas", "cublaslt", "triton"):
            ratios = [r[f"ratio_{rival}"] for r in rows if r["dtype"] == dtype and r[f"ratio_{rival}"]]
            if ratios:
                worst = min(ratios)
                lines.append(f"{dtype} against {rival}: geometric mean {statistics.geometric_mean(ratios):.3f}, "
                             f"lowest {worst:.3f}, {sum(x < 0.95 for x in ratios)} of {len(ratios)} below 0.95")
    return lines


def table(rows: list[dict[str, Any]], env: dict[str, Any], runs: list[str] | None = None) -> str:
    """The printed table of ``rows`` measured in ``env``; ``runs``: where the rows come from several runs, each
    run's file and metadata_id (``env`` is then the last run's)."""
    device, versions = env["device"], env["versions"]
    source = (f"rows from {len(runs)} runs, each row measured side by side within its run" if runs
              else "one measurement each")
    lines = [
        f"Shape suite against cuBLAS, cuBLASLt (fastest of its heuristic's first {LT_ALGORITHMS}) and Triton on "
        f"{device['name']} (driver {versions['driver']}, CUDA {versions['cuda']}); {source}",
        f"method: {env['measure']['method']}",
        "",
        f"{'shape':<28}{'dtype':<9}{'ours':>8}{'cuBLAS':>8}{'Lt best':>8}{'Triton':>8}{'/cuBLAS':>9}{'/Lt':>7}"
        f"{'/Triton':>8}{'DRAM %':>8}  ours from",
    ]
    for r in rows:
        share = r["ours_dram_share"]
        lines.append(
            f"{r['shape']:<28}{r['dtype']:<9}{_cell(r['ours_tflops'], '.1f'):>8}{_cell(r['cublas_tflops'], '.1f'):>8}"
            f"{_cell(r['cublaslt_tflops'], '.1f'):>8}{_cell(r['triton_tflops'], '.1f'):>8}"
            f"{_cell(r['ratio_cublas'], '.3f'):>9}{_cell(r['ratio_cublaslt'], '.3f'):>7}"
            f"{_cell(r['ratio_triton'], '.3f'):>8}{_cell(share and 100 * share, '.1f'):>8}  {r['ours_from']}")
    lines += ["", *summary(rows)]
    lines += ["", "TFLOP/s; ratios are ours / theirs; DRAM % (M ≤ 16): A, B and C moved once against the measured "
              f"bandwidth of {_cell(env['peaks']['measured'].get('bandwidth_gbs'), '.0f')} GB/s",
              f"metadata_id of each run: {', '.join(runs)}" if runs else f"metadata_id {metadata_id(env)}"]
    return "\n".join(lines)


def compare(runs: list[Path], listing: Path | None, only: str | None, dtype: str | None, max_time_s: float,
            out: Path, name: str = "shapes", kind: str | None = None) -> Path:
    from tuner.backends.pycuda.backend import PycudaBackend

    shapes, dtypes = selected(*load_suite(), only, dtype, kind)
    tuned: dict[tuple[str, str], list[Config]] = {}
    compile_settings = None
    for run in runs:
        configs, compile_settings = best_configs(run)
        for config in configs:
            tuned.setdefault((config.problem.label, config.dtype), []).append(config)
    listed: list[dict[str, Any]] = []
    if listing is not None:
        listed, _, compile_settings = listed_kernels(listing)
    if compile_settings is None:
        raise TunerError("give tuning runs' output folders, or --configs LIST.json, for our column")
    record: dict[str, Any] = {"runs": [str(r) for r in runs], "configs": str(listing),
                              "lt_algorithms": LT_ALGORITHMS, "rows": []}
    with PycudaBackend(replace(MEASURE, max_time_s=max_time_s), compile_settings) as backend:
        env = backend.metadata()
        bandwidth = env["peaks"]["measured"].get("bandwidth_gbs")
        for number, shape in enumerate(shapes, 1):
            for d in dtypes:
                print(f"[{number}/{len(shapes)}] {shape.name} {d}", file=sys.stderr, flush=True)
                record["rows"].append(measure_shape(backend, shape, d, tuned, listed, bandwidth))
                stem = write(out, name, env, table(record["rows"], env), record)  # kept if the run is cut short
    print(table(record["rows"], env))
    ratio_figure(record["rows"], stem.with_suffix(".png"), f"Shape suite on {env['device']['name']}")
    return stem


ROW_FIELDS = ("shape", "dtype", "ours_from", "ours_tflops", "cublas_tflops", "cublaslt_tflops", "triton_tflops",
              "ratio_cublas", "ratio_cublaslt", "ratio_triton", "ours_dram_share")
"""What a row of ``compare``'s JSON result holds that the merged table shows."""


def read_result(path: Path) -> dict[str, Any]:
    """A ``compare`` (or ``merge``) result: its rows, each with the fields a table shows, and the metadata of the
    device it was measured on; TunerError naming the file otherwise."""
    try:
        document = json.loads(path.read_text())
        if not isinstance(document["metadata"]["device"]["name"], str):
            raise TypeError("the metadata names no device")
        for row in document["rows"]:
            missing = [field for field in ROW_FIELDS if field not in row]
            if missing:
                raise KeyError(f"a row lacks {', '.join(missing)}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TunerError(f"{path}: not a result of 'shapes.py compare' ({type(exc).__name__}: {exc})") from None
    return document


def merge(results: list[Path], out: Path, name: str = "shapes_merged") -> Path:
    """One table of the rows of several ``compare`` results (see the module's docstring)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    env: dict[str, Any] | None = None
    ids: list[str] = []
    for path in results:
        document = read_result(path)
        found, metadata = list(document["rows"]), document["metadata"]
        device = metadata["device"]["name"]
        if env is not None and device != env["device"]["name"]:
            raise TunerError(f"{path}: measured on {device}, the results before it on {env['device']['name']}; "
                             f"merge the results of one GPU model")
        env = metadata
        ids.append(f"{path.name} {document.get('metadata_id', metadata_id(metadata))}")
        for row in found:
            rows[(row["shape"], row["dtype"])] = {**row, "ours_from": f"{row['ours_from']} ({path.name})"}
    if env is None:
        raise TunerError("give the JSON results of 'shapes.py compare' runs to merge")
    suite, dtypes = load_suite()
    order = {(shape.name, dtype): i for i, (shape, dtype) in
             enumerate((shape, dtype) for dtype in dtypes for shape in suite)}
    merged = sorted(rows.values(), key=lambda r: order.get((r["shape"], r["dtype"]), len(order)))
    text = table(merged, env, ids)
    stem = write(out, name, env, text, {"merged_from": [str(p) for p in results], "rows": merged})
    print(text)
    ratio_figure(merged, stem.with_suffix(".png"), f"Shape suite on {env['device']['name']}")
    return stem


def experiment(base: Path, only: str | None, dtype: str | None, kind: str | None = None) -> str:
    """An experiment file tuning the selected shapes with ``base``'s kernels and settings."""
    shapes, dtypes = selected(*load_suite(), only, dtype, kind)
    name = f"shapes_{only or kind or 'all'}".replace("/", "_").replace("=", "").replace(",", "+")
    document = experiment_document(read_base(base), name, [s.problem for s in shapes], dtypes)
    return yaml.safe_dump(document, sort_keys=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("compare", help="time ours and the rivals on every shape")
    run.add_argument("runs", type=Path, nargs="*", help="tuning runs' output folders (ours, per shape)")
    run.add_argument("--configs", type=Path, help="a JSON list of configurations tried on shapes no run tuned")
    run.add_argument("--max-time", type=float, default=MEASURE.max_time_s,
                     help=f"seconds of samples per measurement at most (default {MEASURE.max_time_s:g})")
    run.add_argument("--name", default="shapes", help="stem of the written files (default shapes)")
    run.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt, .json and .png files")
    join = sub.add_parser("merge", help="join the rows of several compare results into one table")
    join.add_argument("results", type=Path, nargs="+", help="compare's JSON results, later ones replacing rows")
    join.add_argument("--name", default="shapes_merged", help="stem of the written files (default shapes_merged)")
    join.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt, .json and .png files")
    tune = sub.add_parser("experiment", help="print an experiment file tuning the suite's shapes")
    tune.add_argument("--base", type=Path, required=True, help="an experiment whose kernels and settings to use")
    for each in (run, tune):
        each.add_argument("--only", help="keep the shapes whose name contains this text (e.g. llama3-8b/qkv), or one "
                          "of several separated by commas")
        each.add_argument("--dtype", help="keep one dtype of the suite")
        each.add_argument("--kind", choices=KINDS, help=f"keep one class of shapes: decode (M ≤ {DECODE_M}), small-M "
                          "(M ≤ 128) or prefill")
    args = parser.parse_args(argv)
    if args.command == "experiment":
        try:
            print(experiment(args.base, args.only, args.dtype, args.kind), end="")
        except TunerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.command == "merge":
        return finish(lambda: merge(args.results, args.out, args.name))
    return finish(lambda: compare(args.runs, args.configs, args.only, args.dtype, args.max_time, args.out,
                                          args.name, args.kind))


if __name__ == "__main__":
    raise SystemExit(main())
