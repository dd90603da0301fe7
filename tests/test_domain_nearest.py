"""The nearest free candidate of a domain: the shortcut through the candidates one parameter away gives what a scan
of every candidate gives, ties drawn alike."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.strategies.domain import Domain


def scanned(domain: Domain, point: np.ndarray, free: np.ndarray, rng: np.random.Generator) -> int:
    distance = np.where(free, domain.distances(point), np.inf)
    best = float(distance.min())
    if not math.isfinite(best):
        return -1
    ties = np.flatnonzero(distance <= best + 1e-12)
    return int(ties[0] if len(ties) == 1 else ties[rng.integers(len(ties))])


@pytest.mark.parametrize("listed", [False, True])
def test_nearest_free_is_the_nearest_of_a_full_scan(listed):
    names = ("A", "B", "C", "D")
    radices, ordered = (4, 3, 2, 5), (True, True, False, True)
    rng = np.random.default_rng(7)
    product = Domain.product(names, radices, ordered)
    domain = Domain(names, np.array(radices), np.array(ordered),
                    product.all_indices[rng.random(product.size) < 0.6]) if listed else product
    shortcuts = 0
    for trial in range(400):
        free = rng.random(domain.size) < rng.uniform(0.05, 0.9)
        point = rng.integers(0, radices).astype(float)
        expected = scanned(domain, point, free, np.random.default_rng(trial))
        assert domain.nearest(point, free, np.random.default_rng(trial)) == expected
        shortcuts += domain._nearest_one_away(point, free, None) is not None
    assert shortcuts > 100  # the shortcut is taken, not only the scan
