"""The report's tables of results: best and top configurations, outcomes and failures, predicted vs achieved."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from tuner.kernels.model import cost
from tuner.report.bounds import class_bounds, fraction
from tuner.report.formatting import fixed, integer, number, params_text, percent, performance_unit
from tuner.report.run_folder import Run
from tuner.results import table as results
from tuner.results.objectives import OBJECTIVES, TIME
from tuner.results.peak_source import environment_of, short_of_tensor_rate

TOP = 10
STATUSES = ("ok", "invalid", "compile_error", "wrong", "crashed")
REASON_CHARS = 400


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    numeric: set[int] = field(default_factory=set)
    """Indices of the right-aligned (numeric) columns."""
    caption: str = ""


def _text(value: object) -> str:
    return "—" if value is None or (isinstance(value, float) and value != value) or value is pd.NA else str(value)


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:,.0f} %"


FLAGS = {
    "*": "* measured while other processes used the device (under load)",
    "!": "! above the measured compute ceiling, which no kernel can be: that ceiling was measured too low",
    "?": "? of ceilings measured under load",
    "^": "^ of the tensor cores' mma.sync rate, below what this GPU's tensor cores reach through wgmma, which its "
         "ceilings did not measure: a share above 100% is no error",
}


def _loaded(row: pd.Series | None) -> bool:
    value = row.get("under_load") if row is not None else None
    return value is not None and not pd.isna(value) and bool(value)


def _compute_share(run: Run, row: pd.Series) -> str:
    """The row's share of the measured compute ceiling, flagged ! above 100%, ^ of the tensor cores' mma.sync rate
    where wgmma reaches more, and ? of ceilings under load."""
    share = row.get("pct_flops_ceiling")
    above = share is not None and not pd.isna(share) and float(share) > 100
    short = short_of_tensor_rate(environment_of(run.metadata, row.get("metadata_id")), str(row.get("dtype")))
    return percent(share) + ("^" if short else "!" if above else "") + (
        "?" if results.ceilings_under_load(run.metadata, row.get("metadata_id")) else "")


def leading(table: Table, identity: int, key: list[str]) -> Table:
    """The table with its ``key`` columns (ratios, rates) right after its first ``identity`` columns, so that a
    wide table shows them before any horizontal scroll."""
    named = [table.columns.index(name) for name in key if name in table.columns]
    order = [*range(identity), *named, *(i for i in range(identity, len(table.columns)) if i not in named)]
    return Table([table.columns[i] for i in order], [[row[i] for i in order] for row in table.rows],
                 {order.index(i) for i in table.numeric}, table.caption)


def _flag_caption(table: Table, caption: str) -> str:
    """The caption, with the meaning of each flag the table's cells carry."""
    used = [note for mark, note in FLAGS.items() if any(mark in cell for row in table.rows for cell in row[3:])]
    return "; ".join([caption, *used])


def best_per_problem(run: Run) -> Table:
    """The best configuration of each problem and dtype; of each GPU model too where the rows come from several.
    Numbers measured under load are flagged *, shares above the ceiling !, shares of ceilings under load ?."""
    by_gpu = len(run.gpu_names) > 1
    objective = run.objective[0]
    table = Table(["problem", "dtype", *(["GPU"] if by_gpu else []), "best configuration", "performance",
                   "% measured compute", f"{run.library} GFLOP/s", f"best / {run.library}"])
    first_number = 4 if by_gpu else 3
    table.numeric = set(range(first_number, first_number + 4))
    for dtype, problem in run.slices():
        for gpu in run.gpu_names if by_gpu else [None]:
            ok = run.ok[(run.ok["dtype"] == dtype) & (run.ok["problem"] == problem)]
            base = run.baselines[(run.baselines["dtype"] == dtype) & (run.baselines["problem"] == problem)]
            if gpu is not None:
                ok, base = ok[ok["gpu_name"] == gpu], base[base["gpu_name"] == gpu]
            table.rows.append([problem, dtype, *([gpu] if gpu is not None else []),
                               *_best_cells(run, ok, base, dtype, objective)])
    caption = "performance: GFLOP/s, or GB/s (one read and one write of each element over the median time) for a " \
              "kernel without arithmetic" + ("" if objective == TIME else f"; best: {OBJECTIVES[objective].meaning}")
    table.caption = _flag_caption(table, caption)
    return table


def _best_cells(run: Run, ok: pd.DataFrame, base: pd.DataFrame, dtype: str, objective: str = TIME) -> list[str]:
    fastest = base.loc[base["gflops"].idxmax()] if not base.empty else None
    cublas = float(fastest["gflops"]) if fastest is not None else None
    library = number(cublas) + ("*" if _loaded(fastest) else "")
    if ok.empty:
        return ["no successful evaluation", "—", "—", library, "—"]
    score = OBJECTIVES[objective].score(ok, ok["performance"])
    best = ok.loc[score.idxmax() if score.notna().any() else ok["performance"].idxmax()]
    unit = performance_unit(ok, dtype)
    either = "*" if _loaded(best) or _loaded(fastest) else ""
    return [f"{best['family']} {params_text(best['params'])}",
            f"{number(best['performance'])} {unit}" + ("*" if _loaded(best) else ""),
            _compute_share(run, best), library,
            _ratio(fraction(float(best["gflops"]), cublas) if cublas else None) + (either if cublas else "")]


def intensities_text(row: pd.Series) -> str:
    """The row's global-memory intensity and its family's further analytical ratios (e.g. a register tile's
    shared-memory intensity), in FLOP/B."""
    parts = [f"global {number(row.get('intensity'))}"] if pd.notna(row.get("intensity")) else []
    try:
        extra = cost(results.config_of_row(row)).extra_intensities
    except KeyError:  # a family this checkout no longer has, or its parameters changed
        extra = {}
    parts += [f"{name.removesuffix('_intensity')} {number(value)}" for name, value in extra.items()]
    return " · ".join(parts) or "—"


