"""Conditional parameters, read off a domain's candidates: where a restriction pins one parameter because of
another's value, that parameter means nothing there.

A GPU kernel's restrictions often say that a parameter only matters when another one allows it: a tile's
stride only where the tile is larger than one (``tile_size_x > 1 or tile_stride_x == 0``), the padding of
shared memory only where shared memory is used (``use_padding == 0 or use_shmem != 0``). Where the condition
fails, the dependent parameter is held at one value, and that value says nothing about the configuration: a
model that takes it at its word carries what it learned about the value elsewhere (a stride of 0 is slow
wherever there is a tile to stride through) into the region where it is only a placeholder (the untiled
configurations, where it is forced), and keeps away from that region for the wrong reason.

Axis ``j`` is *inactive where axis i has value v* when every candidate with value v on axis i has one and the same
value on axis j, while the candidates with any other value on axis i take every value of axis j that the domain
has. The second half tells a condition apart from a bound that narrows gradually (``block_size_x * block_size_y
<= 1024`` leaves one value of ``block_size_y`` for the largest ``block_size_x``, fewer for the next ones: that
value is a real one). Where two axes of two values pin each other (each implies the other's value), the pinning
that covers more candidates is taken as the condition (a conditional parameter is active in the smaller part of
the space); where both cover as many, neither is.
"""

from __future__ import annotations

import numpy as np

from tuner.strategies.domain import Domain


def inactive_where(domain: Domain) -> np.ndarray:
    """(axes × the largest radix × axes) booleans: [i, v, j] is True where axis j is inactive in the candidates
    whose axis i has value v (see the module's notes). None are for a product domain (it has no restrictions)."""
    axes, widest = domain.axes, int(domain.radices.max()) if domain.axes else 1
    table = np.zeros((axes, widest, axes), dtype=bool)
    if domain.is_product or domain.size == 0:
        return table
    rows = domain.all_indices.astype(np.int64)
    radices = domain.radices
    slice_size = np.zeros((axes, widest), dtype=np.int64)
    for i in range(axes):
        slice_size[i, :radices[i]] = np.bincount(rows[:, i], minlength=int(radices[i]))
    present = slice_size > 0
    for i in range(axes):
        for j in range(axes):
            if i != j and present[i].sum() > 1 and present[j].sum() > 1:
                table[i, :radices[i], j] = _pinned_by_a_condition(rows[:, i], rows[:, j], present[i, :radices[i]],
                                                                  int(radices[j]))
    return _without_the_smaller_of_mutual_pins(table, slice_size)


def _pinned_by_a_condition(first: np.ndarray, second: np.ndarray, present: np.ndarray, radix: int) -> np.ndarray:
    """Per value of the first axis: whether it pins the second to one value while every other value of the first
    leaves the second all the values it takes anywhere."""
    pairs = np.bincount(first * radix + second, minlength=len(present) * radix).reshape(len(present), radix) > 0
    distinct = pairs.sum(axis=1)
    complete = distinct == pairs.any(axis=0).sum()
    pinned = distinct == 1
    others_complete = (complete | ~present).sum() - (complete | ~present) == len(present) - 1
    return pinned & others_complete


def _without_the_smaller_of_mutual_pins(table: np.ndarray, slice_size: np.ndarray) -> np.ndarray:
    """The table less each pin whose converse (the pinned axis' other value pinning the first) covers at least
    as many candidates."""
    kept = table.copy()
    for i, v, j in np.argwhere(table):
        for (w,) in np.argwhere(table[j, :, i]):
            if slice_size[i, v] <= slice_size[j, w]:
                kept[i, v, j] = False
    return kept


def inactive_mask(table: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per row of value indices and axis: whether the axis is inactive in that row ((k × axes) → (k × axes))."""
    rows = np.asarray(rows, dtype=np.int64)
    if not table.any():
        return np.zeros(rows.shape, dtype=bool)
    axes = rows.shape[1]
    return table[np.arange(axes)[None, :], rows].any(axis=1)
