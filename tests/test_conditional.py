"""Conditional parameters read off a domain's candidates: a parameter pinned where another's value rules it out,
told apart from a bound that narrows gradually and from two parameters that pin each other."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tuner.strategies import Domain
from tuner.strategies.conditional import inactive_mask, inactive_where


def domain_of(names: tuple[str, ...], radices: tuple[int, ...], keep: Callable[..., bool]) -> Domain:
    rows = np.array([r for r in np.ndindex(*radices) if keep(*r)])
    return Domain(names, np.array(radices), np.ones(len(radices), dtype=bool), rows)


def test_a_stride_pinned_where_the_tile_is_one_is_inactive_there_and_only_there():
    # block × tile × stride: a stride only where the tile is larger than one; block + tile bounded (gradually)
    domain = domain_of(("block", "tile", "stride"), (4, 4, 2),
                       lambda block, tile, stride: (tile > 0 or stride == 0) and block + tile <= 5)
    table = inactive_where(domain)
    assert [tuple(map(int, found)) for found in np.argwhere(table)] == [(1, 0, 2)]  # stride, where tile is 0
    rows = np.array([[0, 0, 0], [0, 1, 0], [3, 2, 1]])
    assert inactive_mask(table, rows).tolist() == [[False, False, True], [False, False, False],
                                                   [False, False, False]]


def test_a_bound_that_leaves_one_value_at_its_end_pins_no_inactive_parameter():
    # the largest block leaves one tile, the next ones fewer than all: a real value, not a placeholder
    domain = domain_of(("block", "tile"), (4, 4), lambda block, tile: block + tile <= 3)
    assert not inactive_where(domain).any()


def test_of_two_binary_parameters_that_pin_each_other_the_one_pinned_in_more_candidates_is_inactive():
    # padding only with shared memory: shmem 0 pins padding (6 candidates), padding 1 pins shmem (5: one more
    # combination of padding is ruled out)
    domain = domain_of(("shmem", "padding", "x", "y"), (2, 2, 3, 2),
                       lambda shmem, padding, x, y: (shmem == 1 or padding == 0)
                       and not (padding and x == 2 and y == 0))
    assert [tuple(map(int, found)) for found in np.argwhere(inactive_where(domain))] == [(0, 0, 1)]
    # as many candidates either way: which one is the condition is not to be told, and neither is taken
    even = domain_of(("shmem", "padding", "x"), (2, 2, 3), lambda shmem, padding, x: shmem == 1 or padding == 0)
    assert not inactive_where(even).any()


def test_a_product_domain_has_no_inactive_parameter():
    domain = Domain.product(("a", "b"), (3, 2), (True, True))
    table = inactive_where(domain)
    assert not table.any()
    assert not inactive_mask(table, domain.all_indices).any()
