"""The kernel table on the GPU, from a PyTorch program to the table's calls in it, timed stage by stage:

    python benchmarks/table_device.py [--layers 2] [--trials N] [--work DIR] [--out DIR]

1. record: the forward of decoder layers of Llama-2-7B's size (benchmarks/table_model.py) at TOKENS, run under
   ``tuner.table.recorder.recording()``: the workload (its q/k/v/o and gate/up/down products, bfloat16 in and out);
2. tune: an experiment per dtype of the workload from experiments/table_bf16.yaml (the table's own
   ``workload_experiments``), run by ``tuner.run`` (50 evaluations a shape, transfer 5; the goal: ≤ 10 minutes for
   20 shapes); 3. build: the table of the run (``build_table``, ``write_table``);
4. held out: each tuned shape predicted from the others (``TableMatmul(…, exclude=(shape,))``) against its own
   entry, CUDA-event medians of 20 with L2 flushed, share own/predicted (goals: ≥ 0.95 mean, ≥ 0.90 worst);
5. host overhead of ``table.matmul`` over ``torch.matmul`` at 64×64×64 (10,000 calls; goal ≤ 10 µs); the model's
   forward captured in a CUDA graph and replayed; the model end to end with each (goal: torch/table ≥ 1.0, outputs
   within the bound); 6. from the run's results table, what each shape learned from the ones tuned before it.

Writes ``DIR/table_<gpu>.txt`` and ``.json`` (default benchmarks/results); progress on stderr. ``--work`` should
be a fresh folder: a run already there is continued, not tuned again, and its tuning time is not the table's.
Needs PyTorch, PyCUDA and an sm_90 GPU; imports them inside its functions.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from benchmarks.table_summary import learned_from_earlier, report_text, share_summary  # noqa: E402
from tuner.results.schema import BASELINE_FAMILY  # noqa: E402
from tuner.table.workload import Shape  # noqa: E402

BASE = Path(__file__).resolve().parents[1] / "experiments" / "table_bf16.yaml"
MODEL = "Llama-2-7B decoder layers (hidden 4096, intermediate 11008, 32 heads)"
DTYPE = "bfloat16_out_bfloat16"
TIMED_TOKENS = (2048, 128)
"""A prefill and a decode-ish token count: the model is timed end to end at these."""
EXTRA_TOKENS = (1024, 768, 512, 256)
"""Further token counts recorded, so that held-out shapes have neighbours on both sides."""
TOKENS = TIMED_TOKENS + EXTRA_TOKENS
CHAIN_PER_LAYER = 4
"""The products a decoder layer chains from its input to its output: q/k/v, o, gate/up, down."""
TUNING_GOAL_S = 600.0
"""For 20 shapes; a workload of another size is held to the same time a shape."""
T = TypeVar("T")


def timed(stages: dict[str, float], name: str, work: Callable[[], T]) -> T:
    """``work()``, its wall time recorded under ``name`` and said on stderr."""
    print(f"[{name}] ...", file=sys.stderr)
    start = time.perf_counter()
    value = work()
    stages[name] = time.perf_counter() - start
    print(f"[{name}] {stages[name]:.1f} s", file=sys.stderr)
    return value


def record_workload(model: Any, tokens: tuple[int, ...]) -> dict[Shape, int]:
    """The shapes (with calls) of the model's forward at each token count, recorded from PyTorch."""
    import torch

    from tuner.table.recorder import recording

    hidden = model.layers[0].q.weight.shape[0]
    with torch.no_grad(), recording() as record:
        for count in tokens:
            model(torch.randn(count, hidden, device="cuda", dtype=torch.bfloat16))
    if record.skipped:
        print(f"left out products in {record.skipped}", file=sys.stderr)
    return record.calls


def tune(calls: dict[Shape, int], work: Path, trials: int | None) -> list[Any]:
    """The workload written, made into experiments (one per dtype) and tuned; the runs' results."""
    import tuner
    from tuner.table.experiment_file import workload_experiments
    from tuner.table.recorder import Recording

    work.mkdir(parents=True, exist_ok=True)
    Recording(calls).write(work / "workload.json")
    runs = []
    for dtype, text in workload_experiments(list(calls), BASE, "llama2_7b").items():
        path = work / f"llama2_7b_{dtype}.yaml"
        path.write_text(text)
        runs.append(tuner.run(path, out=work / "runs" / path.stem, trials=trials, report=False, summary=False))
    return runs


