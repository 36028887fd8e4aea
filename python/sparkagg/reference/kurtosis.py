"""kurtosis(x) and kurtosis_pop(x) (the JVM's functions/kurtosis.scala): excess kurtosis, with and
without the sample-size correction, DataFusion-extra's formulas over the central moments of
``shapemoments``."""
from __future__ import annotations

from .shapemoments import shape_moment_function


def kurtosis(n: int, m2: float, m3: float, m4: float) -> float | None:
    """(n-1)((n+1) m4 / m2^2 - 3(n-1)) / ((n-2)(n-3)); NULL for fewer than four values or m2 <= 0."""
    if n < 4 or m2 <= 0:
        return None
    return (n - 1.0) * ((n + 1.0) * (m4 / (m2 * m2)) - 3.0 * (n - 1)) / ((n - 2.0) * (n - 3.0))


def kurtosis_pop(n: int, m2: float, m3: float, m4: float) -> float | None:
    """m4 / m2^2 - 3; NULL for no values or m2 <= 0."""
    if n < 1 or m2 <= 0:
        return None
    return m4 / (m2 * m2) - 3.0


KURTOSIS = shape_moment_function("kurtosis", True, kurtosis)
KURTOSIS_POP = shape_moment_function("kurtosis_pop", True, kurtosis_pop)
