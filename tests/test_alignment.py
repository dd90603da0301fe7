"""Alignment axes: which integer parameters get one, their levels, and how the model sees them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_bayesian import assert_fitting_sees_the_distances_prediction_sees
from tuner.strategies import Domain
from tuner.strategies.alignment import CAP, alignment, alignment_axes
from tuner.strategies.gaussian_process import Encoding, GaussianProcess, Weights


def test_alignment_is_the_exponent_of_the_largest_power_of_two_dividing_a_value():
    assert [alignment(v) for v in (1, 3, 2, 6, 4, 12, 48, 96, 256, -64)] == [0, 0, 1, 1, 2, 2, 4, 5, 8, 6]
    assert alignment(0) == CAP and alignment(2**20) == CAP


def test_block_widths_in_steps_of_sixteen_get_levels_by_alignment():
    widths = tuple(range(16, 257, 16))
    (axis,) = alignment_axes([widths], np.array([True]))
    assert axis.source == 0 and axis.radix == 5  # 16·odd, 32·odd, 64·odd, 128, 256
    level = dict(zip(widths, axis.level.tolist(), strict=True))
    assert level[32] == level[96] == level[160] == level[224] == 1
    assert level[16] == level[48] == 0 and level[64] == level[192] == 2 and level[128] == 3 and level[256] == 4


@pytest.mark.parametrize("values, ordered", [
    ((4, 8, 16, 32), True),          # powers of two: the index order already says it
    ((64, 32, 16), True),            # the same, descending
    ((33, 35, 37), True),            # every value odd: one level
    ((1, 2, 3, 4), True),            # small counts: 1 means none
    ((8, 12, 16, 20), True),
    ((1.5, 2.0, 3.0), True),         # not all whole numbers
    ((False, True, 2), True),        # a boolean is not a number here
    ((2, 6), True),                  # two values: nothing between them to place
    ((16, 32, 48), False),           # categorical
    (("a", "b", "c"), False),
])
def test_axes_whose_alignment_adds_nothing_get_none(values, ordered):
    assert alignment_axes([values], np.array([ordered])) == ()


def test_whole_floats_and_zero_are_aligned_and_a_domain_without_values_has_no_alignment_axes():
    (axis,) = alignment_axes([(0.0, 32.0, 48.0, 64.0)], np.array([True]))
    assert axis.level.tolist() == [3, 1, 0, 2]
    assert alignment_axes(None, np.array([True])) == ()


def widths_domain(values: bool = True) -> Domain:
    """width (16 … 128 in steps of 16, ordered) × vector (1, 2, 4: powers of two) × layout (2, categorical)."""
    widths = tuple(range(16, 129, 16))
    radices = np.array([len(widths), 3, 2])
    rows = np.array(list(np.ndindex(*radices)))
    known = (widths, (1, 2, 4), ("row", "column")) if values else None
    return Domain(("width", "vector", "layout"), radices, np.array([True, True, False]), rows, known)


def test_the_encoding_appends_each_alignment_axis_with_its_own_weights():
    domain = widths_domain()
    encoding = Encoding(domain)
    assert encoding.axes.tolist() == [0, 1, 2, 3] and encoding.ordered.tolist() == [True, True, False, True]
    assert Encoding(domain, aligned=False).axes.tolist() == [0, 1, 2]
    assert Encoding(widths_domain(values=False)).axes.tolist() == [0, 1, 2]
    weights = Weights(np.array([0.3, 0.4, 0.5, 0.6]), np.array([0.7, 0.8, 0.0, 0.9]), 1e-3)
    rows = np.array([[1, 0, 0], [2, 0, 0], [5, 0, 0]])  # widths 32, 48, 96: aligned 5, 4, 5 (levels 1, 0, 1)
    encoded = encoding.encode(rows)
    found = encoding.distances(encoded[:1], encoded[1:], weights)[0]
    level_span = encoding.radix[3] - 1
    np.testing.assert_allclose(found, [0.3 + 0.7 / 7 + 0.6 + 0.9 / level_span, 0.3 + 0.7 * 4 / 7])
    assert_fitting_sees_the_distances_prediction_sees(encoding, domain, weights)


def test_a_model_that_sees_alignment_predicts_an_unseen_aligned_width_fast():
    domain = widths_domain()
    rows = domain.all_indices.astype(np.int64)
    widths = np.array(domain.values[0])[rows[:, 0]]
    times = np.where(widths % 32 == 0, 1.0, 3.0) * (1 + 0.1 * rows[:, 1])  # multiples of the warp are fast
    unseen = np.flatnonzero(widths == 96)
    seen = np.setdiff1d(np.arange(domain.size), unseen)
    predicted = {}
    for aligned in (False, True):
        model = GaussianProcess(domain, aligned=aligned)
        model.fit_weights(seen, times[seen])
        model.condition(seen, times[seen])
        predicted[aligned] = model.predict(unseen)[0]
    model_fast = model.predict(seen[widths[seen] % 32 == 0])[0].mean()
    model_slow = model.predict(seen[widths[seen] % 32 != 0])[0].mean()
    assert predicted[True].mean() < predicted[False].mean()
    assert abs(predicted[True].mean() - model_fast) < abs(predicted[True].mean() - model_slow)


def test_a_domain_checks_its_values_against_its_radices():
    with pytest.raises(ValueError, match="values"):
        Domain(("a",), np.array([3]), np.array([True]), None, ((1, 2),))
    assert Domain.product(["a"], [3], [True], [(1, 2, 3)]).values == ((1, 2, 3),)
