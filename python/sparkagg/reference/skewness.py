"""skewness(x) (the JVM's functions/skewness.scala): the sample skewness adjusted for the sample size,
DataFusion-extra's formula over the central moments of ``shapemoments``."""
from __future__ import annotations

import math

from .shapemoments import shape_moment_function


def skewness(n: int, m2: float, m3: float, m4: float) -> float | None:
    """sqrt(n(n-1)) / (n-2) * m3 / m2^1.5; NULL for fewer than three values and when m2 is not positive
    or NaN (DataFusion-extra's max(0) takes NaN to 0, and 0 to NULL)."""
    if n <= 2 or not m2 > 0:
        return None
    return math.sqrt(float(n) * (n - 1)) / (n - 2) * m3 / math.sqrt(m2 * m2 * m2)


SKEWNESS = shape_moment_function("skewness", False, skewness)
