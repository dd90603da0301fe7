"""What the report says about the run itself: the experiment, the runs, the device and its ceilings."""

from __future__ import annotations

from typing import Any

import yaml

from tuner.config import PLAIN_DTYPES
from tuner.measure.machine_load import Load
from tuner.peaks import ALL_TENSOR_DTYPES, LEVEL_LABELS
from tuner.peaks import key as peak_key
from tuner.report.formatting import fixed, number, percent
from tuner.report.run_folder import Run
from tuner.report.tables import Table
from tuner.results import table as results

PEAK_KEYS = (*(peak_key(d) for d in PLAIN_DTYPES), *(peak_key(d, "tensor") for d in ALL_TENSOR_DTYPES), "bandwidth_gbs",
             *LEVEL_LABELS)


def _description(run: Run) -> str:
    source = (run.metadata.get("experiment") or {}).get("source")
    if not isinstance(source, str):
        return ""
    try:
        document = yaml.safe_load(source)
    except yaml.YAMLError:
        return ""
    return str(document.get("description", "")) if isinstance(document, dict) else ""


def summary_items(run: Run) -> list[tuple[str, str]]:
    experiment = run.metadata.get("experiment") or {}
    kernels = run.kernels
    items = [("experiment", run.experiment_name)]
    if description := _description(run):
        items.append(("description", description))
    if experiment.get("path"):
        items.append(("experiment file", str(experiment["path"])))
    items += [
        ("run folder", str(run.path)),
        ("evaluations", f"{len(kernels)} of tuned kernels ({kernels['config_key'].nunique()} distinct "
                        f"configurations), {len(run.baselines)} {run.library} baseline(s)"),
        ("problems", ", ".join(dict.fromkeys(p for _, p in run.slices()))),
        ("kernel families", ", ".join(sorted(kernels["family"].astype(str).unique()))),
        ("dtypes", ", ".join(sorted(kernels["dtype"].astype(str).unique()))),
    ]
    searched = kernels[kernels["trial"].fillna(-1) >= 0] if "trial" in kernels else kernels
    if "strategy" in searched and not searched.empty:
        items.append(("strategies", ", ".join(sorted(searched["strategy"].astype(str).unique()))))
    if "study" in searched and not searched.empty:
        items.append(("studies", str(searched["study"].nunique())))
    if recordings := replayed_recordings(run):
        items.append(("replayed from", ", ".join(recordings) + " (recorded measurements: the device and "
                      "environment shown are the recording's)"))
    return items


def _runs(run: Run) -> list[dict[str, Any]]:
    return [entry for entry in run.metadata.get("runs") or [] if isinstance(entry, dict)]


def replayed_recordings(run: Run) -> list[str]:
    """The recordings that runs into this folder replayed (``a recording`` where a run names none)."""
    return list(dict.fromkeys(str(entry.get("recording") or "a recording") for entry in _runs(run)
                              if entry.get("backend") == "replay"))


def environment_note(run: Run) -> str:
    """Whose environment the report shows, where a run replayed recorded measurements ("" where none did)."""
    recordings = replayed_recordings(run)
    if not recordings:
        return ""
    named = ", ".join(recordings)
    if _only_replays(run):
        return (f"Every run into this folder replayed recorded measurements ({named}): the environments below "
                f"(device, versions, git commit, settings, ceilings) are the recording's, where the measurements "
                f"were taken, not the machine's that replayed them.")
    return (f"Some runs into this folder replayed recorded measurements ({named}): the environments of their rows "
            f"are the recording's, where the measurements were taken, not the machine's that replayed them.")


def _only_replays(run: Run) -> bool:
    """Did every run into this folder replay a recording (so that every environment is a recording's)?"""
    runs = _runs(run)
    return bool(runs) and all(entry.get("backend") == "replay" for entry in runs)


def environment_heading(run: Run, env_id: str) -> str:
    return f"Environment {env_id} (of the recording)" if _only_replays(run) else f"Environment {env_id}"