def top_configurations(run: Run, count: int = TOP) -> list[tuple[str, Table]]:
    """(heading, table) per problem and dtype: the fastest configurations, then the cuBLAS baseline."""
    tables = []
    columns = ["#", "family", "parameters", "block", "grid", "intensity FLOP/B", "median ms", "CV", "GFLOP/s",
               "GB/s (model)", "GB/s (effective)", "% compute peak", "% bandwidth peak", "compile s", "registers",
               "spill B"]
    for dtype, problem in run.slices():
        ok = run.ok[(run.ok["dtype"] == dtype) & (run.ok["problem"] == problem)]
        fastest = ok.sort_values("performance", ascending=False).drop_duplicates("config_key")
        table = Table(columns, numeric={0, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
                      caption=f"the {min(count, len(fastest))} fastest of {len(fastest)} configurations that ran "
                              f"successfully ({len(ok)} successful evaluations; a configuration evaluated more "
                              f"than once is listed with its fastest)")
        for rank, (_, row) in enumerate(fastest.head(count).iterrows(), start=1):
            table.rows.append([
                str(rank), row["family"], params_text(row["params"]), _text(row.get("block")), _text(row.get("grid")),
                intensities_text(row), fixed(row.get("time_median_ms"), 4), percent(row.get("time_cv"), 2, scale=100),
                number(row["gflops"]) + ("*" if _loaded(row) else ""), number(row.get("bandwidth_gbs")),
                number(row.get("effective_bandwidth_gbs")), _compute_share(run, row),
                percent(row.get("pct_bandwidth_ceiling")),
                fixed(row.get("compile_time_s"), 2),
                integer(row.get("registers")), integer(row.get("spill_bytes")),
            ])
        base = run.baselines[(run.baselines["dtype"] == dtype) & (run.baselines["problem"] == problem)]
        for _, row in base.iterrows():
            table.rows.append([
                "—", f"{run.library} (baseline)", "—", "—", "—", intensities_text(row),
                fixed(row.get("time_median_ms"), 4),
                percent(row.get("time_cv"), 2, scale=100), number(row["gflops"]) + ("*" if _loaded(row) else ""),
                number(row.get("bandwidth_gbs")), number(row.get("effective_bandwidth_gbs")),
                _compute_share(run, row),
                percent(row.get("pct_bandwidth_ceiling")), "—", "—", "—",
            ])
        table.caption = _flag_caption(table, table.caption)
        tables.append((f"{problem}, {dtype}", leading(table, 3, ["GFLOP/s", "% compute peak", "% bandwidth peak",
                                                                 "median ms"])))
    return tables


def status_counts(run: Run) -> Table:
    seen = [s for s in STATUSES if (run.kernels["status"] == s).any()]
    seen += sorted(set(run.kernels["status"].astype(str)) - set(STATUSES))
    table = Table(["problem", "dtype", *seen, "total"], numeric=set(range(2, len(seen) + 3)))
    for dtype, problem in run.slices():
        rows = run.kernels[(run.kernels["dtype"] == dtype) & (run.kernels["problem"] == problem)]
        counts = rows["status"].astype(str).value_counts()
        table.rows.append([problem, dtype, *(str(int(counts.get(s, 0))) for s in seen), str(len(rows))])
    return table


def failure_reasons(run: Run) -> Table:
    """Each distinct reason of a failed evaluation, how often it occurred and a few configurations it hit."""
    failed = run.kernels[run.kernels["status"] != "ok"].copy()
    table = Table(["status", "family", "reason", "count", "for example"], numeric={3})
    if failed.empty:
        return table
    failed["reason_text"] = failed["reason"].map(_text).str.strip().str.slice(0, REASON_CHARS)
    for (status, family, reason), rows in failed.groupby(["status", "family", "reason_text"], sort=True):
        examples = ", ".join(dict.fromkeys(str(k) for k in rows["config_key"].head(3)))
        table.rows.append([str(status), str(family), reason or "—", str(len(rows)), examples])
    return table


def predicted_vs_achieved(run: Run) -> Table:
    """Each class's analytical bound on every machine model and device roofline, and the best it achieved."""
    models = [m.name for m in run.machine_models]
    device = sorted({kind for b in class_bounds(run) for kind, _ in b.device_bounds}, key=["measured",
                                                                                           "theoretical"].index)
    columns = ["problem", "dtype", "class", "intensity FLOP/B", *(f"{m} bound" for m in models),
               *(f"device {k} bound" for k in device), "best achieved", *(f"achieved / {m}" for m in models),
               *(f"achieved / device {k}" for k in device), "ok / evaluated"]
    table = Table(columns, numeric=set(range(3, len(columns))))
    for b in class_bounds(run):
        model_bounds, device_bounds = dict(b.model_bounds), dict(b.device_bounds)
        table.rows.append([
            b.problem, b.dtype, b.group.label, f"{b.intensity:.3g}",
            *(number(model_bounds.get(m)) for m in models), *(number(device_bounds.get(k)) for k in device),
            number(b.best_gflops),
            *(_ratio(fraction(b.best_gflops, model_bounds[m])) if m in model_bounds else "—" for m in models),
            *(_ratio(fraction(b.best_gflops, device_bounds[k])) if k in device_bounds else "—" for k in device),
            f"{b.ok} / {b.evaluations}",
        ])
    return leading(table, 3, ["best achieved", *(c for c in columns if c.startswith("achieved / "))])
