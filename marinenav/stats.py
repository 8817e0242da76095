"""Intervals for success rates: Wilson's score interval for one evaluation, Newcombe's for the
difference of two, a percentile bootstrap for the mean over seeds.

A success rate from ``n`` episodes is a binomial proportion; Wilson's interval keeps its
coverage near 95% for small ``n`` and rates near 0 or 1, where the normal approximation fails
(Wilson 1927; Brown, Cai & DasGupta 2001). Across training seeds the unit of replication is the
seed, so the mean over seeds gets a bootstrap interval over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` of a proportion ``successes / n`` (95% default)."""
    if n <= 0:
        raise ValueError(f"need at least one trial, got n={n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends, no round-off
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def format_rate(successes: int, n: int) -> str:
    """``"0.713 [0.675, 0.748] (n=600)"``: a success rate with its Wilson 95% interval."""
    low, high = wilson_interval(successes, n)
    return f"{successes / n:.3f} [{low:.3f}, {high:.3f}] (n={n})"


def difference_interval(
    successes_a: int, n_a: int, successes_b: int, n_b: int, z: float = Z95
) -> tuple[float, float, float]:
    """``(difference, low, high)`` of ``successes_a / n_a - successes_b / n_b``: Newcombe's hybrid
    score interval (Newcombe 1998, method 10), built from the two Wilson intervals. It counts the
    episodes' noise only, so it suits two evaluations of one seed, not a difference over seeds."""
    p_a, p_b = successes_a / n_a, successes_b / n_b
    low_a, high_a = wilson_interval(successes_a, n_a, z)
    low_b, high_b = wilson_interval(successes_b, n_b, z)
    difference = p_a - p_b
    low = difference - math.sqrt((p_a - low_a) ** 2 + (high_b - p_b) ** 2)
    high = difference + math.sqrt((high_a - p_a) ** 2 + (p_b - low_b) ** 2)
    return difference, low, high


def bootstrap_mean_interval(
    values: Sequence[float], confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of ``values`` (one per seed) and its percentile-bootstrap
    interval over ``resamples`` resamples with replacement. One value gives ``(v, v, v)``."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no values")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(data.mean()), float(low), float(high)