def runs_table(run: Run) -> Table:
    """Each run (and resume) of the experiment into this folder, as metadata.json lists them."""
    table = Table(["started (UTC)", "finished (UTC)", "backend", "strategy", "trials", "evaluations", "wall s",
                   f"{results.measuring_device(run.metadata)} busy", "interrupted"], numeric={4, 5, 6, 7})
    for entry in _runs(run):
        ended = "yes" if entry.get("interrupted") else "no"
        if entry.get("error"):
            ended = f"error: {entry['error']}"
        table.rows.append([str(entry.get("started_utc") or "—"), str(entry.get("finished_utc") or "—"),
                           _backend(entry), str(entry.get("strategy") or "—"),
                           str(entry.get("trials") or "—"), str(entry.get("evaluations") or "—"),
                           fixed(entry.get("wall_s"), 1), percent(entry.get("gpu_busy_fraction"), 0, scale=100),
                           ended])
    return table


def _backend(entry: dict[str, Any]) -> str:
    backend = str(entry.get("backend") or "—")
    return f"{backend} of {entry['recording']}" if backend == "replay" and entry.get("recording") else backend


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict):
        items = []
        for key, inner in value.items():
            items += _flatten(inner, f"{prefix}.{key}" if prefix else str(key))
        return items
    if isinstance(value, list | tuple):
        return [(prefix, " ".join(str(v) for v in value))]
    return [(prefix, "—" if value is None else str(value))]


def environment_items(env: dict[str, Any]) -> list[tuple[str, str]]:
    """The environment as (key, value) lines: device, versions, commit, method, compiler settings, templates."""
    shown = {k: v for k, v in env.items() if k != "peaks"}
    order = ("backend", "device", "versions", "git", "compile", "measure", "templates", "created_utc")
    ordered = [k for k in order if k in shown] + sorted(k for k in shown if k not in order)
    items = []
    for key in ordered:
        items += _flatten(shown[key], key)
    return items


def ceilings_table(env: dict[str, Any]) -> Table:
    """Measured against theoretical ceilings of one environment."""
    peaks = env.get("peaks") or {}
    theoretical, measured = peaks.get("theoretical") or {}, peaks.get("measured") or {}
    table = Table(["ceiling", "theoretical", "measured", "measured / theoretical"], numeric={1, 2, 3})
    for key in [*PEAK_KEYS, *sorted((set(theoretical) | set(measured)) - set(PEAK_KEYS))]:
        if key not in theoretical and key not in measured:
            continue
        unit = "GB/s" if key.endswith("_gbs") else ("GOP/s" if key.startswith("int32") else "GFLOP/s")
        name = LEVEL_LABELS.get(key) or (key.removesuffix("_gflops").removesuffix("_gbs")
                                         .replace("bandwidth", "DRAM bandwidth").replace("_tensor", " tensor cores"))
        t, m = theoretical.get(key), measured.get(key)
        ratio = m / t if isinstance(t, int | float) and isinstance(m, int | float) and t else None
        table.rows.append([f"{name} ({unit})", number(t), number(m), percent(ratio, 0, scale=100)])
    load = (env.get("ceilings") or {}).get("load")
    if isinstance(load, dict) and "under_load" in load:
        watched = Load.from_dict(load)
        words = load.get("worst") or (watched.describe() if watched is not None else "other work was seen")
        table.caption = (f"UNDER LOAD: measured while {words}; the measured ceilings read too low, and shares of them "
                         f"are flagged ?" if load["under_load"] else f"measured while {words}, within what the "
                         f"measurements leave free")
    return table


def machine_models_table(run: Run) -> Table:
    dtypes = sorted({d for m in run.machine_models for d in m.peak_gflops})
    table = Table(["machine model", *(f"{d} GFLOP/s" for d in dtypes), "bandwidth GB/s",
                   *(f"ridge {d} FLOP/B" for d in dtypes)], numeric=set(range(1, 2 * len(dtypes) + 2)))
    for model in run.machine_models:
        table.rows.append([model.name, *(number(model.peak_gflops.get(d)) for d in dtypes),
                           number(model.bandwidth_gbs), *(number(model.ridge_point(d)) for d in dtypes)])
    return table
