"""A Gaussian process over a domain's candidates, the model of :mod:`tuner.strategies.bayesian`: an exponential
kernel of weighted Hamming and step distances between value indices, computed as one product of one-hot and
thermometer encodings; conditional axes encoded halfway between their values, alignment axes
(:mod:`tuner.strategies.alignment`) as ordered axes of their own, targets the standardised log of the times (a
failure: the worst time plus a tenth of the range); weights and noise fitted by marginal likelihood."""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular
from scipy.optimize import minimize

from tuner.strategies.alignment import alignment_axes
from tuner.strategies.conditional import inactive_mask, inactive_where
from tuner.strategies.domain import Domain

PRIOR_SD = 2.0
"""Standard deviation of the log-normal prior of each weight (median 1)."""
NOISE_PRIOR = (math.log(1e-3), 3.0)
"""Median and standard deviation of the log of the noise variance's prior."""
NOISE_BOUNDS = (1e-6, 0.5)
WEIGHT_BOUNDS = (math.exp(-6), math.exp(4))
FIT_ITERATIONS = 30


class Encoding:
    """One-hot columns of every axis of more than one value, thermometer columns of the ordered ones of more than
    two values (see the module's notes); the axes are the domain's followed by their alignment axes
    (:mod:`tuner.strategies.alignment`); an axis inactive in a row (:mod:`tuner.strategies.conditional`) is
    encoded halfway between its values."""

    def __init__(self, domain: Domain, conditional: bool = True, aligned: bool = True):
        self.alignment = alignment_axes(domain.values, domain.ordered) if aligned else ()
        radices = np.concatenate([domain.radices, [a.radix for a in self.alignment]]).astype(np.int64)
        ordered = np.concatenate([domain.ordered, np.ones(len(self.alignment), dtype=bool)])
        self.axes = np.flatnonzero(radices > 1)
        radix = radices[self.axes]
        self.radix = radix
        self.ordered = ordered[self.axes] & (radix > 2)
        self.onehot_start = np.concatenate(([0], np.cumsum(radix)[:-1])).astype(np.int64)
        self.onehot_width = int(radix.sum())
        levels = np.where(self.ordered, radix - 1, 0)
        self.onehot_axis = np.repeat(np.arange(len(self.axes)), radix)
        self.level_axis = np.repeat(np.arange(len(self.axes)), levels)
        self.level = np.concatenate([np.arange(n) for n in levels]) if len(levels) else np.zeros(0, np.int64)
        self.width = self.onehot_width + len(self.level)
        self.inactive = inactive_where(domain) if conditional else np.zeros((0, 0, 0), dtype=bool)
        self.column_axis = np.concatenate([self.onehot_axis, self.level_axis])

    def encode(self, rows: np.ndarray) -> np.ndarray:
        """The encodings of rows of value indices (k × the domain's axes)."""
        rows, inactive = self._model_rows(np.asarray(rows, dtype=np.int64))
        inactive = inactive[:, self.axes]
        rows = rows[:, self.axes]
        encoded = np.zeros((len(rows), self.width))
        encoded[np.arange(len(rows))[:, None], self.onehot_start + rows] = 1.0
        if len(self.level):
            encoded[:, self.onehot_width:] = rows[:, self.level_axis] > self.level
        if inactive.any():
            halfway = np.concatenate([np.zeros(self.onehot_width), np.full(len(self.level), 0.5)])
            encoded = np.where(inactive[:, self.column_axis], halfway, encoded)
        return encoded

    def _model_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the domain's value indices with their alignment levels appended, and where each axis is
        inactive (an alignment axis where the axis it reads is)."""
        inactive = inactive_mask(self.inactive, rows)
        if not self.alignment:
            return rows, inactive
        levels = [a.level[rows[:, a.source]] for a in self.alignment]
        sources = [a.source for a in self.alignment]
        return np.column_stack([rows, *levels]), np.column_stack([inactive, inactive[:, sources]])

    def differences(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per pair of rows and axis: how much they differ (1 for two values, ½ for a value and an inactive axis)
        and the index steps between them over the axis' span (both n × n × axes), for fitting the weights."""
        encoded = self.encode(rows)
        squares = (encoded[:, None, :] - encoded[None, :, :]) ** 2
        axes = len(self.axes)
        onehot = np.zeros((self.onehot_width, axes))
        onehot[np.arange(self.onehot_width), self.onehot_axis] = 0.5
        level = np.zeros((len(self.level), axes))
        level[np.arange(len(self.level)), self.level_axis] = 1.0 / (self.radix[self.level_axis] - 1)
        return squares[..., :self.onehot_width] @ onehot, squares[..., self.onehot_width:] @ level

    def distances(self, a: np.ndarray, b: np.ndarray, weights: Weights) -> np.ndarray:
        """The weighted distance between each encoding of ``a`` and each of ``b``."""
        per_level = weights.steps / np.maximum(self.radix - 1, 1)
        columns = np.concatenate([weights.differ[self.onehot_axis], 2 * per_level[self.level_axis]])
        norms = np.concatenate([0.5 * weights.differ[self.onehot_axis], per_level[self.level_axis]])
        own_a = (a * a) @ norms
        own_b = (b * b) @ norms
        return np.maximum(own_a[:, None] + own_b[None, :] - (a * columns) @ b.T, 0.0)


