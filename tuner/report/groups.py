"""Analytical classes of configurations: a family together with the parameters that change its global traffic.

All configurations of a class share one arithmetic intensity (for a given problem and dtype) and so one
analytical bound: the naive kernel is one class whatever its block shape, the tiled kernel one class per
TILE_WIDTH. The figures colour by class (hue by family, shade by the key parameter) and the tables compare
each class's bound with what it achieved.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import matplotlib as mpl
import pandas as pd

from tuner.config import DTYPE_BYTES, ParamValue, Problem
from tuner.kernels.discovery import families

FAMILY_COLORMAPS = ("Blues", "Oranges", "Greens", "Purples", "Reds", "Greys", "YlOrBr", "PuRd")


@dataclass(frozen=True, order=True)
class Group:
    family: str
    key: tuple[tuple[str, ParamValue], ...] = ()

    @property
    def label(self) -> str:
        values = ", ".join(f"{name}={value}" for name, value in self.key)
        return f"{self.family} {values}" if values else self.family


def sort_value(value: ParamValue) -> tuple[int, float | str]:
    return (0, float(value)) if isinstance(value, int | float) else (1, str(value))


def _problems(rows: pd.DataFrame, dims: tuple[str, ...]) -> list[Problem]:
    sizes = rows[[d for d in dims if d in rows]].dropna().drop_duplicates()
    return [Problem(**{d: int(v) for d, v in row.items()}) for row in sizes.to_dict("records")]


def key_parameters(family: str, rows: pd.DataFrame) -> tuple[str, ...]:
    """The parameters of ``family`` whose value changes its global-memory bytes (in the rows' problems)."""
    distinct = list({tuple(sorted(p.items())): dict(p) for p in rows["params"]}.values())
    names = sorted({name for params in distinct for name in params})
    values = {n: sorted({p[n] for p in distinct if n in p}, key=sort_value) for n in names}
    known = families().get(family)
    if known is None:
        return tuple(n for n in names if _varies_in_data(rows, n, names))
    problems = _problems(rows, known.dims)
    dtypes = [d for d in rows["dtype"].unique() if d in DTYPE_BYTES]
    sizes = {DTYPE_BYTES[d] for d in dtypes}

    def modelled(params: dict[str, ParamValue]) -> bool:  # e.g. no tile width of 0 (a rejected row may have one)
        return not any(known.broken_preconditions(params, d) for d in dtypes)

    complete = [p for p in distinct if set(p) == set(names)]
    key = []
    for name in names:
        # Configurations that differ only in ``name`` share the others' values: each such set is tried once with
        # every value of ``name`` the family's cost model describes.
        others = list({tuple((n, v) for n, v in sorted(p.items()) if n != name): p for p in complete}.values())
        if any(len({known.global_bytes({**params, name: value}, problem, size) for value in values[name]
                    if modelled({**params, name: value})}) > 1
               for params in others for problem in problems for size in sizes):
            key.append(name)
    return tuple(key)


def _varies_in_data(rows: pd.DataFrame, name: str, names: list[str]) -> bool:
    """For an unregistered family: do rows that differ only in ``name`` record different bytes?"""
    if "bytes_model" not in rows:
        return False
    others = [n for n in names if n != name]
    keys = [(problem, dtype, *(params.get(n) for n in others))
            for problem, dtype, params in zip(rows["problem"], rows["dtype"], rows["params"], strict=True)]
    return bool((rows["bytes_model"].groupby(pd.Series(keys, index=rows.index)).nunique() > 1).any())


def assign_groups(kernels: pd.DataFrame) -> pd.Series:
    """The Group of each kernel row (index-aligned with ``kernels``)."""
    groups = pd.Series([None] * len(kernels), index=kernels.index, dtype=object)
    for family, rows in kernels.groupby("family"):
        key = key_parameters(str(family), rows)
        labels = [Group(str(family), tuple((n, params[n]) for n in key if n in params)) for params in rows["params"]]
        groups.loc[rows.index] = pd.Series(labels, index=rows.index, dtype=object)
    return groups


def sorted_groups(groups: Iterable[Group]) -> list[Group]:
    return sorted(set(groups), key=lambda g: (g.family, [sort_value(v) for _, v in g.key]))


def group_colors(groups: Iterable[Group]) -> dict[Group, tuple[float, float, float, float]]:
    """One colour per class: each family its own hue, its classes shades of it (darker = larger key value)."""
    ordered = sorted_groups(groups)
    family_names = sorted({g.family for g in ordered})
    colors = {}
    for i, family in enumerate(family_names):
        cmap = mpl.colormaps[FAMILY_COLORMAPS[i % len(FAMILY_COLORMAPS)]]
        members = [g for g in ordered if g.family == family]
        for j, group in enumerate(members):
            shade = 0.65 if len(members) == 1 else 0.45 + 0.5 * j / (len(members) - 1)
            colors[group] = cmap(shade)
    return colors
