"""The comparison as one self-contained HTML page: the table, the figures embedded, the settings and sources."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import jinja2

from tuner import atomic_file
from tuner.compare.comparison import CaseResult
from tuner.compare.table import CONVENTION_LABEL

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Strategies on recorded spaces</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.best { font-weight: bold; }
img { max-width: 100%; }
p.note, pre { color: #555; font-size: 0.9em; }
</style></head><body>
<h1>Search strategies on recorded spaces</h1>
<p>{{ settings.repeats }} runs of each strategy, seed {{ settings.seed }}; budgets {{ settings.budgets|join(", ") }}
evaluations. Fraction of the optimum: optimum time / best time found, mean ± standard deviation over the runs (bold:
the best mean). P: the methodology score of Willemsen et al. (2024) as the package autotuning_methodology computes
it, (strategy − random) / (optimum − random) averaged over its time axis (recorded time of each evaluation and the
strategy's own time). Convention (a): the budget counts only the configurations that pass the space's restrictions;
(b): a draw from all combinations that fails counts too. optuna:NAME: Optuna's samplers; kt:NAME: Kernel Tuner's
strategies in its simulation mode, each budget run apart (they are told their budget), under the same convention.</p>
{% for case in cases %}
<h2>{{ case.title }}</h2>
<table><tr><th>strategy</th>{% for b in case.budgets %}<th>after {{ b }}</th>{% endfor %}<th>P</th>
<th>ms per evaluation</th></tr>
{% for row in case.rows %}<tr><td>{{ row.strategy }}</td>
{% for cell in row.cells %}<td{% if cell.best %} class="best"{% endif %}>{{ cell.text }}</td>{% endfor %}
<td>{{ row.p }}</td><td>{{ row.think }}</td></tr>
{% endfor %}</table>
<img src="{{ case.image }}" alt="performance curves of {{ case.title }}">
{% endfor %}
<h2>Settings</h2><pre>{{ settings_text }}</pre>
</body></html>
"""


def write_page(results: list[CaseResult], images: dict[int, Path], out: Path, settings: dict[str, Any]) -> Path:
    """``comparison.html`` in ``out``; ``images`` maps each result's position to its figure."""
    cases = []
    for i, result in enumerate(results):
        scored = result.scored
        budgets = next(iter(scored.values())).budgets
        best = [max(s.fractions.mean[j] for s in scored.values()) for j in range(len(budgets))]
        cases.append({
            "title": f"{result.case.name} ({result.case.space.device or 'device not recorded'}), convention "
                     f"{CONVENTION_LABEL[result.case.convention.value]}",
            "budgets": budgets,
            "rows": [{"strategy": name,
                      "cells": [{"text": f"{s.fractions.mean[j]:.3f} ± {s.fractions.std[j]:.3f}",
                                 "best": s.fractions.mean[j] >= best[j] - 1e-12} for j in range(len(budgets))],
                      "p": f"{s.p:.3f}" if s.score is not None else "—", "think": f"{s.think_ms:.2f}"}
                     for name, s in scored.items()],
            "image": "data:image/png;base64," + base64.b64encode(images[i].read_bytes()).decode("ascii"),
        })
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    text = "\n".join(f"{key}: {value}" for key, value in settings.items())
    path = out / "comparison.html"
    atomic_file.write_text(path, environment.from_string(PAGE).render(cases=cases, settings=settings,
                                                                      settings_text=text))
    return path