class Weights:
    """The kernel's weights per axis (differ: aᵢ, steps: bᵢ) and the noise variance."""

    def __init__(self, differ: np.ndarray, steps: np.ndarray, noise: float):
        self.differ, self.steps, self.noise = differ, steps, noise


class GaussianProcess:
    """The model of the times of a domain's candidates, refitted as observations come (see the module's notes)."""

    def __init__(self, domain: Domain, conditional: bool = True, aligned: bool = True):
        self.domain = domain
        self.encoding = Encoding(domain, conditional, aligned)
        axes = len(self.encoding.axes)
        self.weights = Weights(np.ones(axes), np.where(self.encoding.ordered, 1.0, 0.0), math.exp(NOISE_PRIOR[0]))
        self._train: np.ndarray = np.zeros((0, self.encoding.width))
        self._factor: np.ndarray = np.zeros((0, 0))
        self._alpha: np.ndarray = np.zeros(0)

    # --- fitting ----------------------------------------------------------------------------------------------

    def fit_weights(self, candidates: np.ndarray, values: np.ndarray) -> None:
        """Fit the weights and noise to observations by maximum a posteriori marginal likelihood."""
        targets = standardised(values)
        differ, steps = self.encoding.differences(self.domain.indices_of(candidates))
        ordered = self.encoding.ordered
        axes, levels = len(ordered), int(ordered.sum())
        flat_differ, flat_steps = differ.reshape(-1, axes), steps.reshape(-1, axes)
        identity = np.eye(len(targets))

        def objective(p: np.ndarray) -> tuple[float, np.ndarray]:
            a = np.exp(p[:axes])
            b = np.zeros(axes)
            b[ordered] = np.exp(p[axes:axes + levels])
            noise = math.exp(p[-1])
            kernel = np.exp(-(differ @ a + steps @ b))
            try:
                factor = cholesky(kernel + (noise + 1e-8) * identity, lower=True)
            except LinAlgError:
                return 1e10, np.zeros_like(p)
            alpha = cho_solve((factor, True), targets)
            inverse = cho_solve((factor, True), identity)
            outer = ((np.outer(alpha, alpha) - inverse) * kernel).reshape(-1)
            value = 0.5 * targets @ alpha + np.log(np.diag(factor)).sum()
            gradient = np.empty_like(p)
            gradient[:axes] = 0.5 * (outer @ flat_differ) * a
            gradient[axes:axes + levels] = (0.5 * (outer @ flat_steps) * b)[ordered]
            gradient[-1] = -0.5 * (np.trace(inverse) - alpha @ alpha) * noise
            value += 0.5 * float((p[:-1] ** 2).sum()) / PRIOR_SD**2
            value += 0.5 * ((p[-1] - NOISE_PRIOR[0]) / NOISE_PRIOR[1]) ** 2
            gradient[:-1] += p[:-1] / PRIOR_SD**2
            gradient[-1] += (p[-1] - NOISE_PRIOR[0]) / NOISE_PRIOR[1] ** 2
            return value, gradient

        start = np.concatenate([np.log(self.weights.differ), np.log(self.weights.steps[ordered]),
                                [math.log(self.weights.noise)]])
        bounds = [tuple(map(math.log, WEIGHT_BOUNDS))] * (axes + levels) + [tuple(map(math.log, NOISE_BOUNDS))]
        found = minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds,
                         options={"maxiter": FIT_ITERATIONS}).x
        steps_weights = np.zeros(axes)
        steps_weights[ordered] = np.exp(found[axes:axes + levels])
        self.weights = Weights(np.exp(found[:axes]), steps_weights, math.exp(found[-1]))

    def condition(self, candidates: np.ndarray, values: np.ndarray) -> None:
        """Condition the model on observations (candidates and their values, ``inf`` for failures)."""
        targets = standardised(values)
        self._train = self.encoding.encode(self.domain.indices_of(candidates))
        kernel = np.exp(-self.encoding.distances(self._train, self._train, self.weights))
        kernel[np.diag_indices_from(kernel)] += self.weights.noise + 1e-8
        self._factor = cholesky(kernel, lower=True)
        self._alpha = cho_solve((self._factor, True), targets)

    # --- predicting -------------------------------------------------------------------------------------------

    def predict(self, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The posterior mean and standard deviation (standardised log time) of candidates."""
        encoded = self.encoding.encode(self.domain.indices_of(candidates))
        cross = np.exp(-self.encoding.distances(encoded, self._train, self.weights))
        mean = cross @ self._alpha
        reduced = solve_triangular(self._factor, cross.T, lower=True, check_finite=False)
        return mean, np.sqrt(np.maximum(1.0 + self.weights.noise - (reduced * reduced).sum(axis=0), 1e-12))


def standardised(values: np.ndarray) -> np.ndarray:
    """The logarithms of the values, a failure (``inf``) as the worst plus a tenth of the range, standardised."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values) & (values > 0)
    logs = np.log(np.where(finite, values, 1.0))
    if finite.any():
        low, high = logs[finite].min(), logs[finite].max()
        logs = np.where(finite, logs, high + 0.1 * (high - low))
    return (logs - logs.mean()) / (logs.std() + 1e-9)