def build(runs: list[Any], folder: Path) -> Path:
    from tuner.table.artifact import write_table
    from tuner.table.build import build_table, compile_cubins

    table, sources = build_table([run.out for run in runs])
    table, cubins = compile_cubins(table, sources)
    return write_table(folder, table, sources, cubins)


def environment(runs: list[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's recorded environment (with PyTorch's version added) and its summary for the record."""
    import torch

    env = dict(next(iter(runs[0].metadata["environments"].values())))
    env["versions"] = {**env.get("versions", {}), "torch": torch.__version__}
    versions = env["versions"]
    return env, {"gpu": env["device"]["name"], "driver": versions.get("driver"), "cuda": versions.get("cuda"),
                 "torch": torch.__version__, "nvcc": versions.get("nvcc")}


def budget(trials: int | None) -> dict[str, Any]:
    """The per-shape budget of the tuning: evaluations (``trials`` where given, else the base's) and the cap."""
    from tuner.table.experiment_file import read_base

    search = read_base(BASE).get("search") or {}
    return {"trials_per_shape": trials or search.get("trials"), "timeout_s_per_shape": search.get("timeout_s")}


def end_to_end_bound(layers: int, largest_k: int) -> float:
    """The bound on the model output's relative error against float32: each product in the chain from input to
    output (4 a layer) rounds its input and its output to bfloat16 (2·2⁻⁸) and accumulates K terms in float32
    (K·2⁻²⁴), and the errors add along the chain."""
    return layers * CHAIN_PER_LAYER * (2 * 2.0**-8 + largest_k * 2.0**-24)


def measure(model: Any, table_dir: Path, layers: int, stages: dict[str, float]) -> dict[str, Any]:
    """Held-out shares, host overhead, CUDA graph capture and end-to-end times of the built table."""
    from benchmarks import table_measure as m
    from benchmarks.table_model import INTERMEDIATE
    from tuner import load_table

    rows = timed(stages, "held out", lambda: m.held_out(table_dir, DTYPE))
    table = load_table(table_dir)
    bound = end_to_end_bound(layers, INTERMEDIATE)
    return {
        "held_out": {"rows": rows, "summary": share_summary([r["share"] for r in rows])},
        "host_overhead": timed(stages, "host overhead", lambda: m.host_overhead(table, DTYPE)),
        "end_to_end": timed(stages, "end to end", lambda: [m.end_to_end(model, table, count, bound)
                                                             for count in TIMED_TOKENS]),
        # last: a capture that fails may leave the stream unusable for what would follow it
        "cuda_graph": timed(stages, "cuda graph", lambda: m.graph_capture(model, table, TIMED_TOKENS[-1])),
    }


def produce(layers: int, trials: int | None, work: Path, out: Path) -> Path:
    from benchmarks.table_model import make_model

    stages: dict[str, float] = {}
    model = make_model(layers)
    calls = timed(stages, "record", lambda: record_workload(model, TOKENS))
    print(f"workload: {len(calls)} shapes, {sum(calls.values())} calls", file=sys.stderr)
    runs = timed(stages, "tune", lambda: tune(calls, work, trials))
    table_dir = timed(stages, "build", lambda: build(runs, work / "table").parent)
    measured = measure(model, table_dir, layers, stages)
    env, summary = environment(runs)
    evaluations = sum(int((run.df["family"] != BASELINE_FAMILY).sum()) for run in runs)
    record = {
        "model": MODEL, "layers": layers, "dtype": DTYPE, "tokens": list(TOKENS), "environment": summary,
        "workload": [{"M": s.M, "N": s.N, "K": s.K, "dtype": s.dtype, "calls": n} for s, n in calls.items()],
        "stages_s": stages, "table": str(table_dir),
        "tuning": {"shapes": len(calls), "evaluations": evaluations, **budget(trials),
                   "goal_met": stages["tune"] * 20 / len(calls) <= TUNING_GOAL_S},
        **measured,
        "learned": [row for run in runs for row in learned_from_earlier(run.df)],
    }
    return write(out, "table", env, report_text(record), record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=2, help="decoder layers of the model (default 2)")
    parser.add_argument("--trials", type=int, help="evaluations a shape (default: the base experiment's, 50)")
    parser.add_argument("--work", type=Path, default=Path("reports/table_device"),
                        help="folder of the workload, experiments, runs and table (default reports/table_device)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder of table_<gpu>.txt and .json")
    args = parser.parse_args(argv)
    return finish(lambda: produce(args.layers, args.trials, args.work, args.out))


if __name__ == "__main__":
    sys.exit(main())
