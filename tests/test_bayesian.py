"""Bayesian optimisation over a domain: the Gaussian process (encodings, distances, fitting, predictions) and the
strategy around it (asks ahead, results it did not ask, failures, the local search beside it)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.strategies import Domain
from tuner.strategies.bayesian import BayesianSearch
from tuner.strategies.gaussian_process import Encoding, GaussianProcess, Weights, standardised


def mixed_domain() -> Domain:
    """Five axes: ordered of 5 and 4 values, categorical of 3, binary, and one of a single value; every
    combination but those whose first two indices sum to 7."""
    radices = np.array([5, 4, 3, 2, 1])
    rows = np.array([r for r in np.ndindex(*radices) if r[0] + r[1] != 7])
    return Domain(("a", "b", "c", "d", "e"), radices, np.array([True, True, False, True, True]), rows)


def test_distances_from_one_product_of_encodings_are_the_weighted_hamming_and_step_distances():
    domain = mixed_domain()
    encoding = Encoding(domain)
    assert encoding.axes.tolist() == [0, 1, 2, 3] and encoding.ordered.tolist() == [True, True, False, False]
    weights = Weights(np.array([0.3, 1.2, 0.7, 2.0]), np.array([0.9, 0.4, 0.0, 0.0]), 1e-3)
    rows = domain.all_indices.astype(np.int64)
    encoded = encoding.encode(rows)
    found = encoding.distances(encoded[:40], encoded[25:], weights)
    a, b = rows[:40, None, :4], rows[None, 25:, :4]
    expected = ((a != b) * weights.differ).sum(-1) + (np.abs(a - b) / np.array([4, 3, 2, 1]) * weights.steps).sum(-1)
    np.testing.assert_allclose(found, expected, atol=1e-12)


def test_the_model_interpolates_what_it_saw_and_is_unsure_far_from_it():
    domain = mixed_domain()
    rows = domain.all_indices.astype(np.int64)
    times = np.exp(0.4 * rows[:, 0] - 0.3 * rows[:, 1] + np.where(rows[:, 2] == 1, 0.5, 0.0))
    seen = np.sort(np.random.default_rng(1).choice(domain.size, size=40, replace=False))
    unseen = np.setdiff1d(np.arange(domain.size), seen)
    everything = standardised(times)
    correlations = []
    for fitted in (False, True):
        model = GaussianProcess(domain)
        if fitted:
            model.fit_weights(seen, times[seen])
        model.condition(seen, times[seen])
        mean, sd = model.predict(seen)
        np.testing.assert_allclose(mean, standardised(times[seen]), atol=0.05)
        predicted, sd_unseen = model.predict(unseen)
        assert sd.max() < sd_unseen.min()
        correlations.append(np.corrcoef(predicted, everything[unseen])[0, 1])
    assert correlations[1] > correlations[0] and correlations[1] > 0.95  # fitted weights predict better


def test_a_failure_counts_as_slower_than_the_slowest_success():
    targets = standardised(np.array([1.0, 2.0, 4.0, math.inf]))
    assert np.isfinite(targets).all() and targets[3] > targets[2] > targets[1] > targets[0]
    assert targets.mean() == pytest.approx(0.0, abs=1e-12)


def test_asks_ahead_are_distinct_and_told_results_it_did_not_ask_count():
    domain = mixed_domain()
    rows = domain.all_indices.astype(np.int64)
    times = np.exp(0.5 * np.abs(rows[:, 0] - 3) + 0.2 * rows[:, 1] + (rows[:, 2] == 0))
    search = BayesianSearch(domain, np.random.default_rng(3), initial=6)
    foreign = [0, 5, 9]  # results of another worker: never asked by this strategy, never proposed again
    for candidate in foreign:
        search.tell(candidate, float(times[candidate]))
    asked = [search.ask() for _ in range(4)]  # a study asks a few ahead
    assert len(set(asked + foreign)) == 7
    for candidate in asked:
        search.tell(candidate, float(times[candidate]) if candidate != asked[0] else math.inf)
    for _ in range(20):
        candidate = search.ask()
        assert candidate not in asked + foreign
        search.tell(candidate, float(times[candidate]))
    assert search.local.values == search.values  # the local search beside it is told everything
    assert search.model.weights.noise > 0 and search.best_value == min(v for v in search.values.values())


def tiled_domain() -> Domain:
    """block (5, ordered) × tile (4, ordered) × stride (2): a stride only where the tile is larger than one."""
    radices = np.array([5, 4, 2])
    rows = np.array([r for r in np.ndindex(*radices) if r[1] > 0 or r[2] == 0])
    return Domain(("block", "tile", "stride"), radices, np.array([True, True, False]), rows)


def test_an_inactive_axis_is_encoded_halfway_between_its_values_in_distances_and_in_fitting():
    domain = tiled_domain()
    encoding = Encoding(domain)
    weights = Weights(np.array([0.5, 0.8, 1.6]), np.array([0.7, 1.1, 0.0]), 1e-3)
    untiled, strided, unstrided = domain.candidates_of(np.array([[2, 0, 0], [2, 1, 1], [2, 1, 0]]))
    encoded = encoding.encode(domain.indices_of(np.array([untiled, strided, unstrided])))
    found = encoding.distances(encoded[:1], encoded[1:], weights)[0]
    np.testing.assert_allclose(found, [0.8 + 1.1 / 3 + 1.6 / 2] * 2)  # one tile step, half a stride either way
    assert_fitting_sees_the_distances_prediction_sees(encoding, domain, weights)


def assert_fitting_sees_the_distances_prediction_sees(encoding: Encoding, domain: Domain, weights: Weights) -> None:
    """The per-axis differences that fitting weighs give, under ``weights``, the distances that prediction
    computes from the encodings, for every pair of the domain's candidates."""
    rows = domain.all_indices.astype(np.int64)
    differ, steps = encoding.differences(rows)
    everything = encoding.encode(rows)
    np.testing.assert_allclose(differ @ weights.differ + steps @ weights.steps,
                               encoding.distances(everything, everything, weights), atol=1e-12)


def test_the_pinned_value_of_an_inactive_axis_carries_no_slowness_into_the_region_where_it_is_pinned():
    domain = tiled_domain()
    rows = domain.all_indices.astype(np.int64)
    times = np.exp(0.1 * rows[:, 0] + np.where(rows[:, 1] == 0, 0.0, np.where(rows[:, 2] == 0, 2.0, 0.5)))
    seen = np.flatnonzero(rows[:, 1] > 0)  # every tiled configuration: stride 0 is slow wherever it means anything
    untiled = np.flatnonzero(rows[:, 1] == 0)
    predicted = {}
    for conditional in (False, True):
        model = GaussianProcess(domain, conditional)
        model.weights = Weights(np.array([0.2, 0.5, 1.5]), np.array([0.3, 0.5, 0.0]), 1e-3)
        model.condition(seen, times[seen])
        predicted[conditional] = model.predict(untiled)[0]
    strided, unstrided = (model.predict(seen[rows[seen, 2] == s])[0].mean() for s in (1, 0))
    assert predicted[True].mean() < predicted[False].mean()
    assert strided < predicted[True].mean() < unstrided  # the model is left between what it saw either way
