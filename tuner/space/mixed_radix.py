"""Rows of value indices as integers: mixed-radix keys (one digit per axis, each axis its own radix), and the rows
of a table found by their keys through one sorted copy."""

from __future__ import annotations

import numpy as np


def place_values(radices: np.ndarray) -> np.ndarray:
    """The weight of each axis' digit in a key: the product of the radices of the axes after it."""
    place = np.ones(len(radices), dtype=np.int64)
    for j in range(len(radices) - 2, -1, -1):
        place[j] = place[j + 1] * radices[j + 1]
    return place


def encode(indices: np.ndarray, place: np.ndarray) -> np.ndarray:
    """The keys of rows of value indices ((k × axes) → (k,))."""
    return np.asarray(indices, dtype=np.int64) @ place


def decode(keys: np.ndarray, place: np.ndarray, radices: np.ndarray) -> np.ndarray:
    """The value indices of keys ((k,) → (k × axes))."""
    return (np.asarray(keys, dtype=np.int64)[:, None] // place) % radices


class KeyIndex:
    """The row of each key of a table, by binary search in a sorted copy of its keys."""

    def __init__(self, keys: np.ndarray):
        self.order = np.argsort(keys, kind="stable")
        self.sorted = np.asarray(keys, dtype=np.int64)[self.order]

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """The row of each key, -1 where the table lacks it."""
        keys = np.asarray(keys, dtype=np.int64)
        if not len(self.sorted):
            return np.full(keys.shape, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.sorted, keys), len(self.sorted) - 1)
        return np.where(self.sorted[at] == keys, self.order[at], -1)
