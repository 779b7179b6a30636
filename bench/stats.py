"""Order statistics for timing samples (medians and nearest-rank percentiles)."""
from __future__ import annotations

import math
import statistics
from typing import Sequence


def median(xs: Sequence[float]) -> float | None:
    return statistics.median(xs) if xs else None


def percentile(xs: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile: an observed value, never an interpolation between two."""
    if not xs:
        return None
    ordered = sorted(xs)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or not theirs:
        return None
    return ours / theirs
