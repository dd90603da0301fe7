"""The best kernels' CUDA source, re-rendered from their family's template, with their launch geometry."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import jinja2
import pandas as pd

from tuner.config import Config
from tuner.kernels.discovery import changed_template, families
from tuner.kernels.render import launch, render, render_stored
from tuner.report.formatting import params_text, performance_unit
from tuner.report.run_folder import Run
from tuner.results import table as results


@dataclass(frozen=True)
class LaunchLine:
    problem: str
    block: str
    grid: str
    dynamic_shared_bytes: int
    performance: float
    unit: str


@dataclass
class KernelSource:
    title: str
    source: str | None
    launches: list[LaunchLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def problems(self) -> str:
        return ", ".join(line.problem for line in self.launches)


def _dims(text: object) -> tuple[int, ...]:
    return tuple(int(d) for d in re.findall(r"\d+", str(text)))


def _dim3(dims: tuple[int, ...]) -> str:
    return "×".join(str(d) for d in dims)


def _recorded(row: pd.Series, column: str, fallback: tuple[int, ...]) -> str:
    value = row.get(column)
    return str(value) if isinstance(value, str) and value.strip() else _dim3(fallback)


def best_sources(run: Run) -> list[KernelSource]:
    """One entry per distinct best configuration (the best of several problems may share one source)."""
    entries: dict[tuple, KernelSource] = {}
    for dtype, problem in run.slices():
        ok = run.ok[(run.ok["dtype"] == dtype) & (run.ok["problem"] == problem)]
        if ok.empty:
            continue
        row = ok.loc[ok["performance"].idxmax()]
        family, params = str(row["family"]), row["params"]
        identity = (family, dtype, tuple(sorted(params.items())))
        config = results.config_of_row(row)
        entry = entries.get(identity)
        if entry is None:
            entry = entries[identity] = _render(run, row, config)
        geometry = _geometry(config, entry, run.environment(ok[ok["config_key"] == row["config_key"]]).multiprocessors)
        block = _recorded(row, "block", geometry[0] if geometry else ())
        grid = _recorded(row, "grid", geometry[1] if geometry else ())
        if geometry and (_dims(block), _dims(grid)) != geometry[:2]:
            entry.notes.append(f"{problem}: the launch recorded in the run ({block}, {grid}) differs from the current "
                               f"family's geometry ({_dim3(geometry[0])}, {_dim3(geometry[1])})")
        entry.launches.append(LaunchLine(problem, block, grid, geometry[2] if geometry else 0,
                                         float(row["performance"]), performance_unit(ok, dtype)))
    return list(entries.values())


def _geometry(config: Config, entry: KernelSource,
              multiprocessors: int | None) -> tuple[tuple[int, ...], tuple[int, ...], int] | None:
    family = families().get(config.family)
    if family is None or family.target != "cuda" or family.recording is not None:
        return None
    try:
        geometry = launch(config)
    except (KeyError, TypeError, ValueError) as exc:
        entry.notes.append(f"the launch geometry could not be computed ({exc})")
        return None
    return tuple(geometry.block), tuple(geometry.grid_on(multiprocessors)), geometry.dynamic_shared_bytes


def _render(run: Run, row: pd.Series, config: Config) -> KernelSource:
    title = f"{config.family} {params_text(config.param_dict)}, {config.dtype}"
    if config.family not in families():
        return _render_stored(run, config, title)
    recording = families()[config.family].recording
    if recording is not None:
        return KernelSource(title, None, notes=[f"replayed from the recording {recording.name}, which holds no "
                                                f"source"])
    try:
        source = render(config)
    except (jinja2.TemplateError, KeyError, TypeError, ValueError) as exc:
        return KernelSource(title, None, notes=[f"the template could not render this configuration ({exc})"])
    entry = KernelSource(title, source)
    environment = run.environment(run.ok[run.ok["config_key"] == row["config_key"]])
    changed = changed_template(environment.as_dict(), config.family)
    if changed is not None:
        entry.notes.append(f"the template of '{config.family}' changed since this run (recorded hash {changed[0]}, "
                           f"now {changed[1]}): the source shown is rendered from the current template")
    return entry


def _render_stored(run: Run, config: Config, title: str) -> KernelSource:
    """The source from the template text the run stored of a family from a folder of its own (never its code)."""
    record = run.family_record(config.family) or {}
    template = record.get("template")
    if not isinstance(template, str):
        return KernelSource(title, None, notes=[f"the family '{config.family}' is not among this checkout's "
                                                f"templates and the run stored no copy of its template, so its "
                                                f"source cannot be shown"])
    recorded = run.environment(run.ok[run.ok["family"] == config.family]).templates
    try:
        source = render_stored(config, template, str(record.get("template_file") or config.family),
                               str(recorded.get(config.family) or "unknown"))
    except (jinja2.TemplateError, KeyError, TypeError, ValueError) as exc:
        return KernelSource(title, None, notes=[f"the run's copy of the template could not render this configuration "
                                                f"({exc})"])
    return KernelSource(title, source, notes=[f"rendered from the copy of the template '{config.family}' stored in "
                                              f"the run folder"])
