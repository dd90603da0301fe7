"""Stream-K against the decomposition the shape suite tuned: for each shape of a ``shapes.py compare`` result whose
kernel (a wgmma configuration) is below a ratio to cuBLAS, that configuration and its stream-K variants (the same
tile and pipeline on persistent blocks without clusters or split-K, in both modes, with either reduction; half of
each consumer's share of the tile where the reduction's registers do not fit beside its accumulators) are timed side
by side with cuBLAS in one process, in alternating rounds.

    python benchmarks/stream_k.py RESULT.json [--below 0.95] [--dtype bfloat16] [--rounds 2] [--max-time 1]

Writes ``DIR/stream_k_<gpu>.txt`` and ``.json`` (``--name`` changes the stem): per shape and configuration, TFLOP/s,
the ratio to cuBLAS and the ratio to the suite's configuration measured in the same run.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from benchmarks.shapes import read_result  # noqa: E402
from benchmarks.vs_cublas import MEASURE, compare  # noqa: E402
from tuner.backends.pycuda.backend import PycudaBackend  # noqa: E402
from tuner.config import Config, Problem  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.kernels.discovery import get_family  # noqa: E402
from tuner.kernels.targets import target  # noqa: E402
from tuner.results.metadata import metadata_id  # noqa: E402
from tuner.settings import CompileSettings  # noqa: E402
from tuner.space.entry_space import violations  # noqa: E402

STREAMED = {"PERSISTENT": 1, "CLUSTER": 1, "SPLIT_K": 1}
"""What stream-K asks of a configuration: persistent blocks, no clusters, no split-K."""
VARIANTS = ((0, "serial"), *((mode, reduce) for mode in (1, 2) for reduce in ("serial", "atomic")))
"""(STREAM_K, REDUCE): the tile on persistent blocks without stream-K (what stream-K changes is then its own), and
stream-K in both modes with either reduction."""


def stream_k_variants(config: Config) -> list[Config]:
    """The valid variants of a wgmma configuration (VARIANTS) other than itself, in order. Where
    the tile leaves no registers for the reduction, the tile with half of what each consumer computes (its rows; tf32's
    columns, as it computes Cᵀ), down to a slab per consumer."""
    family = get_family(config.family)
    params = config.param_dict
    shared = "BN" if config.dtype == "tf32" else "BM"
    while True:
        variants = []
        for mode, reduce in VARIANTS:
            streamed = {**params, **STREAMED, "STREAM_K": mode, "REDUCE": reduce}
            if streamed != config.param_dict and not violations(family, streamed, config.dtype,
                                                                 target(family.arch or "sm_90a")):
                variants.append(Config.make(config.problem, config.family, config.dtype, streamed))
        if any(v.param_dict["STREAM_K"] for v in variants) or int(params[shared]) <= 64 * int(params["CONSUMERS"]):
            return variants
        params = {**params, shared: int(params[shared]) // 2}


def chosen_rows(result: dict[str, Any], below: float, dtype: str) -> list[dict[str, Any]]:
    """The result's rows in ``dtype`` whose kernel is a wgmma configuration below ``below`` of cuBLAS."""
    rows = []
    for row in result["rows"]:
        ratio, key = row.get("ratio_cublas"), row.get("config")
        if row.get("dtype") == dtype and key and ratio is not None and ratio < below and "/wgmma/" in key:
            rows.append(row)
    return rows


def suite_config(row: dict[str, Any]) -> Config:
    """The configuration a result's row names by its key (``M×N×K/family/dtype/NAME=value,...``, integers and plain
    words); TunerError for a key that does not read back as itself."""
    key = str(row["config"])
    try:
        sizes, family, dtype, pairs = key.split("/", 3)
        params: dict[str, Any] = {}
        for pair in pairs.split(","):
            name, value = pair.split("=", 1)
            params[name] = int(value) if value.lstrip("-").isdigit() else value
        config = Config.make(Problem(*map(int, sizes.split("x"))), family, dtype, params)
    except (ValueError, TypeError) as exc:
        raise TunerError(f"the row of {row.get('shape')} names no configuration ({key!r}: {exc})") from None
    if config.key != key:
        raise TunerError(f"the row of {row.get('shape')} names a configuration this benchmark cannot read back "
                         f"({key!r})")
    return config


