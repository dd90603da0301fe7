"""The kernel-table benchmark's figures from its measurements, without a GPU: the held-out shares and their goals,
what each shape learned from the shapes tuned before it (from the run's results table), and the text table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from tuner.measure.measurement import Status
from tuner.results.schema import BASELINE_FAMILY

GOAL_MEAN_SHARE = 0.95
GOAL_WORST_SHARE = 0.90
GOAL_OVERHEAD_US = 10.0
GOAL_END_TO_END = 1.0
EARLY_EVALUATIONS = 20
GOAL_EARLY_SHARE = 0.97


def share_summary(shares: Sequence[float | None]) -> dict[str, Any]:
    """Mean and worst of the scored shares (None: not scored) and whether they meet the held-out goals."""
    scored = [s for s in shares if s is not None]
    if not scored:
        return {"scored": 0, "not_scored": len(shares), "mean": None, "worst": None, "goals_met": False}
    mean, worst = sum(scored) / len(scored), min(scored)
    return {"scored": len(scored), "not_scored": len(shares) - len(scored), "mean": mean, "worst": worst,
            "goals_met": mean >= GOAL_MEAN_SHARE and worst >= GOAL_WORST_SHARE}


def learned_from_earlier(df: pd.DataFrame, early: int = EARLY_EVALUATIONS) -> list[dict[str, Any]]:
    """For each shape after the first of each dtype, in the order the run tuned them: its evaluations (those that
    started from another shape's kernels among them), the share of its best the first ``early`` evaluations reached
    (best time of the run over best time of those), and the evaluations it took to reach GOAL_EARLY_SHARE."""
    tuned = df[df["family"] != BASELINE_FAMILY].sort_values(["wall_offset_s", "trial"], kind="stable")
    rows = []
    for (problem, dtype), group in tuned.groupby(["problem", "dtype"], sort=False):
        ok = group["time_median_ms"].where(group["status"] == Status.OK.value)
        best = ok.min()
        if pd.isna(best):
            rows.append({"problem": problem, "dtype": dtype, "evaluations": len(group), "best_ms": None})
            continue
        so_far = ok.cummin().to_numpy()
        reached = [i + 1 for i, t in enumerate(so_far) if not pd.isna(t) and best / t >= GOAL_EARLY_SHARE]
        first = so_far[min(early, len(group)) - 1]
        rows.append({"problem": problem, "dtype": dtype, "evaluations": len(group),
                     "transferred": int(group.get("transferred_from", pd.Series(dtype=object)).notna().sum()),
                     "best_ms": float(best),
                     "early_share": None if pd.isna(first) else float(best / first),
                     "evaluations_to_goal": reached[0] if reached else None})
    firsts = {row["dtype"]: row["problem"] for row in reversed(rows)}
    return [row for row in rows if firsts[row["dtype"]] != row["problem"]]


def _number(value: float | None, form: str) -> str:
    return "—" if value is None else format(value, form)


def held_out_lines(rows: Sequence[dict[str, Any]], summary: dict[str, Any]) -> list[str]:
    lines = ["Held out: each tuned shape predicted from the others (its own entry left out), against its own entry",
             f"{'shape':<18}{'route':>10}{'own ms':>10}{'predicted ms':>14}{'share':>8}{'torch ms':>10}  predicted"]
    for r in rows:
        lines.append(f"{r['shape']:<18}{r['route']:>10}{_number(r['own_ms'], '.4f'):>10}"
                     f"{_number(r['predicted_ms'], '.4f'):>14}{_number(r['share'], '.3f'):>8}"
                     f"{_number(r['torch_ms'], '.4f'):>10}  {r.get('predicted_config') or '—'}")
    lines.append(f"share own/predicted: mean {_number(summary['mean'], '.3f')}, "
                 f"worst {_number(summary['worst'], '.3f')} ({summary['scored']} scored, {summary['not_scored']} "
                 f"not); goals ≥{GOAL_MEAN_SHARE} mean, "
                 f"≥{GOAL_WORST_SHARE} worst: {'met' if summary['goals_met'] else 'NOT met'}")
    return lines


def learned_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    lines = [f"Learned from earlier shapes: best of the first {EARLY_EVALUATIONS} evaluations as a share of the "
             f"shape's best in the run (goal ≥{GOAL_EARLY_SHARE})",
             f"{'shape':<18}{'evaluations':>12}{'transferred':>12}{'best ms':>10}{'share':>8}{'to goal':>9}"]
    for r in rows:
        lines.append(f"{r['problem']:<18}{r['evaluations']:>12}{r.get('transferred', 0):>12}"
                     f"{_number(r['best_ms'], '.4f'):>10}{_number(r.get('early_share'), '.3f'):>8}"
                     f"{r.get('evaluations_to_goal') or '—':>9}")
    shares = [r["early_share"] for r in rows if r.get("early_share") is not None]
    if shares:
        lines.append(f"mean {sum(shares) / len(shares):.3f}, worst {min(shares):.3f}; shapes at the goal: "
                     f"{sum(s >= GOAL_EARLY_SHARE for s in shares)} of {len(rows)}")
    return lines


def report_text(record: dict[str, Any]) -> str:
    """The human table of a benchmark record (the .json's content)."""
    env, stages = record["environment"], record["stages_s"]
    tuning = record["tuning"]
    lines = [f"Kernel table of {record['model']} on {env['gpu']} (driver {env['driver']}, CUDA {env['cuda']}, "
             f"PyTorch {env['torch']}); {record['dtype']}",
             f"workload: {len(record['workload'])} shapes recorded from the model's forward at tokens "
             f"{', '.join(map(str, record['tokens']))}",
             "stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()),
             f"tuning: {tuning['shapes']} shapes in {stages['tune']:.0f} s ({tuning['evaluations']} evaluations, "
             f"budget {tuning['trials_per_shape']} a shape, ≤{tuning['timeout_s_per_shape']} s a shape); goal ≤600 s "
             f"for 20 shapes: {'met' if tuning['goal_met'] else 'NOT met'}", ""]
    lines += held_out_lines(record["held_out"]["rows"], record["held_out"]["summary"]) + [""]
    overhead = record["host_overhead"]
    lines += [f"Host overhead at {overhead['shape']} ({overhead['calls']} calls, route {overhead['route']}): "
              f"table.matmul {overhead['table_us']:.2f} µs a call, torch.matmul {overhead['torch_us']:.2f}; "
              f"difference {overhead['difference_us']:.2f} µs (goal ≤{GOAL_OVERHEAD_US}: "
              f"{'met' if overhead['difference_us'] <= GOAL_OVERHEAD_US else 'NOT met'})"]
    graph = record["cuda_graph"]
    lines.append("CUDA graph: " + (f"captured and replayed, max |replay − eager| {graph['max_abs_diff_vs_eager']:g}"
                                   if graph["captured"] else f"NOT captured ({graph['error']})"))
    lines.append("")
    for e in record["end_to_end"]:
        lines.append(f"End to end at {e['tokens']} tokens: torch.matmul {e['torch_ms']:.3f} ms, table.matmul "
                     f"{e['table_ms']:.3f} ms, ratio torch/table {e['ratio']:.3f} (goal ≥{GOAL_END_TO_END}); "
                     f"relative error against float32: table {e['table_error']:.2e}, torch {e['torch_error']:.2e}, "
                     f"bound {e['bound']:.2e} ({'within' if e['within_bound'] else 'OUTSIDE'})")
    return "\n".join(lines + [""] + learned_lines(record["learned"]))
