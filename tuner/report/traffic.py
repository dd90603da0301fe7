"""What the report says of the counted traffic: the model against the measured bytes at each level, per family;
where the seeds' bytes per FLOP land on the GPU; and how the counters were read, or why they were not."""

from __future__ import annotations

from typing import Any

import pandas as pd

from tuner.config import DTYPE_BYTES
from tuner.counters.conditions import cache_words, counted_by
from tuner.report.formatting import finite, number, params_text, rate_unit
from tuner.report.groups import Group, sort_value
from tuner.report.hierarchical import LEVEL_NAMES, LEVELS, counted, counted_performance, level_roofs
from tuner.report.run_folder import Run
from tuner.report.tables import Table

SEED_FAMILY = "naive"
COMPARED = 4
"""Other counted kernels the text compares with the naive one, at most."""


def _gigabytes(value: Any, ratio: Any = None) -> str:
    v = finite(value)
    if v is None:
        return "—"
    r = finite(ratio)
    return f"{v / 1e9:,.3g}" + (f" ({r:.3g}×)" if r is not None else "")


def traffic_tables(run: Run) -> list[tuple[str, Table]]:
    """Per family: each counted configuration's modelled bytes against the bytes counted at each level."""
    rows = counted(run.ok)
    tables = []
    for family, members in rows.groupby("family", sort=True):
        table = Table(["problem", "dtype", "configuration", "model GB", "requested GB", "L1 GB", "L2 GB", "DRAM GB",
                       "FLOP/B L1 · L2 · DRAM", "model FLOP/B", "FLOPs counted / 2·M·N·K"],
                      numeric=set(range(3, 11)),
                      caption="GB = 10⁹ bytes; in brackets, measured / model, the model being the family's no-cache "
                              "global-memory traffic (every operand read counted); requested = what the threads' "
                              "global loads and stores asked for")
        ordered = members.assign(_size=members["M"] * members["N"] * members["K"].fillna(1))
        ordered = ordered.sort_values(["_size", "dtype", "performance"], ascending=[False, True, False])
        for _, row in ordered.drop_duplicates("config_key").iterrows():
            table.rows.append([
                row["problem"], row["dtype"], params_text(row["params"]), _gigabytes(row.get("bytes_model")),
                _gigabytes(row.get("l1_requested_bytes"), row.get("requested_vs_model")),
                _gigabytes(row.get("l1_bytes"), row.get("l1_vs_model")),
                _gigabytes(row.get("l2_bytes"), row.get("l2_vs_model")),
                _gigabytes(row.get("dram_bytes"), row.get("dram_vs_model")),
                " · ".join(number(row.get(f"intensity_{level}")) for level in reversed(LEVELS)),
                number(row.get("intensity")), number(row.get("flops_vs_model")),
            ])
        tables.append((str(family), table))
    return tables


def _per_flop(row: pd.Series, column: str) -> float | None:
    value, flops = finite(row.get(column)), finite(row.get("flops_counted"))
    return value / flops if value is not None and flops else None


def _bytes_per_flop(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3g}" if value >= 0.01 else f"{value:.2g}"


def _tightest(run: Run, row: pd.Series, performance: float) -> str:
    roofs = level_roofs(run, row.to_frame().T)
    bounds = {level: roofs[level] * float(row[f"intensity_{level}"]) for level in LEVELS if level in roofs}
    if not bounds:
        return ""
    level = min(bounds, key=lambda name: bounds[name])
    return (f" Its tightest measured roof is the {LEVEL_NAMES[level]}'s: {number(roofs[level])} GB/s × "
            f"{number(row[f'intensity_{level}'])} FLOP/B = {number(bounds[level])} {rate_unit(str(row['dtype']))}, "
            f"of which it reached {performance / bounds[level]:.0%}.")


def _levels_sentence(row: pd.Series) -> str:
    requested = _per_flop(row, "l1_requested_bytes")
    asked = f"Its threads asked for {_bytes_per_flop(requested)} B/FLOP; " if requested is not None else ""
    return (f"{asked}the L1 looked up {_bytes_per_flop(_per_flop(row, 'l1_bytes'))} B/FLOP in 32-byte sectors "
            f"(loads of one warp that fall in one sector count once), the L2 served "
            f"{_bytes_per_flop(_per_flop(row, 'l2_bytes'))} B/FLOP and DRAM moved "
            f"{_bytes_per_flop(_per_flop(row, 'dram_bytes'))} B/FLOP.")


def _comparisons(naive: pd.Series, others: pd.DataFrame) -> str:
    parts = []
    for _, row in others.iterrows():
        naive_requested, requested = _per_flop(naive, "l1_requested_bytes"), _per_flop(row, "l1_requested_bytes")
        naive_l1, l1 = _per_flop(naive, "l1_bytes"), _per_flop(row, "l1_bytes")
        model = finite(naive.get("bytes_model")) and finite(row.get("bytes_model"))
        modelled = (f" (the model: {float(naive['bytes_model']) / float(row['bytes_model']):.3g}× less)"
                    if model else "")
        cut = (f"{naive_requested / requested:.3g}× less requested" if naive_requested and requested else "")
        sectors = f"{naive_l1 / l1:.3g}× fewer L1 bytes" if naive_l1 and l1 else ""
        parts.append(f"{row['family']} {params_text(row['params'])}: {', '.join(p for p in (cut, sectors) if p)}"
                     f"{modelled}")
    return ("Against the naive kernel, per FLOP: " + "; ".join(parts) + ".") if parts else ""