def table(rows: list[dict[str, Any]], env: dict[str, Any], source: str, rounds: int) -> str:
    lines = [f"Stream-K variants of the kernels of {source} on {env['device']['name']}, each against cuBLAS and "
             f"the suite's configuration in the same run; {rounds} alternating rounds, medians",
             f"method: {env['measure']['method']}", "",
             f"{'shape':<24}{'problem':<16}{'variant':<20}{'TFLOP/s':>9}{'/cuBLAS':>9}{'/suite':>8}  configuration"]
    for row in rows:
        if row["status"] != "ok":
            lines.append(f"{row['shape']:<24}{row['problem']:<16}{row['variant']:<20}  {row['status']}: "
                         f"{row.get('reason', '')}")
            continue
        versus = f"{row['ratio_suite']:.3f}" if row.get("ratio_suite") else "—"
        lines.append(f"{row['shape']:<24}{row['problem']:<16}{row['variant']:<20}{row['kernel_tflops']:>9.1f}"
                     f"{row['ratio']:>9.3f}{versus:>8}  {row['config'].split('/')[-1]}")
    best = best_per_shape(rows)
    better = sum(1 for b in best.values() if b["variant"].startswith("stream-K"))
    lines += ["", f"a stream-K variant fastest on {better} of {len(best)} shapes",
              "variant: suite = the suite's tuned configuration; persistent tiles = its tile on persistent blocks "
              "without clusters or split-K; stream-K m serial/atomic = that, mode 1 (the last waves streamed) or 2 "
              "(all)", f"metadata_id {metadata_id(env)}"]
    return "\n".join(lines)


def best_per_shape(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    best: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["status"] == "ok" and (row["shape"] not in best or row["ratio"] > best[row["shape"]]["ratio"]):
            best[row["shape"]] = row
    return best


def variant_name(config: Config, suite: Config) -> str:
    params = config.param_dict
    if config == suite:
        return "suite"
    return f"stream-K {params['STREAM_K']} {params['REDUCE']}" if params.get("STREAM_K") else "persistent tiles"


def run(result_path: Path, below: float, dtype: str, rounds: int, max_time_s: float, out: Path, name: str) -> Path:
    if rounds < 1 or not max_time_s > 0:
        raise TunerError(f"--rounds {rounds} and --max-time {max_time_s:g}: give at least one round and a positive "
                         f"time")
    chosen = chosen_rows(read_result(result_path), below, dtype)
    if not chosen:
        raise TunerError(f"{result_path}: no {dtype} row of a wgmma kernel below {below} of cuBLAS")
    plans = [(row, [suite, *stream_k_variants(suite)]) for row in chosen for suite in [suite_config(row)]]
    rows: list[dict[str, Any]] = []
    with PycudaBackend(replace(MEASURE, max_time_s=max_time_s), CompileSettings(arch="sm_90a")) as backend:
        backend.prefetch([config for _, configs in plans for config in configs])
        env = backend.metadata()
        for number, (row, configs) in enumerate(plans, 1):
            print(f"[{number}/{len(plans)}] {row['shape']}: {len(configs)} configurations", file=sys.stderr,
                  flush=True)
            measured = [{"shape": row["shape"], "variant": variant_name(c, configs[0]), **compare(backend, c, rounds)}
                        for c in configs]
            suite = measured[0].get("kernel_tflops")
            for entry in measured:
                entry["ratio_suite"] = entry["kernel_tflops"] / suite if suite and entry["status"] == "ok" else None
                entry.setdefault("problem", row["problem"])
            rows += measured
    text = table(rows, env, result_path.name, rounds)
    print(text)
    return write(out, name, env, text, {"result": str(result_path), "below": below, "rounds": rounds, "rows": rows})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", type=Path, help="a shapes.py compare (or merge) result, .json")
    parser.add_argument("--below", type=float, default=0.95, help="rows below this ratio to cuBLAS (default 0.95)")
    parser.add_argument("--dtype", default="bfloat16", help="the dtype of the rows (default bfloat16)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating kernel/cuBLAS rounds (default 2)")
    parser.add_argument("--max-time", type=float, default=1.0, help="seconds of samples per measurement at most")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    parser.add_argument("--name", default="stream_k", help="stem of the written files (default stream_k)")
    args = parser.parse_args(argv)
    return finish(lambda: run(args.result, args.below, args.dtype, args.rounds, args.max_time, args.out, args.name))


if __name__ == "__main__":
    raise SystemExit(main())
