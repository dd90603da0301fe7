"""Whether the ranking of a run's fastest configurations holds under sustained load: the tuner's timing (the median
of separate launches, L2 flushed before each: a burst) against the energy window's time per launch (back to back,
hot, after 0.3 s at the clocks the board's power limit settles to), over the run's top configurations by burst time.

    python -m tuner run benchmarks/sustained.yaml --out reports/sustained
    python benchmarks/sustained.py reports/sustained [--top 20] [--out DIR]

Reports each configuration's two times, its ranks and the SM clock during its window, Spearman's ρ and Kendall's τ
between the two rankings, and whether the fastest changes. Writes ``DIR/sustained_<gpu>.txt`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.results import table as results  # noqa: E402
from tuner.results.objectives import SUSTAINED_COLUMN  # noqa: E402
from tuner.tuning.progress import config_label  # noqa: E402

TOP = 20


def ranked(df: pd.DataFrame, top: int) -> pd.DataFrame:
    """The ``top`` fastest ok rows by burst time that have a sustained time, with both ranks (1: fastest)."""
    tuned = df[(df["family"] != results.BASELINE_FAMILY) & (df["status"] == "ok")].copy()
    tuned[SUSTAINED_COLUMN] = pd.to_numeric(tuned.get(SUSTAINED_COLUMN), errors="coerce")
    tuned = tuned[tuned[SUSTAINED_COLUMN] > 0].nsmallest(top, "time_median_ms")
    if len(tuned) < 3:
        raise TunerError(f"{len(tuned)} ok rows with a sustained time; record the run with measure.energy on "
                         f"(benchmarks/sustained.yaml does)")
    tuned["burst_rank"] = tuned["time_median_ms"].rank(method="min").astype(int)
    tuned["sustained_rank"] = tuned[SUSTAINED_COLUMN].rank(method="min").astype(int)
    return tuned


def agreement(rows: pd.DataFrame) -> dict[str, Any]:
    """Rank correlations of the two times, and what sustained load does to the fastest and to the times."""
    burst, sustained = rows["time_median_ms"], rows[SUSTAINED_COLUMN]
    fastest_burst, fastest_sustained = burst.idxmin(), sustained.idxmin()
    return {"configurations": len(rows), "spearman": float(burst.corr(sustained, method="spearman")),
            "kendall": float(burst.corr(sustained, method="kendall")),
            "fastest_changes": bool(fastest_burst != fastest_sustained),
            "burst_fastest_sustained_rank": int(rows.loc[fastest_burst, "sustained_rank"]),
            "sustained_over_burst_median": float((sustained / burst).median())}


def report(run_dir: Path, top: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    df, metadata = results.load(run_dir)
    rows = ranked(df, top)
    summary = agreement(rows)
    lines = [f"Burst against sustained timing, {run_dir} (top {len(rows)} by burst time)", "",
             f"{'configuration':<112}{'burst ms':>10}{'sust. ms':>10}{'rank b':>8}{'rank s':>8}{'SM MHz':>8}"]
    for _, row in rows.sort_values("burst_rank").iterrows():
        clock = row.get("energy_sm_clock_mhz")
        lines.append(f"{config_label(results.config_of_row(row))[:111]:<112}{row['time_median_ms']:>10.4f}"
                     f"{row[SUSTAINED_COLUMN]:>10.4f}{row['burst_rank']:>8}{row['sustained_rank']:>8}"
                     f"{(f'{clock:.0f}' if pd.notna(clock) else '—'):>8}")
    lines += ["", f"Spearman ρ {summary['spearman']:.3f}, Kendall τ {summary['kendall']:.3f}; the burst's fastest is "
                  f"number {summary['burst_fastest_sustained_rank']} sustained; sustained/burst time, median "
                  f"{summary['sustained_over_burst_median']:.3f}",
              "burst: the tuner's median of separate launches, L2 flushed before each; sustained: the energy "
              "window's time per launch (back to back, hot)"]
    record = {"run": str(run_dir), "summary": summary, "rows": [
        {"config": results.config_of_row(r).key, "burst_ms": r["time_median_ms"], "sustained_ms": r[SUSTAINED_COLUMN],
         "burst_rank": int(r["burst_rank"]), "sustained_rank": int(r["sustained_rank"]),
         "sm_clock_mhz": r.get("energy_sm_clock_mhz")} for _, r in rows.iterrows()]}
    environments = metadata.get("environments", {}) if isinstance(metadata, dict) else {}
    env = next(iter(environments.values()), {}) if isinstance(environments, dict) else {}
    return "\n".join(lines), record, env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--top", type=int, default=TOP)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    def produce() -> Path:
        text, record, env = report(args.run_dir, args.top)
        print(text)
        if not env.get("device", {}).get("name"):
            raise TunerError(f"{args.run_dir}: the run records no device to name the results after")
        return write(args.out, "sustained", env, text, record)

    return finish(produce)


if __name__ == "__main__":
    sys.exit(main())
