"""A family's own code tried on an experiment's kernel entry before anything runs.

A family from a folder or an installed package is Python and Jinja its author wrote; a mistake in it (a template
that does not parse or names an undefined variable, a cost model that divides by zero or gives no bytes, a launch
geometry that raises) would otherwise surface as a traceback in the middle of a run. Here the entry's first valid
configuration is rendered, and its launch geometry and cost model are computed on every problem, so that such a
mistake is one paragraph naming the family's file before the run starts. A mistake only some values reach is
named the same way (:class:`tuner.kernels.family.FamilyError`) when the run reaches them, with what was recorded
before kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.config import Problem
from tuner.kernels.discovery import is_package_family
from tuner.kernels.family import FamilyError
from tuner.kernels.model import cost
from tuner.kernels.render import launch, render
from tuner.space.entry_space import EntrySpace


def family_mistake(entry: EntrySpace, problems: Sequence[Problem]) -> str | None:
    """Why the family of a kernel entry fails on the entry's first valid configuration (its template, launch
    geometry or cost model, on any of ``problems``), or None where it does not. The package's own families and
    recorded ones are not tried: they are tested with the package, or have no code."""
    family = entry.family
    if family.recording is not None or is_package_family(family):
        return None
    first = entry.valid_rows[:1]
    try:
        for index, problem in enumerate(problems):
            for config in entry.configs(problem, first):
                if index == 0:
                    render(config)
                if family.target == "cuda":
                    launch(config)
                cost(config)
    except FamilyError as exc:
        return str(exc)
    return None
