"""Uniform random search on the recorded GEMM spaces under both conventions, next to the published figures.

    python benchmarks/random_search_recorded.py [--out DIR] [--runs N] [--seed S]

For each recording in experiments/data/recorded and each convention (``valid``: every evaluation a recorded
configuration; ``product``: a draw from all combinations, a missing one counting as a failed evaluation), the
mean fraction of the optimum after 25 … 1600 evaluations: over N runs (default 50, as published, with their
standard deviation), over 2,000 runs, and its exact expectation. The published column is Schoonhoven et al.
(IEEE TEVC 2022), GPU_benchmarking_paper ``experimental_data/deterministic/GEMM/
RandomSampling_GEMM_A100_runs=50.csv``. Prints the table and writes it, with its numbers, to
``DIR/random_search_recorded.txt`` and ``.json`` (DIR defaults to benchmarks/results). No GPU is needed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT  # noqa: E402
from tuner.compare.harness import Convention  # noqa: E402
from tuner.compare.random_search import expected_fraction_of_optimum, random_search_runs  # noqa: E402
from tuner.compare.scoring import at_budgets, fraction_of_optimum, summarise  # noqa: E402
from tuner.recorded import load_recorded  # noqa: E402

RECORDED = Path(__file__).resolve().parents[1] / "experiments" / "data" / "recorded"
SPACES = ("gemm_A100", "gemm_RTX_2080_Ti")
BUDGETS = (25, 50, 100, 200, 400, 800, 1600)
MANY_RUNS = 2000
PUBLISHED = {  # mean fraction of the optimum of random sampling, 50 runs
    ("gemm_A100", Convention.PRODUCT): (0.7804, 0.8225, 0.8802, 0.9189, 0.9412, 0.9631, 0.9804),
}


def rows(runs: int, seed: int) -> list[dict[str, Any]]:
    out = []
    for name in SPACES:
        space = load_recorded(RECORDED / f"{name}.json.gz")
        for convention in Convention:
            few = summarise(fraction_of_optimum(
                at_budgets(random_search_runs(space, max(BUDGETS), convention, runs, seed)[0], BUDGETS),
                space.optimum_ms))
            many = fraction_of_optimum(at_budgets(
                random_search_runs(space, max(BUDGETS), convention, MANY_RUNS, seed + 1)[0], BUDGETS),
                space.optimum_ms).mean(axis=0)
            exact = expected_fraction_of_optimum(space, list(BUDGETS), convention)
            published = PUBLISHED.get((name, convention), (None,) * len(BUDGETS))
            for i, budget in enumerate(BUDGETS):
                out.append({"space": name, "device": space.device, "convention": convention.value,
                            "budget": budget, "mean": float(few.mean[i]), "std": float(few.std[i]),
                            "mean_many": float(many[i]), "exact": float(exact[i]), "published": published[i]})
    return out


def table(found: list[dict[str, Any]], runs: int) -> str:
    lines = [f"{'space':<18}{'convention':<12}{'budget':>7}{f'{runs} runs':>16}{f'{MANY_RUNS} runs':>12}"
             f"{'exact':>8}{'published':>11}"]
    for r in found:
        published = "" if r["published"] is None else f"{r['published']:.3f}"
        lines.append(f"{r['space']:<18}{r['convention']:<12}{r['budget']:>7}{r['mean']:>9.3f} ± {r['std']:.3f}"
                     f"{r['mean_many']:>12.3f}{r['exact']:>8.3f}{published:>11}".rstrip())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=2022)
    args = parser.parse_args(argv)
    found = rows(args.runs, args.seed)
    text = ("Uniform random search without replacement: mean fraction of the optimum after b evaluations\n"
            + table(found, args.runs))
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / "random_search_recorded"
    stem.with_suffix(".txt").write_text(text + "\n")
    record = {"runs": args.runs, "many_runs": MANY_RUNS, "seed": args.seed, "rows": found,
              "published_source": "github.com/schoonhovenrichard/GPU_benchmarking_paper, experimental_data/"
                                  "deterministic/GEMM/RandomSampling_GEMM_A100_runs=50.csv"}
    stem.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {stem}.txt and {stem}.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