def sort_key(group: Group) -> tuple:
    return (group.family, [sort_value(v) for _, v in group.key])


def landing_text(run: Run) -> list[str]:
    """Where the seeds' bytes per FLOP (the naive kernel's operand reads) land on this GPU, from the counters of
    the largest problem with a counted naive kernel, per dtype."""
    rows = counted(run.ok)
    if rows.empty:
        return []
    paragraphs = []
    for dtype in sorted(rows["dtype"].astype(str).unique()):
        of_dtype = rows[rows["dtype"] == dtype]
        naive = of_dtype[of_dtype["family"] == SEED_FAMILY]
        if naive.empty:
            best = of_dtype.loc[of_dtype["performance"].idxmax()]
            paragraphs.append(f"No naive kernel was counted in {dtype}, so the seeds' bytes per FLOP are not placed "
                              f"on this GPU. The fastest counted kernel, {best['family']} "
                              f"{params_text(best['params'])} ({best['problem']}): " + _levels_sentence(best))
            continue
        sizes = naive["M"] * naive["N"] * naive["K"].fillna(1)
        problem = naive.loc[sizes.idxmax(), "problem"]
        at = naive[naive["problem"] == problem]
        row = at.loc[at["performance"].idxmax()]
        performance = float(counted_performance(row.to_frame().T).iloc[0])
        model = _per_flop(row, "bytes_model") if finite(row.get("bytes_model")) else None
        element = DTYPE_BYTES.get(dtype)
        text = (f"The seeds' argument, measured on {run.device_name(at)} ({dtype}, {problem}, {SEED_FAMILY} "
                f"{params_text(row['params'])}): the naive kernel reads two operands per multiply-add, "
                f"{_bytes_per_flop(model)} B per FLOP{f' ({element}-byte elements)' if element else ''}. "
                + _levels_sentence(row))
        dram = level_roofs(run, at).get("dram")
        if dram is not None and model:
            unit = rate_unit(dtype)
            text += (f" At {_bytes_per_flop(model)} B/FLOP the measured DRAM bandwidth ({number(dram)} GB/s) would "
                     f"cap it at {number(dram / model)} {unit}; it ran at {number(performance)} {unit}, because DRAM "
                     f"saw {finite(row.get('dram_vs_model')) or 0:.2%} of the modelled traffic.")
        text += _tightest(run, row, performance)
        others = of_dtype[(of_dtype["problem"] == problem) & (of_dtype["family"] != SEED_FAMILY)]
        others = others.sort_values("performance", ascending=False).drop_duplicates("group").head(COMPARED)
        others = others.iloc[sorted(range(len(others)), key=lambda i: sort_key(others["group"].iloc[i]))]
        paragraphs.append(" ".join(p for p in (text, _comparisons(row, others)) if p))
    return paragraphs


def counters_notes(run: Run) -> list[str]:
    """How the counters were read (the tool and its version, clock and cache control, replay passes), or why none
    were, and what the last run could not count."""
    notes = []
    found = run.metadata.get("counters")
    conditions: dict[str, Any] = found if isinstance(found, dict) else {}
    if conditions.get("configurations"):
        passes = conditions.get("replay_passes") or []
        missing = conditions.get("metrics_missing") or []
        tools = [counted_by(str(v)) for v in conditions.get("ncu_versions") or []]
        caches = [str(c) for c in conditions.get("cache_control") or []]
        notes.append(
            f"Counted by {', '.join(tools) or '?'} on "
            f"{', '.join(map(str, conditions.get('gpus') or ['?']))}: {conditions['configurations']} configuration(s), "
            f"one launch each on the tuner's inputs, its output verified; clock control "
            f"{'/'.join(conditions.get('clock_control') or ['?'])} (the clocks as found, never locked), cache control "
            f"{'/'.join(caches) or '?'} ({'; '.join(cache_words(c) for c in caches) or '?'})"
            + (f", {'/'.join(str(p) for p in passes)} replay passes per kernel" if passes else "")
            + (f"; metrics the GPU lacks: {', '.join(missing)}" if missing else "") + ".")
    runs = [r for r in run.metadata.get("runs") or [] if isinstance(r, dict) and isinstance(r.get("counters"), dict)]
    last = runs[-1]["counters"] if runs else None
    if last and last.get("text") and (last.get("reasons") or not conditions.get("configurations")):
        notes.append(f"Counters of the last run: {last['text']}")
    if not conditions.get("configurations") and not notes:
        notes.append("No configuration of this run was counted: python -m tuner profile RUN_FOLDER reads the "
                     "counters on a GPU with Nsight Compute.")
    flops_how = sorted(set(counted(run.ok).get("flops_counted_how", pd.Series(dtype=str)).dropna().astype(str)))
    if flops_how:
        notes.append("FLOPs: " + "; ".join(flops_how) + ".")
    return notes
